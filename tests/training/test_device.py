"""`--device`: the platform chosen, the refusal of a GPU that is not there, and float32
products on a GPU without touching the CPU path. JAX's GPU list is replaced where the
answer must not depend on this machine's hardware."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("optax")

import jax  # noqa: E402

from rasp_sim.experiments import device  # noqa: E402
from rasp_sim.experiments.errors import ExperimentError  # noqa: E402
from rasp_sim.cli import main  # noqa: E402


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(device, "_gpus", lambda: [])


def test_best_available_is_the_gpu_when_jax_sees_one(monkeypatch):
    monkeypatch.setattr(device, "_gpus", lambda: ["a gpu"])
    assert device.resolve_device(None) == "gpu"
    monkeypatch.setattr(device, "_gpus", lambda: [])
    assert device.resolve_device(None) == "cpu"
    assert device.resolve_device("cpu") == "cpu"


def test_gpu_without_one_is_refused_before_any_run(no_gpu, tmp_path, capsys):
    assert main(["experiment", "dyck1", "--device", "gpu", "--out", str(tmp_path),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("experiment error: device: --device gpu, but JAX ")
    assert "sees no GPU (its devices: cpu); install JAX with CUDA (pip install '.[gpu]') " \
           "on a machine with an NVIDIA GPU and driver, or use --device cpu" in err
    assert "Traceback" not in err and not list(tmp_path.iterdir())


def test_unknown_device_names_the_choices(capsys):
    with pytest.raises(ExperimentError, match="unknown device 'tpu'; known: cpu, gpu"):
        device.resolve_device("tpu")
    with pytest.raises(SystemExit) as exit_:
        main(["experiment", "dyck1", "--device", "tpu"])
    assert exit_.value.code == 2
    assert "argument --device: invalid choice: 'tpu' (choose from cpu, gpu)" in \
        capsys.readouterr().err.replace("'cpu'", "cpu").replace("'gpu'", "gpu")


def test_gpu_traces_float32_products_and_cpu_is_left_as_it_was():
    def precision():
        return jax.config.jax_default_matmul_precision

    cpu = jax.devices("cpu")[0]
    assert device.full_float32(precision, cpu) is precision

    class Gpu:
        platform = "gpu"
    assert device.full_float32(precision, Gpu())() == "float32"


def test_default_device_run_records_it_in_the_summary(no_gpu, tmp_path, monkeypatch, capsys):
    # The ci plan shrunk to 2 steps: the CLI path end to end on the default (CPU) device.
    from rasp_sim.experiments import budgets
    from dataclasses import replace
    small, seeds = budgets._ci("dyck1")[0]
    monkeypatch.setitem(budgets.BUILDERS, "ci", lambda task: [
        (replace(small, steps=2, eval_every=2, task_options={"test_size": 20}), seeds)])
    assert main(["experiment", "dyck1", "--out", str(tmp_path), "--no-progress"]) == 0
    (result_file,) = tmp_path.glob("*/result.json")
    kind = jax.devices("cpu")[0].device_kind
    assert json.loads(result_file.read_text())["device"] == {"platform": "cpu", "kind": kind}
    (row,) = json.loads((tmp_path / "summary.json").read_text())["rows"]
    assert row["devices"] == [f"cpu ({kind})"]
