"""The learning-curve PNG: one row of panels per setting of a task, so runs of different
settings (k-hop max_hops = 2 and 4) are never averaged into one line."""
from __future__ import annotations

import pytest

from rasp_sim.experiments.plot import plot_curves

plt = pytest.importorskip("matplotlib.pyplot")


def fake_result(max_hops: int, layers: int, variant: str, accuracy: float) -> dict:
    curves = [{"step": s, "train_loss": 1.0 / s, "test_accuracy": accuracy} for s in (1, 2)]
    return {"finished": True, "curves": curves,
            "config": {"task": "khop", "variant": variant, "task_options": {"max_hops": max_hops},
                       "sizes": {"heads": 2, "layers": layers, "head_dim": 2, "out_dim": 4}}}


@pytest.mark.parametrize("settings, rows", [([(2, 3)], 1), ([(2, 3), (4, 4)], 2)])
def test_one_row_of_panels_per_setting(tmp_path, settings, rows):
    results = [fake_result(hops, layers, variant, 0.5)
               for hops, layers in settings for variant in ("S-A", "R-A")]
    path = plot_curves(results, tmp_path / "curves.png", "khop")
    height, width = plt.imread(path).shape[:2]
    assert (height, width) == (400 * rows, 1000)  # 4 x 10 inches a row, at 100 dpi
