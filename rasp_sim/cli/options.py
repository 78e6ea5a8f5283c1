"""Every option more than one command takes, defined once, and the rule that an option
which does not apply to the chosen mode is a usage error rather than silently ignored.

Only argparse and the standard library here: every subcommand's parser imports it.
"""
from __future__ import annotations

import argparse
import os
from decimal import Decimal, InvalidOperation
from typing import Mapping

from ..base.counts import MAX_SIZE
from . import UsageError

_SIZE_UNITS = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 10**3,
               "mb": 10**6, "gb": 10**9, "tb": 10**12, "b": 1, "": 1}


def parse_size(text: str) -> int:
    """'4GiB', '512MiB', '100000', '1.5e9' -> bytes (an argparse type). Decimal, so that
    '1e400' or 'inf' is refused as too large rather than overflowing a float."""
    lowered = text.strip().lower()
    number = lowered.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = lowered[len(number):]
    invalid = argparse.ArgumentTypeError(
        f"invalid size {text!r}: use a positive number of bytes or e.g. 512MiB, 4GiB")
    try:
        amount = Decimal(number)
        scale = _SIZE_UNITS[unit]
    except (InvalidOperation, KeyError):
        raise invalid from None
    # Compared before multiplying: Decimal('1e999999999') * 1024 overflows.
    if amount.is_finite() and amount > MAX_SIZE // scale:
        raise argparse.ArgumentTypeError(
            f"size {text!r} is larger than any machine's memory (at most 2**63 - 1 bytes)")
    if not amount.is_finite() or amount <= 0 or amount * scale < 1:
        raise invalid
    return int(amount * scale)


# ------------------------------------------------------------------ the RASP language


def add_exact_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exact", action="store_true",
                        help="exact rational arithmetic (fractions) instead of float64")


def add_strict_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--strict", action="store_true",
                        help="disable every extension: accept only what the original RASP "
                        "accepts")


def add_sandbox_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sandbox", action="store_true",
                        help="for programs you did not write: `load` reads only .rasp files "
                        "in the program's folder (subfolders included) and the bundled "
                        "library; paths that escape it (.., absolute, symlinks) are refused")


def add_language_options(parser: argparse.ArgumentParser) -> None:
    """The arithmetic and dialect options of every command that evaluates RASP programs."""
    add_exact_option(parser)
    add_strict_option(parser)
    add_sandbox_option(parser)


# ------------------------------------------------------------------ what to run, on what


def add_name_option(parser: argparse.ArgumentParser,
                    help: str = "the s-op or selector (default: the last one assigned)",
                    required: bool = False) -> None:
    parser.add_argument("--name", required=required, help=help)


def add_name_options(parser: argparse.ArgumentParser) -> None:
    """`--name NAME`, and NAME as an optional positional after FILE (its older spelling);
    `chosen_name` reads them."""
    parser.add_argument("positional_name", nargs="?", metavar="NAME",
                        help="the same as --name NAME")
    add_name_option(parser)


def chosen_name(args: argparse.Namespace) -> str | None:
    """The NAME of `add_name_options` (None: the last one assigned)."""
    if args.positional_name is not None and args.name is not None:
        raise UsageError("give the name once: NAME or --name NAME, not both")
    return args.name if args.name is not None else args.positional_name


def add_memory_limit_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--memory-limit", type=parse_size, default=parse_size("4GiB"),
                        metavar="SIZE", help=f"largest {what} (default 4GiB)")


def add_input_options(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", action="extend", nargs="+", dest="input_texts",
                        metavar="TEXT",
                        help="inputs: each a JSON list such as '[3, 1, 2]', or text whose "
                        "characters are the tokens (several after one --input, or repeat it)")
    source.add_argument("--inputs", metavar="FILE",
                        help="a file with one input per line (JSON lists or plain text)")


def add_example_input_option(parser: argparse.ArgumentParser, help: str) -> None:
    """One input (draw's labels), parsed like each input of `add_input_options`."""
    parser.add_argument("--input", metavar="TEXT", help=help)


def add_unvalidated_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-unvalidated", action="store_true",
                        help="use a compiled model that is not validated (written by "
                        "compile --force), with a warning; refused otherwise")


def add_json_option(parser: argparse.ArgumentParser,
                    help: str = "print the result as JSON") -> None:
    parser.add_argument("--json", action="store_true", help=help)


# ------------------------------------------------------------------ applicability


def refuse_options(args: argparse.Namespace, why_not: Mapping[str, str], mode: str) -> None:
    """A UsageError for the first option given (not False or None) among `why_not`'s
    destinations, which do not apply to `mode`: "--exact does not apply to --weights
    (why)"."""
    for dest, why in why_not.items():
        if getattr(args, dest) not in (None, False):
            flag = "--" + dest.replace("_", "-")
            raise UsageError(f"{flag} does not apply to {mode} ({why})")


def check_output(output: str, *inputs: str | None, stream_ok: bool = False) -> None:
    """-o, before any work: it may not name one of the command's input files (writing it
    would destroy the input: UsageError, exit 2), and must be a path rasp-sim may replace,
    a regular file or nothing yet (a device, FIFO, socket or folder is refused, a link is
    followed: rasp_sim.base.atomic_write.writable). `-` is standard output where the command
    can write there (`stream_ok`; rasp_sim/cli/output_file.py), else a UsageError."""
    from ..base.atomic_write import writable
    from .output_file import is_standard_output

    if not output:
        raise UsageError("-o '': the output needs a file name")
    if is_standard_output(output):
        if not stream_ok:
            raise UsageError("-o -: this command writes a model file, whose format follows "
                             "its name's suffix; give a file name (-o - is for pictures, "
                             "pages and program text)")
        return
    for given in inputs:
        if given is None:
            continue
        try:
            same = os.path.samefile(output, given)
        except OSError:  # either does not exist (yet): compare the paths themselves
            same = os.path.realpath(output) == os.path.realpath(given)
        if same:
            raise UsageError(f"-o {output}: is the input file {given}; writing it would "
                             "destroy the input; choose another output path")
    writable(output)


def checked_scheduler(address: str,
                      install_hint: str = "pip install 'rasp-sim[compile]' or "
                      "'rasp-sim[train]'") -> str:
    """A Dask scheduler address, PROTOCOL://HOST:PORT or HOST:PORT (a bare word, a path
    or a scheduler file would be read as something else by Dask), that answers as a Dask
    scheduler: checked before any work, within rasp_sim.base.dask_cluster.PROBE_SECONDS
    (ClusterError otherwise, saying whether it is unreachable or not Dask)."""
    from rasp_sim.base.dask_cluster import SCHEDULER_ADDRESS, probe_scheduler

    if not SCHEDULER_ADDRESS.fullmatch(address):
        raise UsageError(f"--scheduler {address!r}: expected a Dask scheduler address such "
                         "as tcp://host:8786 (PROTOCOL://HOST:PORT or HOST:PORT)")
    probe_scheduler(address, install_hint)
    return address
