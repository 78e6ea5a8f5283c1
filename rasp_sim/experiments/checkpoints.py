"""Reading a training checkpoint back, trusting nothing in it.

A checkpoint (train.py's save_checkpoint) is an .npz archive: `__header__` (JSON as uint8)
and `leaf0`..`leafN-1`, the parameters and optimizer state in JAX's flattening order.
Writes are atomic (rasp_sim/base/atomic_write.py), so a checkpoint rasp-sim wrote is whole; one
cut short, damaged or forged by other means is UnreadableCheckpoint: the file is read only
if it is a regular file no larger than the run's arrays imply (`checkpoint_bytes`; a FIFO
would block, /dev/zero or a sparse file would be read whole), every leaf's .npy header is
checked against the shape and dtype the run expects before its data is read (so a lying
header costs no memory), and the JSON header's size, depth and fields are checked.
`check_checkpoint` does all this but the leaves' shapes without building the run, so that
`experiment --resume` refuses a bad checkpoint before any training.
"""
from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..base.bounded_read import UnreadableFile, parse_json, read_bytes
from .backbones import trained_count, universal_m
from .config import RunConfig
from .errors import ExperimentError
from .results import result_bytes
from .tasks import make_task

CHECKPOINT = "checkpoint.npz"  # in the run's folder
HEADER = "__header__"
# A checkpoint's window holds the (loss, accuracy) pairs of at most eval_every steps, each
# under 50 bytes of JSON; 64 leaves room.
_WINDOW_PAIR_BYTES = 64
# the zip's own records (a local header and a directory entry per array, each under 200
# bytes for rasp-sim's names), the .npy headers (128 bytes each) and Adam's step counts,
# for a few thousand arrays
_ARCHIVE_OVERHEAD = 2**20
# what reading a damaged archive raises: a bad zip or CRC, a cut-off stream, a bad .npy
_DAMAGE = (OSError, EOFError, zipfile.BadZipFile, zlib.error, ValueError, KeyError)
# the header's fields and their JSON types ("window" is absent from older checkpoints)
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "config": dict, "step": int, "curves": list, "elapsed": (int, float), "rng": dict}


class UnreadableCheckpoint(ExperimentError):
    """A checkpoint that is cut short, corrupt, too large, not a regular file or another
    run's: --resume refuses it (nothing of it is used) and says how to go on."""


def header_bytes(config: RunConfig) -> int:
    """The largest JSON header a checkpoint of `config` can have: a result's curves and
    settings (results.result_bytes) and the window since the last curve point."""
    return result_bytes(config) + _WINDOW_PAIR_BYTES * config.eval_every


def checkpoint_bytes(config: RunConfig) -> int:
    """The largest checkpoint file `config`'s run can write: the trained numbers and their
    two Adam moments, float32, its header and the archive's own records."""
    task = make_task(config.task, **config.task_options)
    trained = trained_count(config.sizes, universal_m(config.sizes), config.variant,
                            task.vocab_size, task.seq_len)
    return 3 * 4 * trained + header_bytes(config) + _ARCHIVE_OVERHEAD


def _read_member(archive: zipfile.ZipFile, name: str, dtype: np.dtype,
                 shape: tuple[int, ...] | None) -> np.ndarray:
    """Member `name`.npy, refused unless its .npy header says `dtype` and `shape` (any
    1-d shape if None) before its data is read."""
    with archive.open(f"{name}.npy") as stream:
        version = np.lib.format.read_magic(stream)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        found_shape, fortran, found_dtype = read(stream)
        if found_dtype != dtype or (shape is not None and tuple(found_shape) != shape) or (
                shape is None and len(found_shape) != 1) or fortran:
            raise ValueError(f"{name} is {found_dtype} of shape {tuple(found_shape)}, "
                             f"expected {dtype} of shape {shape or '(n,)'}")
        count = int(np.prod(found_shape, dtype=np.int64))
        data = stream.read(count * dtype.itemsize)
        if len(data) != count * dtype.itemsize:
            raise ValueError(f"{name} is cut short")
        return np.frombuffer(data, dtype=dtype).reshape(found_shape).copy()


def _checked_header(raw: bytes) -> dict[str, Any]:
    try:
        header = parse_json(raw)
    except UnreadableFile as error:
        raise ValueError(f"its header is {error}") from None
    if not isinstance(header, dict):
        raise ValueError("its header is not a JSON object")
    for field, kind in _FIELDS.items():
        if not isinstance(header.get(field), kind) or isinstance(header.get(field), bool):
            raise ValueError(f"its header's {field!r} is missing or not a {kind}")
    window = header.get("window", [])
    if not (isinstance(window, list) and all(
            isinstance(pair, list) and len(pair) == 2
            and all(isinstance(x, (int, float)) for x in pair) for pair in window)):
        raise ValueError("its header's 'window' is not a list of (loss, accuracy) pairs")
    return header


def settings_differ(header: dict, config: RunConfig) -> list[str]:
    """The settings of `config` that the checkpoint's header records otherwise (sorted)."""
    saved, current = header["config"], json.loads(json.dumps(config.to_dict()))
    return sorted(k for k in current if saved.get(k) != current[k]) if saved != current else []


def _archive(path: Path, config: RunConfig) -> zipfile.ZipFile:
    """The checkpoint file, read whole within `checkpoint_bytes(config)`, as an archive."""
    try:
        data = read_bytes(path, "checkpoint", checkpoint_bytes(config))
    except UnreadableFile as error:
        raise UnreadableCheckpoint(_unreadable(path, str(error))) from None
    return zipfile.ZipFile(io.BytesIO(data))


def _header(archive: zipfile.ZipFile, config: RunConfig) -> dict[str, Any]:
    """The archive's JSON header, refused above `header_bytes(config)` before it is read."""
    size = archive.getinfo(f"{HEADER}.npy").file_size
    if size > header_bytes(config):
        raise ValueError(f"its header has {size:,} bytes, above the {header_bytes(config):,} "
                         "this run's settings can write")
    return _checked_header(_read_member(archive, HEADER, np.dtype(np.uint8), None).tobytes())


def _leaf_count(names: list[str]) -> int:
    """How many leaves the archive holds; ValueError unless its members are the header
    and leaf0..leafN-1."""
    count = len(names) - 1
    if sorted(names) != sorted([f"{HEADER}.npy", *(f"leaf{i}.npy" for i in range(count))]):
        raise ValueError(f"its {len(names)} members are not a header and leaf0..leaf{count - 1}")
    return count


def check_checkpoint(path: Path, config: RunConfig) -> None:
    """UnreadableCheckpoint unless `path` can be resumed from by `config`'s run, as far as
    can be told without building it (read_checkpoint checks the leaves' shapes too)."""
    try:
        with _archive(path, config) as archive:
            _leaf_count(archive.namelist())
            header = _header(archive, config)
    except _DAMAGE as error:
        raise UnreadableCheckpoint(_unreadable(path, _damage(error))) from None
    _check_run(path, header, config)


def read_checkpoint(path: Path, config: RunConfig,
                    expected: list[np.ndarray]) -> tuple[dict, list[np.ndarray]]:
    """(header, leaves) of `config`'s checkpoint at `path`, whose leaves must have the
    shapes and dtypes of `expected` (the run's own); UnreadableCheckpoint otherwise."""
    try:
        with _archive(path, config) as archive:
            count = _leaf_count(archive.namelist())
            if count != len(expected):
                raise ValueError(f"it holds {count} arrays, the model has {len(expected)} "
                                 "(and a header)")
            header = _header(archive, config)
            leaves = [_read_member(archive, f"leaf{i}", leaf.dtype, leaf.shape)
                      for i, leaf in enumerate(expected)]
    except _DAMAGE as error:
        raise UnreadableCheckpoint(_unreadable(path, _damage(error))) from None
    _check_run(path, header, config)
    return header, leaves


def restored_rng(header: dict) -> np.random.Generator:
    """The training stream's generator in the state the header records; ValueError if
    that is not a generator's state."""
    rng = np.random.default_rng()
    try:
        rng.bit_generator.state = header["rng"]
    except (TypeError, ValueError, KeyError) as error:
        raise ValueError(f"its random state is not one: {error}") from None
    return rng


def _check_run(path: Path, header: dict, config: RunConfig) -> None:
    """UnreadableCheckpoint unless the header is of `config`'s run, at a step it has."""
    differ = settings_differ(header, config)
    if differ:
        raise UnreadableCheckpoint(
            f"resume: checkpoint {path} was written by a different run (settings differ: "
            f"{', '.join(differ)}); remove it to train this run from step 0, or run "
            "without --resume")
    try:
        restored_rng(header)
    except ValueError as error:
        raise UnreadableCheckpoint(_unreadable(path, str(error))) from None
    if not 0 <= header["step"] <= config.steps:
        raise UnreadableCheckpoint(_unreadable(
            path, f"step {header['step']} is outside 0..{config.steps}"))


def _damage(error: Exception) -> str:
    return f"cut short, corrupt or not a checkpoint: {error}"


def _unreadable(path: Path, reason: str) -> str:
    """The message of a checkpoint --resume cannot use, and what to do about it."""
    return (f"resume: checkpoint {path} is unreadable ({reason}); remove it to train this "
            "run from step 0, or run without --resume")
