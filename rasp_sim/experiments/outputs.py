"""What an experiment writes, checked before it trains anything, so that no work is lost.

A sweep writes, under its out folder, a folder per run holding `result.json` and
`checkpoint.npz`, then `summary.json`, `table.md` and `curves-TASK.png`. An output that
cannot be written (a folder where a file goes, a file where a folder goes, a FIFO or a
device: the atomic writer replaces only regular files) would otherwise fail after the
training, and the training would be lost. With --resume, a result or checkpoint that
exists but cannot be used (not a regular file, too large, cut short, nested too deeply,
another run's) is refused here too: training the run again would replace it, or fail to
write over it once trained. `check_outputs` lists every such path at once.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..base.atomic_write import writable
from ..base.errors import OutputRefused
from .checkpoints import CHECKPOINT, UnreadableCheckpoint, check_checkpoint
from .config import RunConfig
from .errors import ExperimentError
from .results import RESULT, UnreadableResult, finished_result

SUMMARY = "summary.json"
TABLE = "table.md"


def curves_path(out: Path, task: str) -> Path:
    """The figure of `task`'s learning curves."""
    return out / f"curves-{task}.png"


def check_outputs(configs: list[RunConfig], out: Path, resume: bool) -> None:
    """ExperimentError naming every output of the sweep of `configs` into the folder `out`
    that could not be written, and with `resume` every result or checkpoint that could not
    be resumed from (see the module docstring). Reads nothing without `resume`."""
    sweep_files = [out / SUMMARY, out / TABLE,
                   *(curves_path(out, task) for task in sorted({c.task for c in configs}))]
    problems = [problem for problem in map(_file_problem, sweep_files) if problem]
    for config in configs:
        problems += _run_problems(config, out / config.name(), resume)
    if problems:
        raise ExperimentError("nothing was trained, since these outputs could not be used:\n"
                              + "\n".join(f"  {problem}" for problem in problems))


def _run_problems(config: RunConfig, folder: Path, resume: bool) -> list[str]:
    problem = _folder_problem(folder)
    if problem:
        return [problem]
    if not folder.is_dir():  # created when the run writes: nothing in it to check yet
        return []
    problems = [problem for problem in map(_file_problem, (folder / RESULT, folder / CHECKPOINT))
                if problem]
    if resume and not problems:
        problem = _resume_problem(config, folder)
        problems += [problem] if problem else []
    return problems


def _file_problem(path: Path) -> str | None:
    try:
        writable(path)
    except OutputRefused as error:
        return error.message
    return None


def _folder_problem(path: Path) -> str | None:
    """Why a run's results cannot go in the folder `path` (None if they can; a missing
    folder is created when the run writes, inside the out folder checked already)."""
    if not os.path.lexists(path):
        return None
    if not path.is_dir():
        return f"{path} is not a folder (a run's results go in it): remove it or choose " \
               "another --out"
    try:
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        return f"{path}: cannot write there ({error.strerror or error})"
    return None


def _resume_problem(config: RunConfig, folder: Path) -> str | None:
    """Why --resume cannot use the run's result or checkpoint (None if it can, or if there
    is none: the run then starts from step 0)."""
    try:
        if finished_result(folder, config) is not None:
            return None  # reused as it is; the checkpoint is not read
        if (folder / CHECKPOINT).exists():
            check_checkpoint(folder / CHECKPOINT, config)
    except (UnreadableResult, UnreadableCheckpoint) as error:
        return error.message
    return None
