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
from typing import Any, Callable, Iterator


@contextmanager
def sigint_handler(handler: Callable[[int, Any], None]) -> Iterator[bool]:
    """SIGINT calls `handler` inside the block, and the previous handler is back after
    it; yields whether the handler was set. Only the main thread can set one (elsewhere
    SIGINT never arrives), and a SIGINT that is ignored stays ignored."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        yield False
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield True
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def deferred_interrupts() -> Iterator[list[bool]]:
    """SIGINT inside the block appends True to the list yielded instead of raising."""
    seen: list[bool] = []
    with sigint_handler(lambda signum, frame: seen.append(True)):
        yield seen
