"""PNG plots of the training curves (matplotlib, Agg backend, imported lazily)."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from ..atomic_write import replacing
from .errors import ExperimentError
from .results import setting_label


def plot_curves(results: list[dict], path: Path, title: str) -> Path:
    """Train loss and test accuracy against step, one line per backbone (mean over seeds),
    one row of the two per setting (k-hop's max_hops = 2 and 4 are different machines and
    data: never averaged together)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ExperimentError("plot: matplotlib is not installed; install the train extra "
                              "(pip install 'rasp-sim[train]')") from None
    lines: dict[str, dict[str, list[list[dict]]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        if result.get("finished") and result["curves"]:
            lines[setting_label(result)][result["config"]["variant"]].append(result["curves"])
    figure, axes = plt.subplots(len(lines), 2, figsize=(10, 4 * len(lines)), squeeze=False)
    for (left, right), (label, variants) in zip(axes, sorted(lines.items())):
        for variant, curves in variants.items():
            steps = [c["step"] for c in curves[0]]
            for axis, key in ((left, "train_loss"), (right, "test_accuracy")):
                values = np.mean([[c[key] for c in run[:len(steps)]] for run in curves], axis=0)
                axis.plot(steps, values, label=variant)
        left.set(xlabel="step", ylabel="train loss", title=f"{title}: {label}")
        right.set(xlabel="step", ylabel="test accuracy", ylim=(0, 1))
        right.legend(fontsize="small")
    figure.tight_layout()
    with replacing(path) as handle:
        figure.savefig(handle, dpi=100, format="png")
    plt.close(figure)
    return path
