"""Reading RASP program files, and the `--sandbox` rule for the files `load` may read.

Every program file rasp-sim reads (a command's FILE, the REPL's FILE, a `load`ed file)
goes through `read_program`: only regular files are opened for reading (a FIFO or a
device would block or never end), the size is checked against `MAX_PROGRAM_BYTES`
before anything is read, and the text must be UTF-8. Each failure is a `RaspError`
located at the file itself, or at the `load` statement that asked for it.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Sequence

from .errors import RaspError, RaspLoadError, RaspResourceError, Source, Span

# Largest program file read; real programs are a few KiB, the library's largest ~30 KiB.
MAX_PROGRAM_BYTES = 10 * 2**20  # 10 MiB
_LIMIT_TEXT = "10 MiB"

# Opening a FIFO for reading blocks until a writer appears; O_NONBLOCK makes the open
# return at once, so the file type can be checked first (no effect on regular files).
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def read_program(path: str | os.PathLike, at: Span | None = None,
                 inside: Sequence[Path] | None = None) -> str:
    """The UTF-8 text of the program file `path`.

    `inside` (the `--sandbox` roots, resolved): the file actually opened must be a
    `.rasp` file in one of them. The check is made on the open descriptor (the path the
    kernel opened, `opened_path`), and the text is read from that descriptor: the path is
    never resolved again between check and read, so a symlink swapped meanwhile cannot
    slip another file in.

    Errors (RaspLoadError; RaspResourceError above the size limit) are located at `at`,
    the `load` statement that reads the file, naming the file; without `at`, at the file
    itself (`FILE: ...`, or `FILE:LINE:COL: ...` for the first byte that is not UTF-8).
    """
    path = Path(path)
    try:
        fd, info = open_regular(path, "program")
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        raise _failure(RaspLoadError, path, at, os_reason(error)) from None
    try:
        if inside is not None:
            refusal = _refusal(path, opened_path(fd, path, info), inside)
            if refusal is not None:
                raise _failure(RaspLoadError, path, at, f"--sandbox refuses it: {refusal}")
        data = read_open_file(fd, info, MAX_PROGRAM_BYTES)
    except FileTooLarge as error:
        raise _failure(RaspResourceError, path, at,
                       f"the file has {error.size}, above the limit of "
                       f"{MAX_PROGRAM_BYTES:,} bytes ({_LIMIT_TEXT}) on program files "
                       "(rasp_sim.base.program_files.MAX_PROGRAM_BYTES)") from None
    except OSError as error:
        raise _failure(RaspLoadError, path, at, os_reason(error)) from None
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line, column = utf8_error_position(data, error)
        raise _failure(RaspLoadError, path, at,
                       f"not UTF-8 text: byte 0x{data[error.start]:02x} cannot be decoded "
                       "(program files must be UTF-8)", line, column) from None


class NotRegularFile(OSError):
    """A path that names a directory, FIFO, socket or device, where a file is read."""


def open_regular(path: str | os.PathLike, what: str) -> tuple[int, os.stat_result]:
    """A descriptor open for reading on the regular file `path`, and its status. The
    open does not block (a FIFO would wait for a writer) and the type is checked on the
    descriptor itself; NotRegularFile (the descriptor closed) for anything else, its
    message saying what `path` is instead of a `what` file."""
    fd = os.open(path, _OPEN_FLAGS)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFile(not_regular_reason(info, what))
    return fd, info


class FileTooLarge(Exception):
    """A file above its reader's limit; `size` says by how much, as a message puts it:
    "N bytes", or "more than N bytes" when it grew after its size was read."""

    def __init__(self, size: str) -> None:
        super().__init__(size)
        self.size = size


def read_open_file(fd: int, info: os.stat_result, max_bytes: int) -> bytes:
    """All of the regular file open as `fd` (its status `info`, from `open_regular`):
    its size is checked before anything is read, and again on what was read, since the
    file may grow after fstat. FileTooLarge above `max_bytes`; `fd` stays open."""
    if info.st_size > max_bytes:
        raise FileTooLarge(f"{info.st_size:,} bytes")
    with open(fd, "rb", closefd=False) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(f"more than {max_bytes:,} bytes")
    return data


def utf8_error_position(data: bytes, error: UnicodeDecodeError) -> tuple[int, int]:
    """The line and column (1-based, in characters) of the first byte of `data` that
    is not UTF-8 (`error` from decoding it): the text before it decodes."""
    line_start = data.rfind(b"\n", 0, error.start) + 1
    line = data.count(b"\n", 0, error.start) + 1
    return line, len(data[line_start:error.start].decode("utf-8")) + 1


def not_regular_reason(info: os.stat_result, what: str) -> str:
    if stat.S_ISDIR(info.st_mode):
        return f"a directory, not {'an' if what[0] in 'aeiou' else 'a'} {what} file"
    return (f"not a regular file (a FIFO, socket or device): only regular files are read "
            f"as {what} files")


def check_regular(path: str | os.PathLike, what: str) -> None:
    """RaspLoadError, naming `path`, unless it is a regular file or missing (a missing
    file is its reader's to report). `stat` does not block on a FIFO, so readers that
    open the file themselves are protected from hanging on one."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(info.st_mode):
        raise RaspLoadError(not_regular_reason(info, what), Span.whole_file(str(path)))


def sandbox_refusal(candidate: Path, roots: Sequence[Path]) -> str | None:
    """Why `--sandbox` refuses to load `candidate` (None if it may be loaded): it must
    resolve (symlinks followed, `..` removed) inside one of the `roots` (resolved
    folders), and to a `.rasp` file, so no other file's contents can reach an error
    message. (A check of the name only: `read_program(..., inside=roots)` checks the
    file it opens.)"""
    return _refusal(candidate, candidate.resolve(), roots)


def opened_path(fd: int, path: Path, info: os.stat_result) -> Path | None:
    """The real path of the file open as `fd`: Linux names it in /proc/self/fd. Elsewhere,
    `path` resolved, if it still names the same file (device and inode) as `fd`; None if
    it does not (it changed after the open: refused)."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    resolved = path.resolve()
    try:
        now = os.stat(resolved)
    except OSError:
        return None
    return resolved if (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino) else None


def _refusal(candidate: Path, resolved: Path | None, roots: Sequence[Path]) -> str | None:
    if resolved is None:
        return f"{candidate} changed while it was opened"
    if not any(resolved.is_relative_to(root) for root in roots):
        inside = " or ".join(str(root) for root in roots)
        return f"{candidate} is outside {inside} (resolves to {resolved})"
    if resolved.suffix != ".rasp":
        return f"{candidate} resolves to {resolved}, which is not a .rasp file"
    return None


def os_reason(error: OSError | ValueError) -> str:
    """Why a file could not be read, as a message says it: what it is instead of a
    regular file, or the OS's reason."""
    if isinstance(error, NotRegularFile):
        return str(error)
    reason = getattr(error, "strerror", None) or error
    return f"cannot read it: {reason}"


def _failure(kind: type[RaspError], path: Path, at: Span | None, reason: str,
             line: int = 0, column: int = 0) -> RaspError:
    if at is None:
        span = (Span(Source(str(path)), line, column, line, column + 1) if line
                else Span.whole_file(str(path)))
        return kind(reason, span)
    where = f"{path}:{line}:{column}" if line else str(path)
    return kind(f"cannot load {where}: {reason}", at)
