"""Where a command's `-o` output goes: a file replaced atomically, or standard output.

`-o -` sends a picture, a page or program text to standard output (`rasp-sim report
m.npz -o - | gzip`), as Unix tools do; the model files (`compile`, `universal`) are
written only to files, since their format follows the file name's suffix and a proof
folder sits beside them.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import BinaryIO, Iterator

from ..atomic_write import replacing
from .streams import OutputFailed

STANDARD_OUTPUT = "-"


def is_standard_output(output: str | os.PathLike) -> bool:
    return os.fspath(output) == STANDARD_OUTPUT


@contextmanager
def output_file(output: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary stream for the command's output: `output` replaced atomically when the
    block ends (rasp_sim.atomic_write), or standard output for `-` (a failed write there
    is OutputFailed, which the CLI reports in one line, as for any printed result)."""
    if not is_standard_output(output):
        with replacing(output) as handle:
            yield handle
        return
    sys.stdout.flush()  # text printed before comes first
    stream = sys.stdout.buffer
    try:
        yield stream
        stream.flush()
    except OSError as error:
        raise OutputFailed(error) from None


def write_output(output: str | os.PathLike, data: bytes) -> None:
    with output_file(output) as handle:
        handle.write(data)


def written(output: str | os.PathLike) -> str:
    """How a message names where the output went."""
    return "standard output" if is_standard_output(output) else os.fspath(output)
