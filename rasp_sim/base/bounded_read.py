"""Reading the files rasp-sim did not write itself in this run: bounded, and never blocking.

Model files, proof records, experiment results and checkpoints can be swapped or forged
between runs. Every such reader goes through `read_bytes` / `read_json`: only regular
files are opened (a FIFO would block forever, a device like /dev/zero never ends), the
size is checked on the open descriptor before anything is read, and JSON nesting is
bounded before the parser sees it (Python's json recurses, and a deeply nested file ends
in a RecursionError). Failures are `UnreadableFile`, whose message says why; each caller
wraps it in its own located error (a model file, a proof record, an experiment result).
"""
from __future__ import annotations

import json
import os
import re
from typing import Any

import numpy as np

from .program_files import FileTooLarge, open_regular, os_reason, read_open_file

# JSON rasp-sim writes nests a few levels deep (a record of lists of lists); 64 leaves
# room for any such file and stays far below the parser's recursion limit.
MAX_JSON_DEPTH = 64

# A JSON string (escapes included); what lies between strings is structure.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


class UnreadableFile(Exception):
    """A file that cannot be read as asked: missing, not a regular file, too large, not
    UTF-8, not JSON, or nested too deeply. The message names the reason, not the path
    (callers name the file in their own words)."""


def read_bytes(path: str | os.PathLike, what: str, max_bytes: int) -> bytes:
    """The contents of the regular file `path`, at most `max_bytes` long. `what` names
    the kind of file in the messages ("model", "proof record", ...)."""
    try:
        fd, info = open_regular(path, what)
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        raise UnreadableFile(os_reason(error)) from None
    try:
        return read_open_file(fd, info, max_bytes)
    except FileTooLarge as error:
        raise UnreadableFile(f"the file has {error.size}, above the limit of "
                             f"{max_bytes:,} bytes") from None
    except OSError as error:
        raise UnreadableFile(os_reason(error)) from None
    finally:
        os.close(fd)


def read_json(path: str | os.PathLike, what: str, max_bytes: int,
              max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in the regular file `path` (at most `max_bytes`, nested at most
    `max_depth` lists and objects deep)."""
    return parse_json(read_bytes(path, what, max_bytes), max_depth)


def parse_json(data: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value `data` spells, its nesting checked before it is parsed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnreadableFile(f"not UTF-8 text (byte {error.start:,})") from None
    depth = json_depth(data)
    if depth > max_depth:
        raise UnreadableFile(f"JSON nested {depth:,} levels deep, above the limit of "
                             f"{max_depth} (rasp_sim.base.bounded_read.MAX_JSON_DEPTH)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise UnreadableFile(f"not valid JSON: {error.msg} at line {error.lineno}, "
                             f"column {error.colno}") from None
    except RecursionError:  # cannot happen below MAX_JSON_DEPTH; kept as a clear error
        raise UnreadableFile("JSON nested too deeply to parse") from None


def json_depth(data: bytes) -> int:
    """How many lists and objects deep the JSON text `data` nests (0 for an atom).
    Strings are removed first, so brackets inside them do not count; the running depth
    is a cumulative sum in NumPy (a Python loop over a large file takes seconds)."""
    structure = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    steps = (np.isin(structure, (ord("["), ord("{"))).astype(np.int64)
             - np.isin(structure, (ord("]"), ord("}"))))
    return int(np.cumsum(steps).max(initial=0))
