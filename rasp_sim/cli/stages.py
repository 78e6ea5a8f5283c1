"""A one-line progress display for the steps of a long command (`compile`'s lowering,
weights, tracr model), on a terminal only.

`stage(name)` shows `compile: NAME (12 s)` on stderr, redrawn every half second by a
daemon thread so that a single long step (lowering Dyck-2 takes about 10 s) still shows
time passing; the next stage replaces it and `close()` erases it, so a bar that follows
(the validation's tqdm bar) starts on a clean line. When stderr is not a terminal
nothing is written: logs get no progress frames.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

_REDRAW_SECONDS = 0.5


class StageLine:
    def __init__(self, command: str, stream: TextIO | None = None,
                 enabled: bool | None = None):
        self._stream = stream or sys.stderr
        self._enabled = self._stream.isatty() if enabled is None else enabled
        self._command = command
        self._name: str | None = None
        self._started = 0.0
        self._width = 0
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def stage(self, name: str) -> None:
        """The command has started step `name`."""
        if not self._enabled:
            return
        with self._lock:
            self._name, self._started = name, time.monotonic()
            self._draw()
        if self._thread is None:
            self._thread = threading.Thread(target=self._tick, daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Erase the line and stop redrawing it."""
        self._done.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._enabled and self._width:
                self._stream.write("\r" + " " * self._width + "\r")
                self._stream.flush()
            self._width = 0

    def __enter__(self) -> "StageLine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tick(self) -> None:
        while not self._done.wait(_REDRAW_SECONDS):
            with self._lock:
                self._draw()

    def _draw(self) -> None:
        text = f"{self._command}: {self._name} ({time.monotonic() - self._started:.0f} s)"
        self._stream.write("\r" + text.ljust(self._width))
        self._stream.flush()
        self._width = len(text)
