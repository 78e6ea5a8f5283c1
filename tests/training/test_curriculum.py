"""The sequence-length curriculum (experiments/curriculum.py): which length each step
trains at, its checks, its records, and resuming across a change of length."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("jax")

from rasp_sim.experiments.backbones import Sizes  # noqa: E402
from rasp_sim.experiments.budgets import with_steps  # noqa: E402
from rasp_sim.experiments.config import RunConfig  # noqa: E402
from rasp_sim.experiments.cost import mean_step_flops, step_flops  # noqa: E402
from rasp_sim.experiments.curriculum import first_position, phase_tasks, task_at  # noqa: E402
from rasp_sim.experiments.errors import ExperimentError  # noqa: E402
from rasp_sim.experiments.tasks import make_task  # noqa: E402
from rasp_sim.experiments.train import Trainer  # noqa: E402

# seq_len 12 (inputs of 11 ids), the first 3 steps at 6 (inputs of 5). No weight decay:
# AdamW's decay would move the position rows that get no gradient too.
RUN = RunConfig("khop", "S-RL", Sizes(1, 2, 2, 4), seed=0, steps=6, batch=4, warmup=1,
                weight_decay=0.0, eval_every=3, length_curriculum=((6, 3),),
                task_options={"max_hops": 1, "test_size": 8, "seq_len": 12})


def test_each_step_draws_from_its_phase():
    task = make_task(RUN.task, **RUN.task_options)
    phases = phase_tasks(RUN, task)
    assert [end for end, _ in phases] == [3, 6] and phases[-1][1] is task
    assert [task_at(phases, step).seq_len for step in range(6)] == [5, 5, 5, 11, 11, 11]
    assert phase_tasks(replace(RUN, length_curriculum=()), task) == [(6, task)]


@pytest.mark.parametrize("phases, message", [
    (((12, 3),), "in 3..11 (the task's seq_len is 12), got 12"),
    (((2, 3),), "got 2"),
    (((6, 0),), "positive integer, got 0 at length 6"),
    (((6, 3), (8, 3)), "take 6 of the run's 6 steps"),
])
def test_a_curriculum_outside_the_run_is_refused(phases, message):
    with pytest.raises(ExperimentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Trainer(replace(RUN, length_curriculum=phases))


def test_only_k_hop_has_a_length_to_grow():
    dyck = RunConfig("dyck1", "S-A", Sizes(1, 2, 2, 4), steps=6,
                     length_curriculum=((6, 3),), task_options={"test_size": 8})
    with pytest.raises(ExperimentError, match="the dyck1 task has no sequence length"):
        Trainer(dyck)


def test_the_record_names_the_curriculum_and_omits_it_when_there_is_none():
    data = json.loads(json.dumps(RUN.to_dict()))
    # what a record reads back equals the run's own: --resume reuses it (results.py)
    assert data == RUN.to_dict() and data["length_curriculum"] == [[6, 3]]
    assert RunConfig.from_dict(data) == RUN
    plain = replace(RUN, length_curriculum=())
    # records written before the curriculum existed have no such key, and still match
    assert "length_curriculum" not in plain.to_dict()
    assert RunConfig.from_dict(plain.to_dict()) == plain
    assert "-len6x3-" in RUN.name() and "-len" not in plain.name()


def test_the_cost_counts_the_short_phase_at_its_length():
    task = make_task(RUN.task, **RUN.task_options)
    full, short = (step_flops(RUN, n, task.vocab_size) for n in (11, 5))
    assert mean_step_flops(RUN, task) == pytest.approx((3 * short + 3 * full) / 6)
    assert short < full


def test_the_short_phase_trains_only_the_rows_it_reaches():
    trainer = Trainer(RUN, "cpu")
    start = np.asarray(trainer.params["pos_embed"])
    trainer.run(progress=False, stop_after=3)
    short = np.asarray(trainer.params["pos_embed"])
    assert not np.array_equal(short[:5], start[:5])
    assert np.array_equal(short[5:], start[5:])  # no gradient reached rows 5..10 yet
    result = trainer.run(progress=False)
    assert result["finished"] and result["test_size"] == 8  # tested at the full length
    assert not np.array_equal(np.asarray(trainer.params["pos_embed"])[5:], start[5:])


@pytest.mark.slow
def test_a_run_resumed_across_the_change_of_length_is_bit_for_bit(tmp_path):
    straight = Trainer(RUN, "cpu")
    straight.run(progress=False)
    Trainer(RUN, "cpu").run(out_dir=tmp_path, progress=False, stop_after=2)
    resumed = Trainer(RUN, "cpu")
    resumed.load_checkpoint(tmp_path)
    resumed.run(out_dir=tmp_path, progress=False)
    for name in straight.params:
        assert np.array_equal(np.asarray(straight.params[name]),
                              np.asarray(resumed.params[name]))
    assert resumed.curves == straight.curves


def test_steps_from_the_command_line_keep_each_phase_s_share():
    (longer,) = with_steps([RUN], 60)
    assert longer.length_curriculum == ((6, 30),)
    (shorter,) = with_steps([replace(RUN, steps=8000, length_curriculum=((30, 3000),))], 100)
    assert shorter.length_curriculum == ((30, 38),)


def test_shifted_short_batches_train_the_rows_they_sit_on(monkeypatch):
    from rasp_sim.experiments import train as train_module
    starts = []

    def recorded(*args):
        starts.append(first_position(*args))
        return starts[-1]

    monkeypatch.setattr(train_module, "first_position", recorded)
    trainer = Trainer(replace(RUN, shift_short=True), "cpu")
    start = np.asarray(trainer.params["pos_embed"])
    trainer.run(progress=False, stop_after=3)
    assert len(starts) == 3 and all(0 <= s <= 11 - 5 for s in starts) and any(starts)
    reached = {row for s in starts for row in range(s, s + 5)}
    moved = {row for row in range(11)
             if not np.array_equal(np.asarray(trainer.params["pos_embed"])[row], start[row])}
    assert moved == reached
    trainer.run(progress=False)
    assert starts[3:] == [0, 0, 0]  # the task's own length starts at row 0


def test_shifting_needs_a_short_phase():
    with pytest.raises(ExperimentError, match="no shorter phase to shift"):
        Trainer(replace(RUN, length_curriculum=(), shift_short=True))
    shifted = replace(RUN, shift_short=True)
    assert shifted.name().endswith("-len6x3-shifted-S-RL-seed0")
    assert RunConfig.from_dict(json.loads(json.dumps(shifted.to_dict()))) == shifted
