"""The capacity check (rasp_sim/experiments/capacity): exact k-hop and Dyck-1 targets
embedded into the frozen attention-only machines score 100% on every defined answer
without training, a damaged target does not, and `experiment --check-capacity` reports
the ceiling beside stored training results."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from rasp_sim.cli import main
from rasp_sim.experiments.budgets import plan
from rasp_sim.experiments.capacity.check import check, correct, defined_answers, installed, score
from rasp_sim.experiments.capacity.dyck import dyck_target
from rasp_sim.experiments.capacity.khop import khop_target
from rasp_sim.experiments.tasks import make_task
from rasp_sim.experiments.tasks.dyck import Dyck1
from rasp_sim.experiments.tasks.khop import KHop


def medium(task: str, variant: str, **options):
    """The medium budget's first setting for `task` (k-hop: max_hops = 2), seed 0."""
    config = plan(task, "medium", (variant,), (0,))[0]
    return replace(config, task_options={**config.task_options, **options})


def every_defined_answer(ceiling) -> bool:
    return ceiling.defined_answers["accuracy"] == 1.0 and all(
        value == 1.0 for value in ceiling.defined_answers["accuracy_by_group"].values())


@pytest.mark.parametrize("variant", ["S-A", "R-A"])
def test_khop_ceiling_at_medium_size_is_every_defined_answer(variant):
    ceiling = check(medium("khop", variant))  # the medium test set: 500 sequences
    assert ceiling.missing is None and every_defined_answer(ceiling)
    assert set(ceiling.defined_answers["accuracy_by_group"]) == {"0", "1", "2"}
    # the null answers are what is missed: every position at k = 0 (blank included)
    assert ceiling.all_answers["accuracy_by_group"]["0"] == 1.0
    assert 0.9 < ceiling.all_answers["accuracy"] < 1.0
    assert (ceiling.condition is None) == (variant == "S-A")


@pytest.mark.parametrize("variant", ["S-A", "R-A"])
def test_dyck1_ceiling_small_test_set(variant):
    ceiling = check(medium("dyck1", variant, test_size=300))
    assert ceiling.missing is None and every_defined_answer(ceiling)
    assert ceiling.all_answers["accuracy"] == 1.0


@pytest.mark.slow  # the 4,000 test strings: about 12 s (S-A) and 25 s (R-A)
@pytest.mark.parametrize("variant", ["S-A", "R-A"])
def test_dyck1_ceiling_at_medium_size_is_every_answer(variant):
    ceiling = check(medium("dyck1", variant))
    assert every_defined_answer(ceiling) and ceiling.all_answers["accuracy"] == 1.0


def test_residual_machines_and_shapes_without_a_target_say_why():
    assert "outside the exact theory" in check(medium("khop", "S-RL")).missing
    (deeper,) = [c for c in plan("khop", "medium", ("S-A",), (0,))
                 if c.task_options["max_hops"] == 4]
    assert "3 hops, not max_hops = 4" in check(deeper).missing
    (ci,) = plan("khop", "ci")
    assert "2 heads" in check(ci).missing


def khop_model(variant, task, damage=None):
    config = medium("khop", variant)
    s = config.sizes  # the budget's k-hop set-up: H = 2, L = 3, head width 4, c = 8
    views, out = khop_target(s.heads, s.layers, s.head_dim, s.out_dim, task)
    if damage is not None:
        damage(views)
    return installed(config, task, views, out)[0]


@settings(max_examples=8, deadline=None)
@given(letters=st.integers(2, 4), length=st.integers(4, 60), seed=st.integers(0, 2**32 - 1))
def test_khop_target_is_exact_on_every_defined_answer_property(letters, length, seed):
    task = KHop(seq_len=length, letters=letters, max_hops=2, test_size=1)
    batch = task.train_batch(24, np.random.default_rng(seed))
    defined = defined_answers(task, batch).weights > 0
    hits = correct(khop_model("S-A", task), batch)
    assert hits[defined].all()
    assert hits[:, 0].all()  # the blank before the first letter


@settings(max_examples=8, deadline=None)
@given(max_len=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_dyck1_target_is_exact_property(max_len, seed):
    task = Dyck1(max_len=max_len, test_size=1)
    config = medium("dyck1", "S-A")
    views, out = dyck_target(4, 2, 2, 2, task)
    model = installed(config, task, views, out)[0]
    batch = task.train_batch(64, np.random.default_rng(seed))
    all_answers, _ = score(model, task, batch)
    assert all_answers["accuracy"] == 1.0


def remove_head(layer: int, head: int):
    def damage(views):
        for views_of in (views.queries, views.keys):
            for key in [key for key in views_of if key[:2] == (layer, head)]:
                del views_of[key]
    return damage


@pytest.mark.parametrize("layer, head, broken", [(1, 1, "2"), (0, 1, "1")])
def test_a_target_without_one_head_misses_answers(layer, head, broken):
    task = make_task("khop", max_hops=2, test_size=100)
    test = task.test_set()
    _, defined = score(khop_model("S-A", task, remove_head(layer, head)), task, test)
    assert defined["accuracy_by_group"][broken] < 0.9
    _, intact = score(khop_model("S-A", task), task, test)
    assert intact["accuracy"] == 1.0


def test_cli_check_capacity_prints_the_ceiling_beside_stored_results(tmp_path, capsys):
    row = {"task": "khop", "setting": "H=2 L=3 k=4 c=8 max_hops=2", "variant": "S-A",
           "seeds": [0, 1, 2], "steps": 1600, "accuracy_mean": 0.288,
           "accuracy_by_group_mean": {"0": 0.274, "1": 0.289, "2": 0.304}}
    (tmp_path / "summary.json").write_text(json.dumps({"rows": [row]}))
    assert main(["experiment", "khop", "--budget", "medium", "--check-capacity",
                 "--backbone", "S-A", "--seeds", "0", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    (two_hops,) = [line for line in lines if "max_hops=2 | S-A" in line]
    assert "100.0% (0:100.0 1:100.0 2:100.0)" in two_hops
    assert "28.8% (0:27.4 1:28.9 2:30.4)" in two_hops
    assert any("no exact target built" in line for line in lines)
    assert not [path for path in tmp_path.iterdir() if path.name != "summary.json"]


def test_cli_check_capacity_json_without_results(tmp_path, capsys):
    assert main(["experiment", "khop", "--budget", "small", "--check-capacity", "--json",
                 "--seeds", "0", "--out", str(tmp_path / "none")]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [row["variant"] for row in rows] == ["S-A", "R-A"]
    assert all(row["trained"] is None for row in rows)
    assert not (tmp_path / "none").exists()


def test_cli_check_capacity_refuses_an_unreadable_summary(tmp_path, capsys):
    (tmp_path / "summary.json").write_text(json.dumps({"rows": 3}))
    assert main(["experiment", "khop", "--budget", "small", "--check-capacity",
                 "--out", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert "summary.json is unreadable (not a summary" in error and "Traceback" not in error
