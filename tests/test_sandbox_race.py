"""`--sandbox` under a symlink race: a thread swaps `link.rasp` between a program inside
the sandbox and a text file outside it while `load "link";` runs again and again. The
file is checked on the descriptor that is read (rasp_sim.base.program_files.read_program), so
the outside file's text must never reach the output. Before that, 38 of 1,500 runs
printed it (issue 22)."""
from __future__ import annotations

import os
import threading

from cli_helpers import run_cli

SECRET = "outside_secret_text"
RUNS = 300


def test_a_swapped_symlink_never_lets_the_outside_file_in(tmp_path, capsys):
    sandbox, outside = tmp_path / "sandbox", tmp_path / "elsewhere"
    sandbox.mkdir()
    outside.mkdir()
    (sandbox / "inside.rasp").write_text("y = tokens;\n")
    (outside / "secret.txt").write_text(f"{SECRET} is not RASP;\n")
    main = sandbox / "main.rasp"
    main.write_text('load "link";\nz = y;\n')
    link = sandbox / "link.rasp"
    targets = [str(sandbox / "inside.rasp"), str(outside / "secret.txt")]
    os.symlink(targets[0], link)
    stop = threading.Event()

    def swap() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            temporary = sandbox / f".swap{k % 2}"
            os.symlink(targets[k % 2], temporary)
            os.replace(temporary, link)

    swapper = threading.Thread(target=swap)
    swapper.start()
    outcomes = {"ran": 0, "refused": 0}
    try:
        for _ in range(RUNS):
            code, out, err = run_cli(capsys, "run", str(main), "--input", "ab", "--sandbox")
            assert SECRET not in out + err
            assert "internal error" not in err
            if code == 0:
                outcomes["ran"] += 1
            else:
                assert "--sandbox refuses" in err, err
                outcomes["refused"] += 1
    finally:
        stop.set()
        swapper.join()
    # the race was run: both targets were seen (each is ~half the runs)
    assert outcomes["ran"] > 0 and outcomes["refused"] > 0, outcomes
