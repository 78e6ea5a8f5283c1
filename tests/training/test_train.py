"""Training: frozen weights stay frozen, runs are deterministic and resumable, failures
are clear. Tiny sizes so the whole file runs in seconds."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("optax")

import jax  # noqa: E402

from rasp_sim.compiler import forward  # noqa: E402
from rasp_sim.experiments.backbones import Sizes, named_arrays  # noqa: E402
from rasp_sim.experiments.checkpoints import (UnreadableCheckpoint,  # noqa: E402
                                              check_checkpoint)
from rasp_sim.experiments.config import RunConfig  # noqa: E402
from rasp_sim.experiments.errors import ExperimentError  # noqa: E402
from rasp_sim.experiments.train import Trainer, logits_fn, train  # noqa: E402
from rasp_sim.compiler.weights import SparseMatrix  # noqa: E402

SIZES = Sizes(heads=2, layers=2, head_dim=2, out_dim=4)


def config(variant: str = "S-RL", **changes) -> RunConfig:
    base = RunConfig(task="dyck1", variant=variant, sizes=SIZES, seed=1, steps=6, batch=8,
                     warmup=2, eval_every=3, task_options={"test_size": 40})
    return replace(base, **changes)


def same(a, b) -> bool:
    if isinstance(a, SparseMatrix):
        return (np.array_equal(a.rows, b.rows) and np.array_equal(a.cols, b.cols)
                and np.array_equal(a.values, b.values))
    return np.array_equal(a, b)


# One variant by default; the others (and the JAX-compiling checks below) take 8-35 s
# each on a 2-core machine, so they run in the slow suite.
@pytest.mark.parametrize("variant", ["S-A", *(pytest.param(v, marks=pytest.mark.slow)
                                              for v in ("R-RL", "S-RLM", "F"))])
def test_only_the_trainable_arrays_change(variant):
    trainer = Trainer(config(variant))
    before = named_arrays(trainer.backbone.model)
    trainer.run(progress=False)
    after = named_arrays(trainer.trained_model())
    assert before.keys() == after.keys()
    for name in before:
        if name in trainer.backbone.trainable:
            assert not same(before[name], after[name]), f"{name} did not train"
        else:
            assert same(before[name], after[name]), f"frozen {name} changed"


def test_the_embeddings_start_at_the_runs_embed_std_and_the_unembedding_at_0_02():
    def deviation_over_expected(params, names, expected):
        entries = np.concatenate([np.ravel(params[name]) for name in names])
        assert entries.size > 150
        return entries.std() / expected
    for std in (0.02, 1.5):
        params = Trainer(config(embed_std=std), "cpu").params
        # over n draws of N(0, s^2) the sample deviation's standard error is s / sqrt(2n):
        # under 2% of s for the > 1,000 embedding entries, under 6% for the > 150 of the
        # unembedding, so 20% is more than 3 of them either way
        assert abs(deviation_over_expected(params, ("token_embed", "pos_embed"), std) - 1) < 0.2
        assert abs(deviation_over_expected(params, ("unembed",), 0.02) - 1) < 0.2


@pytest.mark.slow
def test_jax_logits_are_the_numpy_forward_pass():
    trainer = Trainer(config("R-RLM"))
    ids = trainer.test.inputs[:4]
    jax_out = np.asarray(logits_fn(trainer.backbone)(trainer.params, ids))
    numpy_out = forward.forward(trainer.backbone.model, ids)
    # float32 (JAX) against float64 (NumPy) through 4 blocks of width 40: ~1e-6 relative.
    assert np.allclose(jax_out, numpy_out, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_runs_are_deterministic():
    a, b = train(config(), progress=False), train(config(), progress=False)
    assert a["curves"] == b["curves"] and a["final"] == b["final"]
    c = train(config(seed=2), progress=False)
    assert c["curves"] != a["curves"]


def test_result_records_what_the_issue_asks_for():
    trainer = Trainer(config(), "cpu")
    result = trainer.run(progress=False)
    assert result["finished"] and result["step"] == 6 and result["m"] == 40
    assert [c["step"] for c in result["curves"]] == [3, 6]
    assert result["trainable"] == (4 + 63 + 4) * 40 < result["parameters"]
    assert 0 <= result["final"]["accuracy"] <= 1 and result["wall_time_s"] > 0
    assert result["config"]["variant"] == "S-RL"
    # Group sizes count the test samples per length bucket (one answer per Dyck-1 row).
    test = trainer.task.test_set()
    assert result["final"]["group_sizes"] == {
        str(g): float(np.sum(test.groups == g)) for g in np.unique(test.groups)}
    assert set(result["curves"][0]) == {"step", "train_loss", "train_accuracy", "test_loss",
                                        "test_accuracy"}
    # --device cpu: everything trained lives on the CPU, and the result says where it ran.
    cpu = jax.devices("cpu")[0]
    assert result["device"] == {"platform": "cpu", "kind": cpu.device_kind}
    assert all(leaf.devices() == {cpu} for leaf in jax.tree_util.tree_leaves(
        (trainer.params, trainer.opt_state)))


@pytest.mark.slow
def test_interrupted_run_resumes_bit_for_bit(tmp_path):
    straight = Trainer(config(steps=8))
    straight.run(progress=False)
    partial = train(config(steps=8), out_dir=tmp_path, progress=False, stop_after=3)
    assert partial == {"config": config(steps=8).to_dict(), "finished": False, "step": 3}
    resumed = Trainer(config(steps=8))
    resumed.load_checkpoint(tmp_path)
    assert resumed.step == 3
    resumed.run(out_dir=tmp_path, progress=False)
    for name in straight.params:
        assert np.array_equal(np.asarray(straight.params[name]), np.asarray(resumed.params[name]))
    assert resumed.curves == straight.curves


def test_resume_refuses_missing_or_foreign_checkpoints(tmp_path):
    with pytest.raises(ExperimentError, match="no checkpoint .*checkpoint.npz; this run cannot "
                                              "be resumed"):
        train(config(), out_dir=tmp_path, resume=True, progress=False)
    train(config(), out_dir=tmp_path, progress=False, stop_after=2)
    with pytest.raises(ExperimentError, match=r"different run \(settings differ: lr\)"):
        train(config(lr=0.5), out_dir=tmp_path, resume=True, progress=False)


def test_non_finite_loss_stops_with_the_step_and_cause():
    # lr 1e38: after clipping Adam still moves every weight by ~lr, so float32 logits overflow.
    with pytest.raises(ExperimentError, match=r"step 2: non-finite training loss \(nan\); .* "
                                              r"Lower the learning rate \(lr = 1e\+38\)"):
        train(config(lr=1e38, warmup=0), progress=False)


def test_unknown_schedule_is_a_clear_error():
    with pytest.raises(ExperimentError, match="unknown schedule 'step'; known: cosine, linear"):
        Trainer(config(schedule="step"))


def test_keyboard_interrupt_writes_a_checkpoint_and_says_how_to_resume(tmp_path, monkeypatch):
    trainer = Trainer(config(steps=8))
    real = trainer.task.train_batch

    def interrupted(size, rng):
        if trainer.step == 4:
            raise KeyboardInterrupt
        return real(size, rng)

    monkeypatch.setattr(trainer.task, "train_batch", interrupted)
    with pytest.raises(ExperimentError, match=r"interrupted at step 4; checkpoint written to "
                                              r".*checkpoint.npz; continue with --resume"):
        trainer.run(out_dir=tmp_path, progress=False)
    resumed = train(config(steps=8), out_dir=tmp_path, resume=True, progress=False)
    assert resumed["finished"] and resumed["step"] == 8
    with pytest.raises(ExperimentError, match="no output directory, so no checkpoint: this run "
                                              "cannot be resumed"):
        fresh = Trainer(config(steps=8))
        monkeypatch.setattr(fresh.task, "train_batch",
                            lambda size, rng: (_ for _ in ()).throw(KeyboardInterrupt))
        fresh.run(progress=False)


def test_ctrl_c_in_a_sweep_stops_between_steps_and_resumes_bit_for_bit(tmp_path, monkeypatch):
    """SIGINT during a sweep (here sent by the run to itself at step 4) is not raised inside
    JAX: the run stops after the step, writes its checkpoint, the sweep starts no further
    run, and --resume ends where an uninterrupted run ends."""
    import os
    import signal

    from rasp_sim.experiments.stopping import Interrupted
    from rasp_sim.experiments.sweep import sweep
    from rasp_sim.experiments.tasks.dyck import Dyck1

    straight = Trainer(config(steps=8))
    straight.run(progress=False)
    real = Dyck1.train_batch

    def interrupting(task, size, rng):
        batch = real(task, size, rng)
        if interrupting.calls == 4:
            os.kill(os.getpid(), signal.SIGINT)
        interrupting.calls += 1
        return batch

    interrupting.calls = 0
    monkeypatch.setattr(Dyck1, "train_batch", interrupting)
    second = config(steps=8, seed=2)
    with pytest.raises(Interrupted, match=r"interrupted at step 5; checkpoint written to "
                                          r".*checkpoint.npz; continue with --resume"):
        sweep([config(steps=8), second], tmp_path, progress=False, report=lambda line: None)
    assert not (tmp_path / second.name()).exists()
    monkeypatch.setattr(Dyck1, "train_batch", real)
    results, failures = sweep([config(steps=8)], tmp_path, resume=True, progress=False,
                              report=lambda line: None)
    assert failures == [] and results[0]["finished"]
    assert results[0]["curves"] == straight.curves
    assert results[0]["final"] == straight.evaluate()


@pytest.mark.parametrize("damage", ["cut", "forged_header", "lying_leaf", "wrong_rng"])
def test_an_unreadable_checkpoint_is_refused_and_kept(tmp_path, damage):
    import io
    import json
    import zipfile

    train(config(steps=8), out_dir=tmp_path, progress=False, stop_after=3)
    path = tmp_path / "checkpoint.npz"
    whole = path.read_bytes()
    if damage == "cut":
        path.write_bytes(whole[:len(whole) // 2])
    else:
        with zipfile.ZipFile(io.BytesIO(whole)) as archive:
            members = {name: archive.read(name) for name in archive.namelist()}
        with np.load(io.BytesIO(whole)) as data:
            header = json.loads(data["__header__"].tobytes())
        if damage == "forged_header":
            header["step"] = "three"
        if damage == "wrong_rng":
            header["rng"] = {"bit_generator": "PCG64", "state": 7}
        buffer = io.BytesIO()
        np.save(buffer, np.frombuffer(json.dumps(header).encode(), np.uint8))
        members["__header__.npy"] = buffer.getvalue()
        if damage == "lying_leaf":  # declares 10^12 floats and holds a few
            members["leaf0.npy"] = members["leaf0.npy"].replace(
                b"'shape': (", b"'shape': (1000000, 1000000, ", 1)
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in members.items():
                archive.writestr(name, data)
    damaged = path.read_bytes()
    # refused by the check --resume makes before training, and by the trainer itself
    with pytest.raises(UnreadableCheckpoint, match=f"resume: checkpoint {path} is unreadable "
                       r"\(.*\); remove it to train this run from step 0, or run without "
                       "--resume"):
        if damage == "lying_leaf":  # only the trainer knows the leaves' shapes
            train(config(steps=8), out_dir=tmp_path, resume=True, progress=False)
        else:
            check_checkpoint(path, config(steps=8))
    with pytest.raises(UnreadableCheckpoint):
        train(config(steps=8), out_dir=tmp_path, resume=True, progress=False)
    assert path.read_bytes() == damaged  # nothing trained over it
