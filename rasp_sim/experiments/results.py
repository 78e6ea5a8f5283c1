"""Result files and the comparison table (rasp-sim's numbers next to the paper's)."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..base.atomic_write import write_text
from ..base.bounded_read import UnreadableFile, read_json
from ..base.errors import OutputRefused
from .backbones import VARIANTS
from .errors import ExperimentError
from .tasks.dyck import HELD_OUT_ABOVE

if TYPE_CHECKING:
    from .config import RunConfig

RESULT = "result.json"
# A result is its settings, final accuracies by group and device (a few KiB), and one
# curve point per eval_every steps (5 numbers, about 200 bytes with write_result's
# indent): 1 MiB and 1 KiB a point are several times what a run writes.
_RESULT_BASE_BYTES = 2**20
_CURVE_POINT_BYTES = 2**10


class UnreadableResult(ExperimentError):
    """A run's result.json that --resume cannot use: refused, never trained over."""

# docs/universal.md: from descriptions of the paper, not its tables (unverified).
REPORTED = {
    ("dyck1", "S-A"): "100%",
    ("dyck1", "R-A"): "94.4%",
    # The paper's fully trained model is attention-only; rasp-sim's F is R-RLM fully trained.
    ("dyck1", "F"): "below both UTs (for an attention-only F, not R-RLM)",
    ("khop", "S-A"): "~30-40% (UTs not separated)",
    ("khop", "R-A"): "~30-40% (UTs not separated)",
    ("khop", "S-RL"): "100%",
    ("khop", "R-RL"): "85.7%-96.1%",
    ("khop", "R-RLM"): "above R-RL",
    ("khop", "F"): "~99% (for an attention-only F, not R-RLM)",
}


def write_result(directory: Path, result: dict) -> Path:
    """Write the run's result; ExperimentError naming the file if that fails (the outputs
    are checked before training, but may change during it)."""
    path = directory / RESULT
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(result, indent=1))
    except OutputRefused as error:
        raise ExperimentError(f"the run's result could not be written: {error.message}") \
            from None
    except OSError as error:
        raise ExperimentError(f"the run's result could not be written to {path}: "
                              f"{error.strerror or error}") from None
    return path


def result_bytes(config: "RunConfig") -> int:
    """The largest result.json `config`'s run writes, with room to spare (see above)."""
    points = config.steps // config.eval_every + 1  # every eval_every steps, and the last
    return _RESULT_BASE_BYTES + _CURVE_POINT_BYTES * points


def read_result(directory: Path, config: "RunConfig") -> dict | None:
    """`config`'s result in `directory`, or None if there is none. UnreadableResult if
    there is one --resume cannot use (not a regular file, larger than the run can write,
    cut short, nested too deeply, damaged or forged): training the run again would
    replace it, or fail to write over it after the training."""
    path = directory / RESULT
    if not path.exists():
        return None
    try:
        result = read_json(path, "result", result_bytes(config))
        if not isinstance(result, dict) or not isinstance(result.get("config"), dict):
            raise ValueError("not a run's result")
        if result.get("finished"):
            _check_finished(result)
    except (UnreadableFile, ValueError) as error:
        raise UnreadableResult(f"resume: {path} is unreadable ({error}); remove it to train "
                               "this run again, or run without --resume") from None
    return result


def finished_result(directory: Path, config: "RunConfig") -> dict | None:
    """The finished result of `config`'s run that --resume reuses, or None (the run is
    trained); UnreadableResult as read_result."""
    previous = read_result(directory, config)
    if previous is not None and previous.get("finished") and \
            previous["config"] == config.to_dict():
        return previous
    return None


def _check_finished(result: dict) -> None:
    """The fields summarise() and the plots read from a finished run, with their types."""
    final = result.get("final")
    if not (isinstance(final, dict) and isinstance(final.get("accuracy"), (int, float))
            and isinstance(final.get("accuracy_by_group"), dict)
            and all(isinstance(v, (int, float)) for v in final["accuracy_by_group"].values())
            and all(isinstance(result.get(k), (int, float)) for k in
                    ("majority_baseline", "m", "parameters", "trainable", "wall_time_s"))
            and isinstance(result.get("curves"), list)
            and all(isinstance(c, dict) and all(isinstance(c.get(k), (int, float)) for k in
                                                ("step", "train_loss", "test_accuracy"))
                    for c in result["curves"])
            and ("device" not in result or isinstance(result["device"], dict) and all(
                isinstance(result["device"].get(k), str) for k in ("platform", "kind")))):
        raise ValueError("a finished run's result without its numbers")


def setting_label(result: dict) -> str:
    """The run's machine shape (and k-hop's max_hops, and a length curriculum): what its
    table row and plot are of."""
    config = result["config"]
    sizes = config["sizes"]
    hops = config["task_options"].get("max_hops")
    text = f"H={sizes['heads']} L={sizes['layers']} k={sizes['head_dim']} c={sizes['out_dim']}"
    grown = "".join(f" from length {length} for {steps:,} steps"
                    for length, steps in config.get("length_curriculum", ()))
    shifted = " (shifted)" if grown and config.get("shift_short") else ""
    return text + (f" max_hops={hops}" if hops is not None else "") + grown + shifted


# Per task, the groups whose test samples never occur in training (Dyck-1: the length
# buckets above the hold-out; k-hop draws fresh random strings, so it has none to single out).
UNSEEN_GROUPS = {"dyck1": lambda group: int(group) > HELD_OUT_ABOVE}


def unseen_accuracy(result: dict) -> float | None:
    """Accuracy on the test samples held out of training (pooled over their groups), or
    None where the task has no such groups or the result has no group sizes."""
    unseen = UNSEEN_GROUPS.get(result["config"]["task"])
    final = result["final"]
    if unseen is None or "group_sizes" not in final:
        return None
    groups = [g for g in final["accuracy_by_group"] if unseen(g)]
    hits = sum(final["accuracy_by_group"][g] * final["group_sizes"][g] for g in groups)
    total = sum(final["group_sizes"][g] for g in groups)
    return hits / total if total else None


def summarise(results: list[dict]) -> list[dict]:
    """One row per (task, setting, variant): accuracy mean and std over seeds."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for result in results:
        if result.get("finished"):
            config = result["config"]
            groups[(config["task"], setting_label(result), config["variant"])].append(result)
    rows = []
    order = {v: i for i, v in enumerate(VARIANTS)}
    for (task, setting, variant), runs in sorted(groups.items(),
                                                 key=lambda item: (item[0][0], item[0][1],
                                                                   order[item[0][2]])):
        accuracy = np.array([r["final"]["accuracy"] for r in runs])
        unseen = [unseen_accuracy(r) for r in runs]
        by_group: dict[str, list[float]] = defaultdict(list)
        for run in runs:
            for group, value in run["final"]["accuracy_by_group"].items():
                by_group[group].append(value)
        rows.append({
            "task": task, "setting": setting, "variant": variant,
            "seeds": [r["config"]["seed"] for r in runs],
            "accuracy_mean": float(accuracy.mean()),
            # One seed has no spread to report (not a spread of 0).
            "accuracy_std": float(accuracy.std(ddof=1)) if len(runs) > 1 else None,
            "accuracy_by_group_mean": {g: float(np.mean(v)) for g, v in sorted(
                by_group.items(), key=lambda item: int(item[0]))},
            "accuracy_unseen_mean": (None if any(u is None for u in unseen)
                                     else float(np.mean([u for u in unseen if u is not None]))),
            "majority_baseline": runs[0]["majority_baseline"],
            "m": runs[0]["m"], "parameters": runs[0]["parameters"],
            "trainable": runs[0]["trainable"],
            "steps": runs[0]["config"]["steps"],
            "wall_time_s_mean": float(np.mean([r["wall_time_s"] for r in runs])),
            # Results written before runs recorded their device have none.
            "devices": sorted({f"{r['device']['platform']} ({r['device']['kind']})"
                               for r in runs if "device" in r}),
            "reported": REPORTED.get((task, variant), "-"),
            "curve": mean_curve(runs),
        })
    return rows


def mean_curve(runs: list[dict]) -> dict[str, list | None]:
    """The runs' learning curves over their common steps: `step`, and per measure its
    mean and its std over seeds (None for one seed: no spread to show), so the figure can
    be drawn again from summary.json alone."""
    length = min(len(run["curves"]) for run in runs)
    curve: dict[str, list | None] = {"step": [c["step"] for c in runs[0]["curves"][:length]]}
    for key in ("train_loss", "test_accuracy"):
        values = np.array([[c[key] for c in run["curves"][:length]] for run in runs], dtype=float)
        curve[f"{key}_mean"] = values.mean(axis=0).tolist()
        curve[f"{key}_std"] = values.std(axis=0, ddof=1).tolist() if len(runs) > 1 else None
    return curve


def markdown_table(rows: list[dict]) -> str:
    lines = ["| task | setting | backbone | accuracy (mean ± std) | seeds | by group (mean) | "
             "unseen strings (Dyck-1: length > 10) | majority | m | trainable / total params | time/run | "
             "paper (reported, unverified) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        by_group = row["accuracy_by_group_mean"]
        # k-hop: by hop count k; Dyck-1: by string length, "<=10" for lengths 1-10
        prefix = "<=" if row["task"] == "dyck1" else ""
        groups = " ".join(f"{prefix}{g}:{100 * v:.0f}" for g, v in by_group.items()) or "-"
        spread = "" if row["accuracy_std"] is None else f" ± {100 * row['accuracy_std']:.1f}"
        unseen = "-" if row["accuracy_unseen_mean"] is None else \
            f"{100 * row['accuracy_unseen_mean']:.1f}%"
        lines.append(
            f"| {row['task']} | {row['setting']} | {row['variant']} | "
            f"{100 * row['accuracy_mean']:.1f}{spread}% | "
            f"{len(row['seeds'])} | {groups} | {unseen} | {100 * row['majority_baseline']:.1f}% | "
            f"{row['m']} | {row['trainable']:,} / {row['parameters']:,} | "
            f"{row['wall_time_s_mean']:.0f} s | {row['reported']} |")
    return "\n".join(lines) + "\n"
