"""What the CLI tests share: running `main` in-process and writing a file to run."""
from __future__ import annotations

from pathlib import Path

from rasp_sim.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`rasp-sim ARGV` in this process: its exit code, stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, text: str, name: str = "prog.rasp") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)
