"""Ctrl-C (SIGINT) at many points of `rasp-sim compile -o` over an existing model: the old
model stays, or the new one is written whole; the command exits 130 (or is ended by SIGINT
itself, which shells also report as 130) once interrupted, never with an internal error,
and leaves no temporary file."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("tracr")

from rasp_sim.compiler import load_weights  # noqa: E402
from rasp_sim.compiler.tracr_backend.driver import COMPILE_KEY  # noqa: E402

COMPILE = ["-m", "rasp_sim", "compile", "prog.rasp", "--name", "x", "--max-len", "4", "-o",
           "model.npz"]


def _compile(folder, vocab: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *COMPILE, "--vocab", vocab], cwd=folder,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_sigint_anywhere_in_compile_keeps_a_whole_model(tmp_path):
    (tmp_path / "prog.rasp").write_text("x = tokens_int + 1;\n")
    assert _compile(tmp_path, "1,2").wait() == 0
    old = (tmp_path / "model.npz").read_bytes()
    started = time.perf_counter()
    assert _compile(tmp_path, "1,2,3").wait() == 0
    duration = time.perf_counter() - started
    outcomes = set()
    points = 12
    for point in range(points):
        (tmp_path / "model.npz").write_bytes(old)
        child = _compile(tmp_path, "1,2,3")
        # from just after start-up to just past the measured end of a whole run
        time.sleep(0.15 + duration * point / (points - 1))
        finished = child.poll() is not None
        child.send_signal(signal.SIGINT)
        _, err = child.communicate()
        now = (tmp_path / "model.npz").read_bytes()
        assert "internal error" not in err, err
        if err.rstrip().endswith("KeyboardInterrupt"):
            # Ctrl-C while Python imports rasp_sim, before its main runs: Python's own
            # traceback and exit by SIGINT, before any work
            assert child.returncode == -signal.SIGINT and now == old
            continue
        assert "Traceback" not in err, err
        if finished or child.returncode == 0:  # it ended before the signal reached it
            assert child.returncode == 0 and err == "" and now != old
            assert load_weights(tmp_path / "model.npz").metadata[COMPILE_KEY]["vocab"] == [1, 2, 3]
            continue
        assert child.returncode in (130, -signal.SIGINT), err
        if now == old:
            outcomes.add("old")
        else:  # the new model whole: it loads (its hash checks) with the new vocabulary
            model = load_weights(tmp_path / "model.npz")
            assert model.metadata[COMPILE_KEY]["vocab"] == [1, 2, 3]
            outcomes.add("new")
        assert sorted(os.listdir(tmp_path)) == ["model.npz", "prog.rasp"]
    assert "old" in outcomes  # most points fall before the write
