"""The dry run's cost model: FLOPs counted from the shapes, time from a measured rate."""
from __future__ import annotations

import pytest

from rasp_sim.experiments import cost
from rasp_sim.experiments.backbones import Sizes
from rasp_sim.experiments.budgets import plan
from rasp_sim.experiments.config import RunConfig


def test_forward_flops_count_every_product_by_hand():
    # H=1, L=1, k=2, c=4: m = 2*1*2*1 + 4 = 8. Per token of a sequence of n = 5: q and k
    # 2 * (2*8*2), v 2*8*8, scores 2*5*2 and the weighted sum 2*5*8 per query token; the
    # read-out 2*8*vocab (vocab 4 for Dyck-1).
    config = RunConfig("dyck1", "S-A", Sizes(1, 1, 2, 4))
    n, m = 5, 8
    head = 2 * 2 * n * m * 2 + 2 * n * m * m + 2 * n * n * 2 + 2 * n * n * m
    assert cost.forward_flops(config, n, 4) == head + 2 * n * m * 4
    with_mlp = RunConfig("dyck1", "R-RLM", Sizes(1, 1, 2, 4))
    assert cost.forward_flops(with_mlp, n, 4) == head + 2 * 2 * n * m * 4 * m + 2 * n * m * 4


def test_step_flops_count_the_backward_pass_and_the_batch():
    frozen = RunConfig("dyck1", "S-A", Sizes(1, 1, 2, 4), batch=3)
    trained = RunConfig("dyck1", "F", Sizes(1, 1, 2, 4), batch=3)
    assert cost.step_flops(frozen, 5, 4) == 2 * 3 * cost.forward_flops(frozen, 5, 4)
    assert cost.step_flops(trained, 5, 4) == 3 * 3 * cost.forward_flops(trained, 5, 4)


def test_one_rate_per_setting_measured_on_its_costliest_backbone(monkeypatch):
    measured = []

    def fake_rate(config, device_name=None):
        measured.append(config.variant)
        return 1e9

    monkeypatch.setattr(cost, "measure_rate", fake_rate)
    configs = plan("dyck1", "medium", ("S-A", "R-RLM"))  # one setting, 3 seeds each
    estimates = cost.estimate(configs)
    assert measured == ["R-RLM"]
    assert [(e.config.variant, e.runs) for e in estimates] == [("S-A", 3), ("R-RLM", 3)]
    s_a = estimates[0]
    assert s_a.run_seconds == pytest.approx(s_a.flops_per_step / 1e9 * 2000)
    text = cost.describe(estimates)
    assert "| dyck1 H=4 L=2 k=2 c=2 | S-A | 3 | 2,000 | 32 |" in text
    total = sum(e.run_seconds * e.runs for e in estimates) / 3600
    assert f"estimated: {total:.1f} CPU hours for 6 runs" in text
