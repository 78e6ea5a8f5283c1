"""Reading a training checkpoint back, trusting nothing in it.

A checkpoint (train.py's save_checkpoint) is an .npz archive: `__header__` (JSON as uint8)
and `leaf0`..`leafN-1`, the parameters and optimizer state in JAX's flattening order.
Writes are atomic (rasp_sim/atomic_write.py), so a checkpoint rasp-sim wrote is whole; one
cut short, damaged or forged by other means is UnreadableCheckpoint: every leaf's .npy
header is checked against the shape and dtype the run expects before its data is read
(so a lying header costs no memory), and the JSON header's fields are type-checked.
"""
from __future__ import annotations

import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ExperimentError

HEADER = "__header__"
# what reading a damaged archive raises: a bad zip or CRC, a cut-off stream, a bad .npy
_DAMAGE = (OSError, EOFError, zipfile.BadZipFile, zlib.error, ValueError, KeyError)
# the header's fields and their JSON types ("window" is absent from older checkpoints)
_FIELDS: dict[str, type | tuple[type, ...]] = {
    "config": dict, "step": int, "curves": list, "elapsed": (int, float), "rng": dict}


class UnreadableCheckpoint(ExperimentError):
    """A checkpoint that is cut short, corrupt or not one: --resume starts the run again."""


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
    header = json.loads(raw.decode("utf-8"))
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


def read_checkpoint(path: Path, expected: list[np.ndarray]) -> tuple[dict, list[np.ndarray]]:
    """(header, leaves) of the checkpoint at `path`, whose leaves must have the shapes and
    dtypes of `expected` (the run's own); UnreadableCheckpoint otherwise."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = sorted(archive.namelist())
            wanted = sorted([f"{HEADER}.npy", *(f"leaf{i}.npy" for i in range(len(expected)))])
            if names != wanted:
                raise ValueError(f"it holds {len(names)} arrays, the model has "
                                 f"{len(expected)} (and a header)")
            header = _checked_header(
                _read_member(archive, HEADER, np.dtype(np.uint8), None).tobytes())
            leaves = [_read_member(archive, f"leaf{i}", leaf.dtype, leaf.shape)
                      for i, leaf in enumerate(expected)]
    except _DAMAGE as error:
        raise UnreadableCheckpoint(f"checkpoint {path} is unreadable (cut short, corrupt "
                                   f"or not a checkpoint: {error})") from None
    return header, leaves
