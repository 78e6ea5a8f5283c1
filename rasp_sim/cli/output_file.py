"""Where a command's `-o` output goes: a file replaced atomically, or standard output.

`-o -` sends a picture, a page or program text to standard output (`rasp-sim report
m.npz -o - | gzip`), as Unix tools do; the model files (`compile`, `universal`) are
written only to files, since their format follows the file name's suffix and a proof
folder sits beside them.
"""
from __future__ import annotations

import argparse
import os
import sys
from contextlib import contextmanager
from typing import BinaryIO, Iterator, Sequence

from ..base.atomic_write import replacing
from . import UsageError
from .streams import OutputFailed

STANDARD_OUTPUT = "-"


def is_standard_output(output: str | os.PathLike) -> bool:
    return os.fspath(output) == STANDARD_OUTPUT


@contextmanager
def output_file(output: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary stream for the command's output: `output` replaced atomically when the
    block ends (rasp_sim.base.atomic_write), or standard output for `-` (a failed write there
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


def add_format_option(parser: argparse.ArgumentParser, formats: Sequence[str]) -> None:
    """--format, for -o -: a file's format is its suffix, standard output has none."""
    parser.add_argument("--format", choices=formats, metavar="FORMAT",
                        help=f"with -o -: what to write to standard output, one of "
                        f"{', '.join(formats)} (default {formats[0]})")


def output_format(output: str, chosen: str | None, formats: Sequence[str]) -> str:
    """The format the command writes `output` in: `chosen` (--format, default the first
    of `formats`) on standard output, the file name's suffix otherwise (UsageError if it
    is not one of `formats`, or if --format was given too)."""
    if is_standard_output(output):
        return chosen or formats[0]
    suffix = os.path.splitext(output)[1].lower().lstrip(".")
    if suffix not in formats:
        raise UsageError(f"-o {output}: the output is written as "
                         f"{', '.join('.' + name for name in formats)} (by the suffix), "
                         "or - for standard output")
    if chosen is not None:
        raise UsageError(f"--format is for -o - (standard output); a file's format is its "
                         f"suffix: {output}")
    return suffix
