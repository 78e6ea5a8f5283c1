"""PNG plots of the training curves (matplotlib, Agg backend, imported lazily)."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from .errors import ExperimentError


def plot_curves(results: list[dict], path: Path, title: str) -> Path:
    """Train loss and test accuracy against step, one line per backbone (mean over seeds)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ExperimentError("plot: matplotlib is not installed; install the train extra "
                              "(pip install 'rasp-sim[train]')") from None
    lines: dict[str, list[list[dict]]] = defaultdict(list)
    for result in results:
        if result.get("finished") and result["curves"]:
            lines[result["config"]["variant"]].append(result["curves"])
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for variant, curves in lines.items():
        steps = [c["step"] for c in curves[0]]
        for axis, key in ((left, "train_loss"), (right, "test_accuracy")):
            values = np.mean([[c[key] for c in run[:len(steps)]] for run in curves], axis=0)
            axis.plot(steps, values, label=variant)
    left.set(xlabel="step", ylabel="train loss", title=title)
    right.set(xlabel="step", ylabel="test accuracy", ylim=(0, 1))
    right.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
