"""`rasp-sim experiment` asks for progress bars only when stderr is a terminal: a log
gets no tqdm frames (--no-progress is for a terminal that wants none)."""
from __future__ import annotations

import pytest

from rasp_sim.cli import main


@pytest.mark.parametrize("terminal, flags, expected", [
    (False, [], False), (True, [], True), (True, ["--no-progress"], False)])
def test_progress_only_on_a_terminal(tmp_path, monkeypatch, capsys, terminal, flags, expected):
    pytest.importorskip("torch")
    import sys

    import rasp_sim.experiments.sweep as sweep_module

    asked = []

    def fake_sweep(configs, out, workers, scheduler, resume, progress, device_name):
        asked.append(progress)
        return [], []

    monkeypatch.setattr(sweep_module, "sweep", fake_sweep)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    assert main(["experiment", "dyck1", "--budget", "ci", "--out", str(tmp_path / "out"),
                 *flags]) == 0
    assert asked == [expected]
