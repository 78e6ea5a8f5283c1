"""Holding Ctrl-C over a few system calls that must not be cut in the middle.

Python raises KeyboardInterrupt between any two bytecodes, so a step made of two system
calls (link then rename, start a cluster then record it) can be stopped half-way. Inside
`deferred_interrupts()` a SIGINT is only recorded; the caller looks at the list it yields
once the step is whole and decides what to say and raise.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def deferred_interrupts() -> Iterator[list[bool]]:
    """SIGINT inside the block appends True to the list yielded instead of raising. Only
    the main thread can set a handler (elsewhere SIGINT never arrives: nothing to hold),
    and a SIGINT that is ignored stays ignored."""
    seen: list[bool] = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        yield seen
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(True))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)
