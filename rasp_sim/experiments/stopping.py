"""Ctrl-C during a sweep: the run stops between training steps, never inside JAX.

A KeyboardInterrupt raised while XLA compiles or runs a step leaves its threads mid-work,
and the process then crashed at exit: `experiment dyck1 --budget ci` interrupted 9-17 s in
(during the first step's compilation) ended in a segmentation fault in 2 of 5 timings. So
while `stop_on_interrupt()` is active, a first SIGINT only asks to stop: the training loop
(train.py) checks `requested()` after each step, writes its checkpoint and raises
`Interrupted`; the sweep starts no further run. A second SIGINT raises KeyboardInterrupt
at once, as without this module.

Only the main thread can set signal handlers; elsewhere (a Dask worker's task thread)
and where SIGINT is ignored (a background job) nothing changes.
"""
from __future__ import annotations

import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

from .errors import ExperimentError


class Interrupted(ExperimentError):
    """A sweep stopped by Ctrl-C; its message says what was saved (exit 130)."""


_requested = False


def requested() -> bool:
    """Whether Ctrl-C asked the sweep to stop."""
    return _requested


def _ask_to_stop(signum: int, frame: object) -> None:
    global _requested
    if _requested:
        raise KeyboardInterrupt
    _requested = True
    print("interrupted: stopping after this training step and writing its checkpoint "
          "(Ctrl-C again to stop at once)", file=sys.stderr)


@contextmanager
def stop_on_interrupt() -> Iterator[None]:
    """SIGINT asks to stop (see the module docstring) for the duration of the block."""
    global _requested
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, _ask_to_stop)):
        yield  # no handler can be set, SIGINT is ignored, or an outer block asks already
        return
    _requested = False
    previous = signal.signal(signal.SIGINT, _ask_to_stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested = False
