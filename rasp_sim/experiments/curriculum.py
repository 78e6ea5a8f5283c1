"""A sequence-length curriculum (`RunConfig.length_curriculum`): the task that generates
each step's training batch. The first steps train on shorter sequences, phase by phase, the
rest at the task's own length; the optimiser, its schedule and the data stream run on
unbroken, and the test set, the curves and the final results are always at the task's own
length. A shorter sequence uses the first rows of the position embedding, so the rest start
training when the length reaches them; with `shift_short` each short batch sits at a random
offset instead (rows o..o+n-1, o uniform), so that every row trains from the start.
docs/experiments.md has the k-hop measurements that led to it."""
from __future__ import annotations

from typing import Any

import numpy as np

from .config import RunConfig
from .errors import ExperimentError
from .tasks import make_task
from .tasks.khop import PAPER_LENGTH

# The tasks whose length is the generator option `seq_len` (k-hop's string length), with
# its default.
LENGTH_OPTION = {"khop": "seq_len"}
DEFAULT_LENGTH = {"khop": PAPER_LENGTH}
MIN_LENGTH = 3  # a k-hop input needs its hop count and at least one letter


def phase_tasks(config: RunConfig, task: Any) -> list[tuple[int, Any]]:
    """[(the step the phase ends at, its task), ...], `task` (the run's own) last; refuses a
    curriculum that is not a list of (shorter length, steps) pairs within the run."""
    if not config.length_curriculum:
        if config.shift_short:
            raise ExperimentError("shift_short: there is no shorter phase to shift; give a "
                                  "length_curriculum too")
        return [(config.steps, task)]
    if config.task not in LENGTH_OPTION:
        raise ExperimentError(f"length_curriculum: the {config.task} task has no sequence "
                              f"length to grow; the curriculum is for: "
                              f"{', '.join(LENGTH_OPTION)}")
    option = LENGTH_OPTION[config.task]
    full = config.task_options.get(option, DEFAULT_LENGTH[config.task])
    phases, end = [], 0
    for length, steps in config.length_curriculum:
        if not (isinstance(length, int) and MIN_LENGTH <= length < full):
            raise ExperimentError(f"length_curriculum: a phase's length must be an integer in "
                                  f"{MIN_LENGTH}..{full - 1} (the task's {option} is {full}), "
                                  f"got {length!r}")
        if not (isinstance(steps, int) and steps >= 1):
            raise ExperimentError(f"length_curriculum: a phase's steps must be a positive "
                                  f"integer, got {steps!r} at length {length}")
        end += steps
        # one test sample: the phase's own test set is never read
        phases.append((end, make_task(config.task, **{**config.task_options, option: length,
                                                      "test_size": 1})))
    if end >= config.steps:
        raise ExperimentError(f"length_curriculum: its phases take {end:,} of the run's "
                              f"{config.steps:,} steps; the task's own length needs some")
    return [*phases, (config.steps, task)]


def task_at(phases: list[tuple[int, Any]], step: int) -> Any:
    """The task that generates the batch of step `step` (counted from 0)."""
    return next(task for end, task in phases if step < end)


def first_position(config: RunConfig, task: Any, own: Any, rng: np.random.Generator) -> int:
    """The position row the batch of `task` starts at: 0, or with `shift_short` a uniform
    offset for a shorter phase's batch (drawn after the batch, from the same stream, so a
    run without it draws exactly what it drew before)."""
    if not config.shift_short or task is own:
        return 0
    return int(rng.integers(0, own.seq_len - task.seq_len + 1))
