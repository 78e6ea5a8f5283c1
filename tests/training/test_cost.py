"""The dry run's cost model: FLOPs counted from the shapes, time from a measured rate."""
from __future__ import annotations

import pytest

from rasp_sim.experiments import cost
from rasp_sim.experiments.backbones import Sizes
from rasp_sim.experiments.budgets import plan
from rasp_sim.experiments.config import RunConfig


def test_forward_flops_count_every_product_by_hand():
    # H=1, L=2, k=2, c=4: m = 2*1*2*2 + 4 = 12; n = 5, vocab 4 (Dyck-1). Per head and
    # sequence: scores 2*5*5*2 and the weighted sum 2*5*5*12; q, k and v 2*(2*12*2) + 2*12*12
    # per row, in layer 0 once per (token, position) pair (4 * 5 rows, the whole batch).
    config = RunConfig("dyck1", "S-A", Sizes(1, 2, 2, 4))
    n, m, k, vocab = 5, 12, 2, 4
    attend = 2 * n * n * k + 2 * n * n * m
    maps = 2 * 2 * m * k + 2 * m * m
    assert cost.forward_flops(config, n, vocab) == 2 * attend + n * maps + 2 * n * m * vocab
    assert cost.table_flops(config, n, vocab) == vocab * n * maps
    # At the answer only, layer 1 takes every key, one query, one row of scores, weighted
    # sum and values, and the read-out one row.
    answer = 2 * n * m * k + 2 * m * k + 2 * n * k + 2 * n * m + 2 * m * m
    assert cost.forward_flops(config, n, vocab, True) == attend + answer + 2 * m * vocab
    assert cost.table_flops(config, n, vocab, True) == vocab * n * maps
    one_layer = RunConfig("dyck1", "R-RLM", Sizes(1, 1, 2, 4))  # m = 8, the MLP 4m wide
    m = 8
    answer = 2 * n * m * k + 2 * m * k + 2 * n * k + 2 * n * m + 2 * m * m
    assert cost.forward_flops(one_layer, n, vocab, True) == answer + 2 * 2 * m * 4 * m \
        + 2 * m * vocab
    assert cost.table_flops(one_layer, n, vocab, True) == 0


def test_step_flops_count_the_backward_pass_and_the_batch():
    frozen = RunConfig("dyck1", "S-A", Sizes(1, 1, 2, 4), batch=3)
    trained = RunConfig("dyck1", "F", Sizes(1, 1, 2, 4), batch=3)
    for config, passes in ((frozen, 2), (trained, 3)):
        assert cost.step_flops(config, 5, 4) == passes * (
            3 * cost.forward_flops(config, 5, 4) + cost.table_flops(config, 5, 4))


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
    assert s_a.run_seconds == pytest.approx(s_a.flops_per_step / 1e9 * 4000)
    text = cost.describe(estimates)
    assert "| dyck1 H=4 L=2 k=2 c=2 | S-A | 3 | 4,000 | 32 |" in text
    total = sum(e.run_seconds * e.runs for e in estimates) / 3600
    assert f"estimated: {total:.1f} CPU hours for 6 runs" in text
