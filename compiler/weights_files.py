"""Weights files on disk: .npz archives and .safetensors files, read with a memory bound.

Nothing here knows the model: a reader lists a file's arrays (name, dtype, shape) from
the container's own headers without reading their data, so the caller can check names,
shapes and the total size against a limit first, and then reads the arrays one by one.
Every size a file declares is checked against the bytes it really holds (a zip member's
declared uncompressed size against its .npy header; safetensors checks its offsets
itself), so a lying or truncated file fails before anything large is allocated.

A weights file is opened without blocking and only if it is a regular file (a FIFO would
block forever, a device such as /dev/zero never ends: rasp_sim/base/program_files.open_regular),
and its size is checked on the open descriptor before any header is parsed: at most the
memory limit its arrays are read under, plus `CONTAINER_BYTES` for the container's own
headers (zip directories, .npy headers, the safetensors header).
"""
from __future__ import annotations

import os
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from rasp_sim.base.atomic_write import replacing
from rasp_sim.base.errors import RaspResourceError
from rasp_sim.base.program_files import NotRegularFile, open_regular

from .weights_format import WeightsError

NPZ_HEADER = "__header__"  # the .npz member holding the JSON header (uint8)
SAFETENSORS_KEY = "rasp_sim"  # the __metadata__ entry holding the JSON header
ZIP_MAGIC = b"PK\x03\x04"
NPY_MAGIC = b"\x93NUMPY"
DTYPES: dict[str, np.dtype] = {"float64": np.dtype("<f8"), "int64": np.dtype("<i8"), "uint8": np.dtype("u1")}
SAFETENSORS_DTYPES = {"F64": "float64", "I64": "int64", "U8": "uint8"}
# what reading a damaged zip member raises: bad CRC or header, a cut-off or corrupt stream
ZIP_READ_ERRORS = (zipfile.BadZipFile, OSError, EOFError, zlib.error)
# Room in a file beyond its arrays' bytes: safetensors bounds its own header at 100 MB, and
# an .npz spends a few hundred bytes per array on zip entries and .npy headers.
CONTAINER_BYTES = 128 * 2**20


@dataclass(frozen=True)
class ArrayInfo:
    """What a file says about one stored array, before its data is read."""

    dtype: str  # a key of DTYPES
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:  # exact for any size (Python integers); dtype is a DTYPES key
        return DTYPES[self.dtype].itemsize * int(np.prod(self.shape, dtype=object))


def is_safetensors(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".safetensors"


def _dtype_name(dtype: np.dtype) -> str:
    for name, known in DTYPES.items():
        if dtype == known:
            return name
    return dtype.str


def read_npy_header(stream, size: int, what: str) -> tuple[ArrayInfo, bool]:
    """(info, fortran_order) of the .npy data in `stream`, which holds `size` bytes in
    all; WeightsError unless the header's shape and dtype account for exactly those bytes
    (so no read is sized by an unchecked header)."""
    try:
        version = np.lib.format.read_magic(stream)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read(stream)
    except ValueError as error:
        raise WeightsError(f"{what}: not an .npy array ({error})") from None
    info = ArrayInfo(_dtype_name(dtype), tuple(int(n) for n in shape))
    if info.dtype not in DTYPES:
        raise WeightsError(f"{what}: dtype {info.dtype} (expected float64 or int64)")
    if info.nbytes != size - stream.tell():
        raise WeightsError(f"{what}: its .npy header declares shape {info.shape} "
                           f"({info.nbytes:,} bytes) but it holds {size - stream.tell():,} "
                           "bytes (corrupt or truncated)")
    return info, fortran


_CHUNK = 1 << 20  # bytes read at a time from a stream whose real size is unknown


def _read_exactly(stream, info: ArrayInfo, fortran: bool, what: str,
                  size_known: bool = True) -> np.ndarray:
    """The array's data from `stream`. `size_known`: the stream's real size was checked
    against `info` (a file's size, a stored zip member's size within the file), so its
    buffer is allocated at once; otherwise (a compressed member, whose real size shows only
    when it is decompressed) the buffer grows with the bytes that really arrive, so a
    header that lies about the size costs no more memory than the data behind it."""
    if size_known:
        buffer = bytearray(info.nbytes)
        view, done = memoryview(buffer), 0
        while done < len(buffer):
            count = stream.readinto(view[done:])
            if not count:
                raise WeightsError(f"{what}: truncated ({done:,} of {len(buffer):,} bytes)")
            done += count
    else:
        buffer = bytearray()
        while len(buffer) < info.nbytes:
            chunk = stream.read(min(_CHUNK, info.nbytes - len(buffer)))
            if not chunk:
                raise WeightsError(f"{what}: truncated ({len(buffer):,} of {info.nbytes:,} "
                                   "bytes)")
            buffer += chunk
    array = np.frombuffer(buffer, dtype=DTYPES[info.dtype])
    return array.reshape(info.shape, order="F" if fortran else "C")


class NpyFile:
    """One .npy file (such as an embedding E): its header first, its data on `read`."""

    def __init__(self, path: str | Path, what: str):
        self.what = what
        self._handle, size = _open(path, what)
        try:
            head = self._handle.read(len(NPY_MAGIC))
            if head.startswith(ZIP_MAGIC):
                raise WeightsError(f"{what}: an .npz archive, not an .npy array")
            if head != NPY_MAGIC:
                raise WeightsError(f"{what}: not an .npy array")
            self._handle.seek(0)
            self.info, self._fortran = read_npy_header(self._handle, size, what)
        except BaseException:
            self.close()
            raise

    def read(self) -> np.ndarray:
        return _read_exactly(self._handle, self.info, self._fortran, self.what)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "NpyFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _open(path: str | Path, what: str = "weights",
          max_bytes: int | None = None) -> tuple[BinaryIO, int]:
    """The regular file `path` (a `what` file) open for reading, and its size (checked
    against `max_bytes`); a FIFO, device or folder is refused before anything blocks or
    is read."""
    try:
        fd, info = open_regular(path, what)
    except FileNotFoundError:
        raise WeightsError("no such file") from None
    except NotRegularFile as error:
        raise WeightsError(str(error)) from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        raise WeightsError(f"cannot read ({getattr(error, 'strerror', None) or error})") \
            from None
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(fd)
        raise RaspResourceError(
            f"the file has {info.st_size:,} bytes, more than its arrays may hold under the "
            f"memory limit ({max_bytes - CONTAINER_BYTES:,} bytes, plus "
            f"{CONTAINER_BYTES // 2**20} MiB for the container's headers); raise it with "
            "memory_limit= (rasp-sim: --memory-limit)")
    return os.fdopen(fd, "rb"), info.st_size


class Container:
    """A weights file opened for reading: `arrays` (name -> ArrayInfo, data unread),
    `header_size` (bytes), `read_header()` (the JSON header's bytes, or None), `read(name)`.
    """

    arrays: dict[str, ArrayInfo]
    header_size: int

    def _list(self) -> None:
        """Fill `arrays` and `header_size` from the file's own headers."""
        raise NotImplementedError

    def _list_or_close(self) -> None:
        try:
            self._list()
        except BaseException:
            self.close()
            raise

    def read_header(self) -> bytes | None:
        raise NotImplementedError

    def read(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> "Container":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NpzContainer(Container):
    def __init__(self, path: str | Path, max_bytes: int | None = None):
        # zipfile reads the descriptor checked by _open, never the path again
        self._handle, self._size = _open(path, max_bytes=max_bytes)
        try:
            if self._handle.read(len(ZIP_MAGIC)) != ZIP_MAGIC:  # every .npz is a zip archive
                raise WeightsError("not an .npz archive (corrupt or not a weights file)")
            self._zip = zipfile.ZipFile(self._handle)
        except (zipfile.BadZipFile, OSError, EOFError) as error:
            self._handle.close()
            raise WeightsError(f"corrupt or truncated weights file (zip: {error})") from None
        except BaseException:
            self._handle.close()
            raise
        self._list_or_close()

    def _list(self) -> None:
        self._members: dict[str, tuple[zipfile.ZipInfo, bool]] = {}
        self.arrays = {}
        for member in self._zip.infolist():
            if not member.filename.endswith(".npy"):
                raise WeightsError(f"{member.filename}: an archive member that is not an "
                                   ".npy array")
            name = member.filename[:-len(".npy")]
            # the sizes the zip directory declares, against the bytes the file holds
            if member.header_offset + member.compress_size > self._size:
                raise WeightsError(f"{name}: declares {member.compress_size:,} bytes, more "
                                   f"than the file's {self._size:,} (corrupt or truncated)")
            if member.compress_type == zipfile.ZIP_STORED and \
                    member.file_size != member.compress_size:
                raise WeightsError(f"{name}: a stored member declaring {member.file_size:,} "
                                   f"bytes but holding {member.compress_size:,} (corrupt)")
            try:
                with self._open_member(member) as stream:
                    info, fortran = read_npy_header(stream, member.file_size, name)
            except ZIP_READ_ERRORS as error:
                raise WeightsError(f"{name}: corrupt or truncated ({error})") from None
            self.arrays[name] = info
            self._members[name] = (member, fortran)
        self._header = self.arrays.pop(NPZ_HEADER, None)
        self.header_size = 0 if self._header is None else self._header.nbytes
        if self._header is not None and (self._header.dtype != "uint8"
                                         or len(self._header.shape) != 1):
            raise WeightsError(f"{NPZ_HEADER}: expected 1-d uint8 (the JSON header), got "
                               f"{self._header.dtype} of shape {self._header.shape}")

    def read_header(self) -> bytes | None:
        if self._header is None:
            return None
        return self._read_member(NPZ_HEADER, self._header).tobytes()

    def _open_member(self, member: zipfile.ZipInfo):
        try:
            return self._zip.open(member)
        except (*ZIP_READ_ERRORS, NotImplementedError) as error:
            raise WeightsError(f"{member.filename}: corrupt or truncated ({error})") from None

    def _read_member(self, name: str, info: ArrayInfo) -> np.ndarray:
        member, fortran = self._members[name]
        try:
            with self._open_member(member) as stream:
                read_npy_header(stream, member.file_size, name)
                return _read_exactly(stream, info, fortran, name,
                                     size_known=member.compress_type == zipfile.ZIP_STORED)
        except ZIP_READ_ERRORS as error:
            raise WeightsError(f"{name}: corrupt or truncated ({error})") from None

    def read(self, name: str) -> np.ndarray:
        return self._read_member(name, self.arrays[name])

    def close(self) -> None:
        self._zip.close()  # a ZipFile leaves a file object it was given open
        self._handle.close()


class SafetensorsContainer(Container):
    def __init__(self, path: str | Path, max_bytes: int | None = None):
        from safetensors import SafetensorError, safe_open

        handle, _ = _open(path, max_bytes=max_bytes)  # a missing, unreadable or FIFO file is named
        try:
            self._file = safe_open(_reopened(handle, path), framework="np")
            self._file.__enter__()
        except SafetensorError as error:
            raise WeightsError(f"corrupt or not a safetensors file ({error})") from None
        finally:
            handle.close()  # safetensors holds its own descriptor (and map) of the file
        self._list_or_close()

    def _list(self) -> None:
        from safetensors import SafetensorError

        try:
            # safetensors bounds its own header (100 MB) and checks every offset against
            # the file's size when opening it
            self._header = (self._file.metadata() or {}).get(SAFETENSORS_KEY)
            self.arrays = {}
            for name in self._file.keys():
                part = self._file.get_slice(name)
                if part.get_dtype() not in SAFETENSORS_DTYPES:
                    raise WeightsError(f"{name}: dtype {part.get_dtype()} (expected F64 or I64)")
                self.arrays[name] = ArrayInfo(SAFETENSORS_DTYPES[part.get_dtype()],
                                              tuple(part.get_shape()))
        except SafetensorError as error:
            raise WeightsError(f"corrupt or not a safetensors file ({error})") from None
        self.header_size = 0  # already in memory, within safetensors' own bound

    def read_header(self) -> bytes | None:
        return None if self._header is None else self._header.encode("utf-8")

    def read(self, name: str) -> np.ndarray:
        return self._file.get_tensor(name)

    def close(self) -> None:
        self._file.__exit__(None, None, None)


def _reopened(handle: BinaryIO, path: str | Path) -> str:
    """A name that opens the very file `handle` has open, for readers that take only a
    name (safetensors): Linux's /proc/self/fd entry, so a file swapped for a FIFO after
    the check is never opened; elsewhere `path` itself."""
    proc = f"/proc/self/fd/{handle.fileno()}"
    return proc if os.path.exists(proc) else str(path)


def open_weights(path: str | Path, memory_limit: int | None = None) -> Container:
    """The container of `path`: safetensors for a .safetensors suffix, else .npz. With
    `memory_limit`, a file larger than that plus CONTAINER_BYTES is refused unopened."""
    max_bytes = None if memory_limit is None else memory_limit + CONTAINER_BYTES
    return (SafetensorsContainer if is_safetensors(path) else NpzContainer)(path, max_bytes)


def check_memory(arrays: dict[str, ArrayInfo], header_size: int, limit: int) -> None:
    """Refuse to read a header and arrays whose declared sizes add up to more than `limit`
    bytes."""
    total = header_size + sum(info.nbytes for info in arrays.values())
    if total > limit:
        largest = max(arrays, key=lambda name: arrays[name].nbytes, default=None)
        what = "" if largest is None else (f" (the largest array, {largest}, has shape "
                                           f"{arrays[largest].shape})")
        raise RaspResourceError(
            f"its header and arrays declare {total:,} bytes{what}, above the memory limit of "
            f"{limit:,} bytes; raise it with memory_limit= (rasp-sim: --memory-limit)")


def write(path: str | Path, header: str, arrays: dict[str, np.ndarray]) -> None:
    """Write `arrays` and the JSON `header` atomically (rasp_sim/base/atomic_write.py: the old
    file or the new one whole, never a partial one): safetensors for a .safetensors
    suffix, else an .npz archive written to exactly `path` (np.savez would append .npz to
    a path without it). An unwritable path or a full disk raises OSError."""
    with replacing(path) as handle:
        if is_safetensors(path):
            from safetensors.numpy import save

            # serialised in memory and written by Python, not by save_file: a failed write
            # is then an OSError with its errno (save_file's is a SafetensorError), and
            # the file gets the same permissions as an .npz (save_file's are 0600)
            handle.write(save({name: np.ascontiguousarray(a) for name, a in arrays.items()},
                              metadata={SAFETENSORS_KEY: header}))
            return
        members: dict[str, Any] = {**arrays, NPZ_HEADER: np.frombuffer(header.encode("utf-8"),
                                                                         dtype=np.uint8)}
        np.savez(handle, **members)
