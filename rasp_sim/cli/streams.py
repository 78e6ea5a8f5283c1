"""Standard output that fails cleanly: closed, full, a broken pipe, or an encoding that
cannot hold the text.

`guarded_stdout()` puts a `GuardedOutput` in place of sys.stdout for one command: text
the stream's encoding cannot hold is written with backslash escapes (`\\xe9`) instead of
raising UnicodeEncodeError (PYTHONIOENCODING=ascii, LANG=C), and a failed write or flush
raises `OutputFailed` with the OS's reason, which the CLI reports in one line (exit 1;
a broken pipe ends quietly with exit 0: the reader has what it wanted). A stdout that was
closed before the command started (`rasp-sim ... >&-`, where Python sets sys.stdout to
None) fails at its first write, as `echo` does.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any, Iterator, TextIO


class OutputFailed(Exception):
    """Writing standard output failed; `error` is the OS's reason."""

    def __init__(self, error: OSError):
        super().__init__(error.strerror or str(error))
        self.error = error

    @property
    def broken_pipe(self) -> bool:
        return isinstance(self.error, BrokenPipeError)


class GuardedOutput:
    """A text stream wrapping `stream` (None: closed); every other attribute is the
    stream's own."""

    def __init__(self, stream: TextIO | None):
        self._stream = stream

    def write(self, text: str) -> int:
        stream = self._open()
        try:
            return stream.write(text)
        except UnicodeEncodeError:
            encoding = getattr(stream, "encoding", None) or "utf-8"
            return self._write(stream, text.encode(encoding, "backslashreplace")
                               .decode(encoding))
        except OSError as error:
            raise OutputFailed(error) from None

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as error:
            raise OutputFailed(error) from None

    def _write(self, stream: TextIO, text: str) -> int:
        try:
            return stream.write(text)
        except OSError as error:
            raise OutputFailed(error) from None

    def _open(self) -> TextIO:
        if self._stream is None:
            raise OutputFailed(OSError(errno.EBADF, os.strerror(errno.EBADF)))
        return self._stream

    def __getattr__(self, name: str) -> Any:
        return getattr(self._open(), name)


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """sys.stdout is a GuardedOutput inside the block (and what it was, after)."""
    original = sys.stdout
    sys.stdout = GuardedOutput(original)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout = original


def silence_stdout() -> None:
    """After a failed write: point file descriptor 1 at /dev/null, so that Python's own
    flush at exit does not fail again and print a warning (Python's documentation,
    "Note on SIGPIPE")."""
    stream = sys.stdout
    try:
        fd = stream.fileno() if stream is not None else None
    except (OSError, ValueError, AttributeError):
        fd = None
    if fd is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
