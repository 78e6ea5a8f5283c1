"""The `rasp-sim` command line: one module per subcommand, each with a `register`.

Exit codes: 0 ok, 1 program error (any `RaspError`), 2 usage error (argparse's own).
Errors print as `file:line:col: kind: message` with the source line and a caret; a
Python traceback only with `--debug`. Subcommand modules import heavy dependencies
(tracr, jax) inside their handlers, so `rasp-sim run` starts fast.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from typing import Sequence

from ..errors import RaspError

# The subcommand modules, in help order; each defines `register(subparsers)`, which
# adds its parser and sets `handler(args) -> int` as a default.
COMMANDS: tuple[str, ...] = (
    "rasp_sim.cli.run",
    "rasp_sim.cli.analyse",
    "rasp_sim.cli.repl",
    "rasp_sim.cli.universal",
    "rasp_sim.cli.compile",
    "rasp_sim.cli.experiment",
)

EXIT_OK, EXIT_PROGRAM_ERROR, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad combination of command-line arguments found after argparse (exit 2)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rasp-sim",
        description="Run, analyse and compile RASP programs; build fixed universal transformers.",
    )
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module_name in COMMANDS:
        importlib.import_module(module_name).register(subparsers)
    return parser


# Options whose value may start with "-" (a vocabulary such as -1,0,1, a range -5,5): argparse reads
# such a value as an unknown option unless it is written --vocab=-1,0,1.
DASH_VALUE_OPTIONS = ("--vocab", "--token-range")


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of `parser` and its subcommands' parsers."""
    found: set[str] = set()
    for action in parser._actions:
        found.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


def join_dash_values(argv: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """argv with `--vocab VALUE` joined into `--vocab=VALUE` where VALUE starts with '-'
    and is not one of the parser's options, so `--vocab -1,0,1` works like
    `--vocab=-1,0,1`."""
    known = _option_strings(parser)
    out: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        if arg == "--":  # everything after it is positional: leave it alone
            return out + list(argv[index:])
        following = argv[index + 1] if index + 1 < len(argv) else None
        if (arg in DASH_VALUE_OPTIONS and following is not None and following.startswith("-")
                and following.split("=", 1)[0] not in known):
            out.append(f"{arg}={following}")
            index += 2
        else:
            out.append(arg)
            index += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(join_dash_values(sys.argv[1:] if argv is None else argv, parser))
    try:
        return int(args.handler(args) or EXIT_OK)
    except UsageError as error:
        parser.print_usage(sys.stderr)
        print(f"rasp-sim: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except RaspError as error:
        if args.debug:
            traceback.print_exc()
        print(error.format(), file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
