"""PNG figures of the training curves (matplotlib's object API on the Agg canvas).

One row of two panels per setting (train loss, test accuracy against step; k-hop's
max_hops = 2 and 4 are different machines and data: never averaged together). Each
backbone has one colour in every figure (its place in `backbones.VARIANTS`, tab10), its
line is the mean over seeds with a ± std band where there are several seeds; the
accuracy panel also shows the majority baseline (grey, dashed) and the paper's reported
figure where it is a number or a range (the backbone's colour, dotted, or a light band).
Legends sit outside the axes, so they never cover a curve. 200 dpi.

The figure is drawn from the summary rows (`results.summarise`, summary.json), which
carry each backbone's mean curve: `python -m rasp_sim.experiments.plot SUMMARY.json`
draws it again without retraining.
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from ..base.atomic_write import replacing
from ..base.bounded_read import UnreadableFile, read_json
from .backbones import VARIANTS
from .errors import ExperimentError
from .outputs import curves_path
from .results import summarise

DPI = 200
# summary.json: a row per task, setting and backbone (the paper budget has a few dozen),
# each with its mean curve, a few numbers per curve point; 64 MiB holds rows of curves of
# tens of thousands of points, and a forged or sparse file is refused before it is read.
MAX_SUMMARY_BYTES = 64 * 2**20
COLOURS = {variant: f"C{i}" for i, variant in enumerate(VARIANTS)}
_PERCENT = r"(\d+(?:\.\d+)?)%"


def reported_range(text: str) -> tuple[float, float] | None:
    """The paper's figure as a fraction, (low, high); None when it is not a number
    (`~30-40% (UTs not separated)`, `above R-RL`)."""
    single = re.fullmatch(_PERCENT, text)
    if single:
        return float(single[1]) / 100, float(single[1]) / 100
    span = re.fullmatch(_PERCENT + "-" + _PERCENT, text)
    return (float(span[1]) / 100, float(span[2]) / 100) if span else None


def plot_curves(results: list[dict], path: Path, title: str) -> Path:
    """The figure of the finished runs among `results` (see the module docstring)."""
    return plot_rows(summarise([r for r in results if r.get("finished") and r["curves"]]),
                     path, title)


def plot_rows(rows: list[dict], path: Path, title: str) -> Path:
    """Write the figure of summary rows that carry a `curve` (summary.json's rows)."""
    figure = curves_figure(rows, title)
    with replacing(path) as handle:
        figure.savefig(handle, dpi=DPI, format="png")
    return path


def curves_figure(rows: list[dict], title: str) -> Any:
    """The matplotlib figure of `plot_rows`."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ExperimentError("plot: matplotlib is not installed; install the train extra "
                              "(pip install 'rasp-sim[train]')") from None
    settings: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("curve"):
            settings[row["setting"]].append(row)
    if not settings:
        raise ExperimentError(f"plot: no learning curves to draw for {title} (summaries "
                              "written before summary.json kept the curves have none)")
    figure = Figure(figsize=(12, 4 * len(settings)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(settings), 2, squeeze=False)
    for (left, right), (label, group) in zip(axes, sorted(settings.items())):
        for row in group:
            _curve(left, row, "train_loss")
            _curve(right, row, "test_accuracy")
            paper = reported_range(row.get("reported", "-"))
            if paper is not None and paper[0] == paper[1]:
                right.axhline(paper[0], color=COLOURS[row["variant"]], linestyle=":",
                              linewidth=1.2, label=f"{row['variant']}, paper")
            elif paper is not None:
                right.axhspan(*paper, color=COLOURS[row["variant"]], alpha=0.12,
                              label=f"{row['variant']}, paper (range)")
        right.axhline(group[0]["majority_baseline"], color="grey", linestyle="--",
                      linewidth=1, label="majority baseline")
        left.set(xlabel="step", ylabel="train loss")
        # from the left edge, across both panels: a long setting (a curriculum's) fits
        left.set_title(f"{title}: {label}", loc="left")
        right.set(xlabel="step", ylabel="test accuracy", ylim=(0, 1.02))
        right.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     frameon=False)
    return figure


def _curve(axes: Any, row: dict, key: str) -> None:
    curve = row["curve"]
    steps, mean = np.array(curve["step"]), np.array(curve[f"{key}_mean"])
    colour = COLOURS[row["variant"]]
    seeds = len(row.get("seeds", []))
    axes.plot(steps, mean, color=colour, label=f"{row['variant']} ({seeds} seed"
              f"{'s' if seeds != 1 else ''}{', ± std' if curve[f'{key}_std'] else ''})")
    if curve[f"{key}_std"]:
        std = np.array(curve[f"{key}_std"])
        axes.fill_between(steps, mean - std, mean + std, color=colour, alpha=0.2, linewidth=0)


def main(argv: list[str]) -> int:
    """`python -m rasp_sim.experiments.plot SUMMARY.json`: the curves-TASK.png figures
    again, next to the summary, from its rows."""
    if len(argv) != 1:
        print("usage: python -m rasp_sim.experiments.plot SUMMARY.json", file=sys.stderr)
        return 2
    summary = Path(argv[0])
    try:
        rows = summary_rows(summary)
    except UnreadableFile as error:
        print(f"plot: {summary} is unreadable ({error})", file=sys.stderr)
        return 1
    for task in sorted({row["task"] for row in rows}):
        path = plot_rows([r for r in rows if r["task"] == task],
                         curves_path(summary.parent, task), task)
        print(f"wrote {path}")
    return 0


def summary_rows(path: Path) -> list[dict]:
    """The rows of the summary.json at `path`; UnreadableFile if it is not a regular file,
    too large, too deeply nested or not a summary."""
    summary = read_json(path, "summary", MAX_SUMMARY_BYTES)
    rows = summary.get("rows") if isinstance(summary, dict) else None
    if not (isinstance(rows, list) and all(
            isinstance(row, dict) and isinstance(row.get("task"), str) for row in rows)):
        raise UnreadableFile("not a summary: no list of rows, each naming its task")
    return rows


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
