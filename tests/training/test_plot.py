"""The learning-curve figure: one row of panels per setting of a task (runs of different
settings, k-hop max_hops = 2 and 4, are never averaged into one line), ± std bands, the
majority baseline and the paper's figure, one colour per backbone in every figure, and
legends that cover no axes."""
from __future__ import annotations

import json

import pytest

from rasp_sim.experiments.plot import COLOURS, DPI, curves_figure, main, plot_curves, reported_range
from rasp_sim.experiments.results import summarise

plt = pytest.importorskip("matplotlib.pyplot")


def fake_result(max_hops: int, layers: int, variant: str, accuracy: float, seed: int = 0) -> dict:
    curves = [{"step": s, "train_loss": 1.0 / s + seed, "test_accuracy": accuracy - seed / 10}
              for s in (1, 2)]
    return {"finished": True, "curves": curves, "majority_baseline": 0.3, "m": 8,
            "parameters": 100, "trainable": 10, "wall_time_s": 1.0,
            "final": {"accuracy": accuracy, "accuracy_by_group": {"1": accuracy}},
            "config": {"task": "khop", "variant": variant, "seed": seed, "steps": 2,
                       "task_options": {"max_hops": max_hops},
                       "sizes": {"heads": 2, "layers": layers, "head_dim": 2, "out_dim": 4}}}


@pytest.mark.parametrize("settings, rows", [([(2, 3)], 1), ([(2, 3), (4, 4)], 2)])
def test_one_row_of_panels_per_setting(tmp_path, settings, rows):
    results = [fake_result(hops, layers, variant, 0.5)
               for hops, layers in settings for variant in ("S-A", "R-A")]
    path = plot_curves(results, tmp_path / "curves.png", "khop")
    height, width = plt.imread(path).shape[:2]
    assert (height, width) == (4 * rows * DPI, 12 * DPI)  # 4 x 12 inches a row


def _lines(figure) -> dict[str, str]:
    return {line.get_label().split(" ")[0]: line.get_color()
            for axes in figure.axes for line in axes.get_lines()
            if line.get_label().split(" ")[0] in COLOURS}


def test_a_backbone_keeps_its_colour_in_every_figure():
    one = curves_figure(summarise([fake_result(2, 3, v, 0.5) for v in ("S-A", "R-A")]), "k")
    two = curves_figure(summarise([fake_result(2, 3, v, 0.5) for v in ("R-A", "F")]), "k")
    assert _lines(one)["R-A"] == _lines(two)["R-A"] == COLOURS["R-A"]
    assert len(set(COLOURS.values())) == len(COLOURS)


def test_bands_baseline_and_paper_lines_and_legends_beside_the_axes():
    results = [fake_result(2, 3, "R-RL", 0.9, seed) for seed in (0, 1)]
    results += [fake_result(2, 3, "S-RL", 0.8)]
    figure = curves_figure(summarise(results), "khop")
    accuracy = figure.axes[1]
    labels = [line.get_label() for line in accuracy.get_lines()]
    assert "R-RL (2 seeds, ± std)" in labels and "S-RL (1 seed)" in labels
    assert len(accuracy.collections) == 1  # one std band: S-RL has a single seed
    assert "majority baseline" in labels and "S-RL, paper" in labels  # S-RL: 100%
    assert any(p.get_label() == "R-RL, paper (range)" for p in accuracy.patches)  # 85.7-96.1%
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for axes in figure.axes:
        legend = axes.get_legend()
        if legend is not None:
            assert not legend.get_window_extent(renderer).overlaps(
                axes.get_window_extent(renderer))


def test_paper_figures_are_read_only_where_they_are_numbers():
    assert reported_range("94.4%") == pytest.approx((0.944, 0.944))
    assert reported_range("85.7%-96.1%") == pytest.approx((0.857, 0.961))
    assert reported_range("~30-40% (UTs not separated)") is None
    assert reported_range("-") is None


def test_the_figure_is_drawn_again_from_summary_json(tmp_path, capsys):
    rows = summarise([fake_result(2, 3, v, 0.5) for v in ("S-A", "R-A")])
    (tmp_path / "summary.json").write_text(json.dumps({"rows": rows}))
    assert main([str(tmp_path / "summary.json")]) == 0
    assert (tmp_path / "curves-khop.png").exists()
    assert capsys.readouterr().out == f"wrote {tmp_path / 'curves-khop.png'}\n"
