"""`rasp-sim experiment` checks every output it will write, and with --resume every result
and checkpoint it will read, before any training (issue 34: outputs that failed after the
training, readers that hung on a FIFO or read a sparse file whole)."""
from __future__ import annotations

import io
import json
import os
import signal
import stat
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("optax")

from rasp_sim.cli import main  # noqa: E402
from rasp_sim.experiments.budgets import plan  # noqa: E402
from rasp_sim.experiments.checkpoints import (UnreadableCheckpoint,  # noqa: E402
                                              check_checkpoint, checkpoint_bytes)
from rasp_sim.experiments.results import UnreadableResult, read_result  # noqa: E402

(RUN,) = plan("dyck1", "ci")
KINDS = {"folder": "a folder", "fifo": "a FIFO", "device": "a character device"}


@pytest.fixture(autouse=True)
def no_training(monkeypatch):
    """Training fails the test; a reader that blocks fails it after 20 s instead of hanging."""
    from rasp_sim.experiments import sweep

    monkeypatch.setattr(sweep, "sweep", lambda *a, **k: pytest.fail("training started"))

    def blocked(*_):
        raise TimeoutError("blocked for 20 s")

    previous = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def make(path: Path, kind: str) -> None:
    """A folder, FIFO or character device (in the test's own folder) at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))


def experiment(out: Path, *options: str) -> int:
    return main(["experiment", "dyck1", "--budget", "ci", "--out", str(out), "--no-progress",
                 *options])


def refused(out: Path, capsys, *options: str) -> str:
    """The error of an experiment refused, quickly and before training, with exit code 1."""
    started = time.perf_counter()
    assert experiment(out, *options) == 1
    assert time.perf_counter() - started < 10
    err = capsys.readouterr().err
    assert err.startswith("experiment error: nothing was trained, since these outputs could "
                          "not be used:\n")
    return err


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("name", ["summary.json", "table.md", "curves-dyck1.png",
                                  f"{RUN.name()}/result.json", f"{RUN.name()}/checkpoint.npz"])
@pytest.mark.parametrize("resume", [False, True])
def test_an_output_that_is_not_a_regular_file_is_refused_before_training(
        tmp_path, capsys, kind, name, resume):
    make(tmp_path / name, kind)
    err = refused(tmp_path, capsys, *(["--resume"] if resume else []))
    assert f"  {tmp_path / name} is {KINDS[kind]}, not a regular file" in err


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_run_folder_that_is_not_a_folder_is_refused_before_training(tmp_path, capsys, kind):
    folder = tmp_path / RUN.name()
    folder.write_text("") if kind == "file" else make(folder, kind)
    err = refused(tmp_path, capsys)
    assert f"  {folder} is not a folder (a run's results go in it): remove it or choose " \
           "another --out" in err


def test_every_refused_output_is_named_at_once(tmp_path, capsys):
    make(tmp_path / "table.md", "folder")
    (tmp_path / RUN.name()).write_text("")
    err = refused(tmp_path, capsys)
    assert f"{tmp_path / 'table.md'} is a folder" in err
    assert f"{tmp_path / RUN.name()} is not a folder" in err


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no disk (a hole)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)


def test_resume_refuses_a_sparse_1_gb_result_before_reading_it(tmp_path, capsys):
    path = tmp_path / RUN.name() / "result.json"
    sparse(path, 2**30)
    err = refused(tmp_path, capsys, "--resume")
    assert f"  resume: {path} is unreadable (the file has 1,073,741,824 bytes, above the " \
           "limit of" in err
    assert "remove it to train this run again, or run without --resume" in err
    assert path.stat().st_size == 2**30  # kept


def test_resume_refuses_a_deeply_nested_result_with_its_location(tmp_path, capsys):
    path = tmp_path / RUN.name() / "result.json"
    path.parent.mkdir()
    path.write_text("[" * 100_000 + "]" * 100_000)
    err = refused(tmp_path, capsys, "--resume")
    assert f"  resume: {path} is unreadable (JSON nested 100,000 levels deep, above the " \
           "limit of 64" in err


def test_without_resume_an_existing_result_is_not_read(tmp_path):
    from rasp_sim.experiments.outputs import check_outputs

    sparse(tmp_path / RUN.name() / "result.json", 2**30)
    check_outputs([RUN], tmp_path, resume=False)  # replaced by the run, never read


def test_resume_refuses_a_sparse_checkpoint_larger_than_its_run_can_write(tmp_path, capsys):
    path = tmp_path / RUN.name() / "checkpoint.npz"
    sparse(path, 2**30)
    err = refused(tmp_path, capsys, "--resume")
    assert f"  resume: checkpoint {path} is unreadable (the file has 1,073,741,824 bytes, " \
           f"above the limit of {checkpoint_bytes(RUN):,} bytes); remove it to train this " \
           "run from step 0, or run without --resume" in err


def checkpoint_with(header_text: str, leaves: int = 2) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, __header__=np.frombuffer(header_text.encode(), np.uint8),
             **{f"leaf{i}": np.zeros(3, np.float32) for i in range(leaves)})
    return buffer.getvalue()


def header(**changes) -> str:
    return json.dumps({"config": RUN.to_dict(), "step": 3, "curves": [], "window": [],
                       "elapsed": 1.0, "rng": np.random.default_rng(0).bit_generator.state,
                       **changes})


@pytest.mark.parametrize("data, message", [
    (b"PK\x03\x04 not a zip", "cut short, corrupt or not a checkpoint"),
    (checkpoint_with(header(step=-1)), "step -1 is outside 0..200"),
    (checkpoint_with(header().replace('"curves": []', '"curves": ' + "[" * 1000 + "]" * 1000)),
     "its header is JSON nested 1,001 levels deep"),
])
def test_resume_refuses_an_unreadable_checkpoint_before_training(tmp_path, capsys, data,
                                                                 message):
    path = tmp_path / RUN.name() / "checkpoint.npz"
    path.parent.mkdir()
    path.write_bytes(data)
    err = refused(tmp_path, capsys, "--resume")
    assert f"  resume: checkpoint {path} is unreadable (" in err and message in err
    assert path.read_bytes() == data


def test_resume_refuses_another_runs_checkpoint_before_training(tmp_path, capsys):
    path = tmp_path / RUN.name() / "checkpoint.npz"
    path.parent.mkdir()
    path.write_bytes(checkpoint_with(header(config={**RUN.to_dict(), "lr": 0.5})))
    err = refused(tmp_path, capsys, "--resume")
    assert f"  resume: checkpoint {path} was written by a different run (settings differ: " \
           "lr); remove it to train this run from step 0, or run without --resume" in err


def test_a_checkpoint_header_larger_than_its_run_writes_is_refused_unread(tmp_path):
    path = tmp_path / "checkpoint.npz"
    with zipfile.ZipFile(path, "w") as archive:  # the header's size, as the zip declares it
        archive.writestr("__header__.npy", b"\x93NUMPY" + b" " * 2_000_000)
        archive.writestr("leaf0.npy", b"")
    with pytest.raises(UnreadableCheckpoint, match="its header has 2,000,006 bytes, above"):
        check_checkpoint(path, RUN)


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_readers_refuse_what_is_not_a_regular_file_without_blocking(tmp_path, kind):
    make(tmp_path / "result.json", kind)
    make(tmp_path / "checkpoint.npz", kind)
    with pytest.raises(UnreadableResult, match=f"resume: {tmp_path / 'result.json'} is "
                                               "unreadable \\((not a regular file|a directory)"):
        read_result(tmp_path, RUN)
    with pytest.raises(UnreadableCheckpoint, match="(not a regular file|a directory)"):
        check_checkpoint(tmp_path / "checkpoint.npz", RUN)


@pytest.mark.parametrize("kind", ["fifo", "sparse", "deep", "not a summary"])
def test_plot_refuses_an_unreadable_summary_without_blocking(tmp_path, capsys, kind):
    from rasp_sim.experiments.plot import main as plot_main

    path = tmp_path / "summary.json"
    if kind == "fifo":
        make(path, kind)
    elif kind == "sparse":
        sparse(path, 2**30)
    else:
        path.write_text("[" * 1000 + "]" * 1000 if kind == "deep" else '{"rows": 3}')
    assert plot_main([str(path)]) == 1
    reason = {"fifo": "not a regular file", "sparse": "the file has 1,073,741,824 bytes",
              "deep": "JSON nested 1,000 levels deep", "not a summary": "not a summary"}[kind]
    assert capsys.readouterr().err.startswith(f"plot: {path} is unreadable ({reason}")
