"""A test that could block forever on a FIFO fails after a deadline instead (SIGALRM)."""
from __future__ import annotations

import contextlib
import signal
from typing import Iterator


@contextlib.contextmanager
def deadline(seconds: int, what: str) -> Iterator[None]:
    """Raise TimeoutError(`what`) in the main thread if the block runs past `seconds`;
    a blocking open() or read() is interrupted by the signal."""
    def expired(*_: object) -> None:
        raise TimeoutError(f"{what}: still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
