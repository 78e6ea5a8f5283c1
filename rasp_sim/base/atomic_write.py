"""Atomic, durable file writes: a file rasp-sim writes is either the old one or the new
one whole, never a mix, an empty file or a partial archive.

`replacing(path)` hands out a binary file that is not yet `path`; when the block ends
normally, the data is flushed and fsync'ed, the file takes `path`'s name with
`os.replace` (atomic on POSIX when both are in one folder, which is why the temporary file
lives in the target's folder), and the folder is fsync'ed so that the new name survives a
power cut too. When the block raises (an error, a full disk, KeyboardInterrupt), `path` is
untouched and the temporary file is removed. Ctrl-C while the file takes its name (link,
rename, folder sync) is held until that is done, then raised as WrittenThenInterrupted,
which says the new file is in place: it never leaves a stray temporary name, and an
interrupted command never claims the old file stayed when the new one is there.

On Linux the temporary file is created unnamed (O_TMPFILE): a process killed with SIGKILL
while writing leaves nothing behind, since the kernel frees an unnamed file with its last
descriptor. It gets a name only for the instant between `link` and `os.replace` (two
system calls; no call replaces a file with an unnamed one). Where O_TMPFILE is not
available (other systems, some file systems), a named temporary file is used for the
whole write instead.

A SIGKILL inside that instant, or during a named write, leaves a temporary file, which
nothing in the killed process can remove. Its name, `.NAME.HOST-PID.RANDOM.tmp`, says which
process staged it, so the next write to NAME removes those of this host's processes that
are no longer running. It never touches another host's (a folder shared over a network)
or a running writer's; a reused PID only delays the clean-up.

What may be replaced: a regular file, or nothing yet. `writable(path)` refuses an existing
device, FIFO, socket or folder (OutputRefused, naming it), and follows a symbolic link to
its target, which is replaced (the link stays); `replacing` checks it again as it starts,
and the commands check their `-o` before any work.

Permissions: the file is created with mode 0666 minus the umask, as `open(path, "w")`
creates one (0644 under umask 022), whatever library writes the data. When `path` already
exists its permission bits are kept, as writing over it in place would keep them.
"""
from __future__ import annotations

import errno
import hashlib
import os
import secrets
import socket
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from .errors import OutputRefused
from .interrupts import deferred_interrupts

_NEW_FILE_MODE = 0o666  # the kernel applies the umask, as for any open(..., "w")
# what creating an O_TMPFILE file raises where the kernel or file system lacks it
_NO_TMPFILE = (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT)


def _open_unnamed(folder: Path) -> int | None:
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):  # publishing links through /proc
        return None
    try:
        return os.open(folder, flag | os.O_RDWR, _NEW_FILE_MODE)
    except OSError as error:
        if error.errno in _NO_TMPFILE:
            return None
        raise


def _host_tag() -> str:
    """A short, file-name-safe tag of this host, so that a folder shared between hosts
    never has one host judge another's PIDs."""
    return hashlib.blake2s(socket.gethostname().encode(), digest_size=4).hexdigest()


def _temporary_name(target: Path) -> Path:
    return target.with_name(
        f".{target.name}.{_host_tag()}-{os.getpid()}.{secrets.token_hex(6)}.tmp")


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _remove_abandoned(target: Path) -> None:
    """Remove the temporary files of earlier writes to `target` whose writer, on this
    host, is no longer running (killed inside the window the module docstring names)."""
    prefix, suffix = f".{target.name}.{_host_tag()}-", ".tmp"
    try:
        entries = [entry.name for entry in os.scandir(target.parent)]
    except OSError:  # an unreadable folder: the write itself reports what is wrong
        return
    for name in entries:
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        pid_text = name[len(prefix):-len(suffix)].split(".")[0]
        if pid_text.isdigit() and not _is_running(int(pid_text)):
            try:
                (target.parent / name).unlink(missing_ok=True)
            except OSError:  # clean-up is a courtesy: it never fails the write
                pass


def _open_named(target: Path) -> tuple[int, Path]:
    while True:
        name = _temporary_name(target)
        try:
            return os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, _NEW_FILE_MODE), name
        except FileExistsError:  # 48 random bits taken: draw again
            continue


def _keep_mode(descriptor: int, target: Path) -> None:
    try:
        existing = os.stat(target)
    except OSError:  # no old file (or an unreadable folder entry): the umask rule stands
        return
    if stat.S_ISREG(existing.st_mode):
        os.fchmod(descriptor, stat.S_IMODE(existing.st_mode))


def _sync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:  # a folder that cannot be opened cannot be synced; the rename stands
        return
    try:
        os.fsync(descriptor)
    except OSError:  # some file systems refuse fsync on a folder
        pass
    finally:
        os.close(descriptor)


def _publish(descriptor: int, staged: Path | None, target: Path) -> None:
    """Give the written file `target`'s name: rename a named temporary file, or link the
    unnamed one under a temporary name first (link cannot replace an existing file)."""
    if staged is None:
        staged = _temporary_name(target)
        # linkat(AT_SYMLINK_FOLLOW) on the /proc link names the unnamed file; Python calls
        # linkat (not link, which would link the /proc entry itself) only when a dir_fd
        # is given
        folder = os.open(target.parent, os.O_RDONLY)
        try:
            os.link(f"/proc/self/fd/{descriptor}", staged.name, dst_dir_fd=folder,
                    follow_symlinks=True)
        finally:
            os.close(folder)
    try:
        os.replace(staged, target)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def writable(path: str | os.PathLike) -> Path:
    """The file a write to `path` replaces: `path`, or the target of the symbolic links it
    names (followed, never replaced). OutputRefused if that exists and is not a regular
    file."""
    target = Path(os.path.realpath(path))
    try:
        mode = os.stat(target).st_mode
    except OSError:  # nothing there yet: its folder must take a new file
        _check_folder(path, target.parent)
        return target
    for test, kind in _KINDS:
        if test(mode):
            shown = f"{path} (a link to {target})" if Path(path) != target else str(path)
            raise OutputRefused(f"{shown} is {kind}, not a regular file: rasp-sim replaces "
                                "only regular files; choose another output path")
    return target


def _check_folder(path: str | os.PathLike, folder: Path) -> None:
    """OutputRefused unless `folder` is a folder this process may create files in (the
    write's temporary file goes there too)."""
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise OutputRefused(f"{path}: the folder {folder} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputRefused(f"{path}: the folder {folder} is not writable")


@contextmanager
def replacing(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new contents to; see the module docstring."""
    target = writable(path)
    folder = target.parent
    _remove_abandoned(target)
    descriptor = _open_unnamed(folder)
    staged: Path | None = None
    if descriptor is None:
        descriptor, staged = _open_named(target)
    try:
        handle = os.fdopen(descriptor, "w+b")
    except BaseException:
        os.close(descriptor)
        if staged is not None:
            staged.unlink(missing_ok=True)
        raise
    published = False
    try:
        with handle:
            yield handle
            handle.flush()
            _keep_mode(handle.fileno(), target)
            os.fsync(handle.fileno())
            with deferred_interrupts() as interrupted:
                _publish(handle.fileno(), staged, target)
                published = True
                _sync_folder(folder)
    finally:
        if staged is not None and not published:
            staged.unlink(missing_ok=True)
    if interrupted:
        raise WrittenThenInterrupted(path)


class WrittenThenInterrupted(KeyboardInterrupt):
    """Ctrl-C while the new file took its name: the write was finished first (a stray
    temporary name or a half-told story is worse than a short wait), and the interruption
    is raised now, saying that `path` holds the new contents."""

    def __init__(self, path: str | os.PathLike):
        super().__init__(f"{os.fspath(path)} was written whole before stopping")


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """`path` holds exactly `data`, replaced atomically."""
    with replacing(path) as handle:
        handle.write(data)


def write_text(path: str | os.PathLike, text: str) -> None:
    """`path` holds `text` in UTF-8, replaced atomically."""
    write_bytes(path, text.encode("utf-8"))
