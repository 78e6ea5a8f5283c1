"""The `rasp-sim` command line: one module per subcommand, each with a `register`.

Exit codes: 0 ok, 1 program error (any `RaspError`), 2 usage error (argparse's own).
Errors print as `file:line:col: kind: message` with the source line and a caret; a
Python traceback only with `--debug`. Only the chosen subcommand's module is imported
(the others are listed from a table), and subcommand modules import heavy dependencies
(tracr, jax) inside their handlers, so `rasp-sim run` starts fast.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
import warnings
from contextlib import contextmanager
from typing import Iterator, NamedTuple, Sequence

from ..base.errors import RaspError
from ..base.freed_memory import keep_freed_memory
from ..base.interrupts import sigint_handler
from .streams import OutputFailed, guarded_stdout, silence_stdout


class Command(NamedTuple):
    name: str
    module: str  # defines `register(subparsers)`, which adds the command's parser (and
    # its siblings in the same module) and sets `handler(args) -> int` as a default
    help: str  # as the module's parser says it: `rasp-sim --help` lists it unimported
    aliases: tuple[str, ...] = ()
    blas_threads: bool = False  # multiplies big matrices: OpenBLAS may use every core


# The subcommands, in help order (tests/test_cli_main.py checks them against the modules).
COMMANDS: tuple[Command, ...] = (
    Command("run", "rasp_sim.cli.run", "evaluate a program's s-op on inputs"),
    Command("analyse", "rasp_sim.cli.analyse",
            "layers, heads per layer and head widths of an s-op", ("analyze",)),
    Command("draw", "rasp_sim.cli.analyse",
            "draw an s-op's graph, one band per layer (.svg, .png, .pdf or .dot)"),
    Command("repl", "rasp_sim.cli.repl", "interactive RASP session with a running example"),
    Command("universal", "rasp_sim.cli.universal",
            "fixed universal transformers: build, embed a target, verify", blas_threads=True),
    Command("compile", "rasp_sim.cli.compile",
            "compile an s-op to transformer weights through tracr, validated",
            blas_threads=True),
    Command("from-tracr", "rasp_sim.cli.from_tracr",
            "write a tracr program (Python) as a .rasp file"),
    Command("verify", "rasp_sim.cli.compile",
            "re-run the validation of compiled weights against a program", blas_threads=True),
    Command("compress", "rasp_sim.cli.compress",
            "compress a compiled model's residual stream, certified on every input",
            blas_threads=True),
    Command("trace", "rasp_sim.cli.trace",
            "a compiled model's residual stream and attention on one input"),
    Command("report", "rasp_sim.cli.report",
            "a compiled model on one input, as one self-contained HTML page"),
    Command("circuit", "rasp_sim.cli.circuit",
            "a compiled model's ground-truth circuit, proved by ablation"),
    Command("experiment", "rasp_sim.cli.experiment",
            "train embeddings of frozen universal transformers (Dyck-1, k-hop)",
            blas_threads=True),
)

EXIT_OK, EXIT_PROGRAM_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command Ctrl-C stopped


class UsageError(Exception):
    """A bad combination of command-line arguments found after argparse (exit 2)."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with `command`'s full parser (its module imported) and every other
    command as a stub that only lists it; None: all stubs (enough for `--help`)."""
    parser = argparse.ArgumentParser(
        prog="rasp-sim",
        description="Run, analyse and compile RASP programs; build fixed universal transformers.",
    )
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = command_entry(command)
    for entry in COMMANDS:
        if chosen is not None and entry.module == chosen.module:
            if entry.name not in subparsers.choices:
                importlib.import_module(entry.module).register(subparsers)
        else:
            subparsers.add_parser(entry.name, aliases=entry.aliases, help=entry.help)
    _remember_command_parsers(parser)
    return parser


def _remember_command_parsers(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command's parser records itself in the arguments it parses, so that a
    UsageError shows the usage of the command given, as argparse's own errors do."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command_parser in action.choices.values():
                command_parser.set_defaults(usage_parser=command_parser)
                _remember_command_parsers(command_parser)


def command_entry(command: str | None) -> Command | None:
    """The table's entry for a subcommand name or alias (None: not a command)."""
    return next((c for c in COMMANDS if command in (c.name, *c.aliases)), None)


def one_blas_thread_unless_needed(command: str | None) -> None:
    """Before NumPy loads, limit OpenBLAS to one thread for the commands that need no
    more (not `blas_threads`). At import it starts a thread per core, which cost ~0.07 s of
    CPU a start here (a third of `rasp-sim run` on a one-line program), while the
    interpreter's products (one n x n selector per input) and a compiled model's forward
    passes ran no faster with two threads than with one (measured on 2 cores: 20,000
    inputs of `run --weights`, 1.1 s either way). A user's own setting wins."""
    entry = command_entry(command)
    if entry is not None and not entry.blas_threads and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand argv names: its first argument that is not an option (the main
    parser's options take no values)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


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
    argv = sys.argv[1:] if argv is None else list(argv)
    # Ctrl-C is remembered from the first step: NumPy and JAX are imported inside the
    # command, and an import that Ctrl-C stops can end in an error that no longer says so
    # (NumPy's C extension reports "could not import module datetime")
    with _remembering_interrupts() as interrupted:
        return _main(argv, interrupted)


def _main(argv: list[str], interrupted: list[bool]) -> int:
    debug = "--debug" in argv  # known before parsing, for errors that parsing raises
    args: argparse.Namespace | None = None
    try:
        with guarded_stdout():
            command = chosen_command(argv)
            one_blas_thread_unless_needed(command)
            keep_freed_memory()
            parser = build_parser(command)
            args = parser.parse_args(join_dash_values(argv, parser))
            with warnings.catch_warnings():
                # NumPy's floating-point warnings say nothing a user can act on: a
                # non-finite forward pass is an error naming its block (compiler/forward.py)
                # and RASP's float arithmetic is Python's (inf and nan are values).
                warnings.simplefilter("ignore", RuntimeWarning)
                code = _run(parser, args)
            if interrupted and not _handles_interrupts(args):
                raise KeyboardInterrupt  # one that a library swallowed: still an interruption
            sys.stdout.flush()  # a full disk shows here, not at exit
            return code
    except KeyboardInterrupt as stop:  # its text, if any, says what was done before it
        print(f"interrupted: {stop}" if str(stop) else "interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (BrokenPipeError, OutputFailed) as error:
        silence_stdout()
        if isinstance(error, BrokenPipeError) or error.broken_pipe:
            return EXIT_OK
        if sys.stderr is not None:
            print(f"rasp-sim: cannot write the output: {error}", file=sys.stderr)
        return EXIT_PROGRAM_ERROR
    except Exception as error:  # noqa: BLE001: the last resort; every known error is handled below
        if (interrupted and not _handles_interrupts(args)) or _raised_while_interrupted(error):
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        if debug:
            traceback.print_exc()
        print(f"rasp-sim: {unexpected_error_message(error)}", file=sys.stderr)
        return EXIT_PROGRAM_ERROR


def _handles_interrupts(args: argparse.Namespace | None) -> bool:
    """Whether the command says itself what Ctrl-C stopped (the REPL goes on after it)."""
    return bool(getattr(args, "handles_interrupts", False))


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        return int(args.handler(args) or EXIT_OK)
    except UsageError as error:
        usage_parser = getattr(args, "usage_parser", parser)
        usage_parser.print_usage(sys.stderr)
        print(f"{usage_parser.prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except RaspError as error:
        if args.debug:
            traceback.print_exc()
        print(error.format(), file=sys.stderr)
        return EXIT_PROGRAM_ERROR


@contextmanager
def _remembering_interrupts() -> Iterator[list[bool]]:
    """SIGINT raises KeyboardInterrupt as usual, and is also remembered (the list yielded
    becomes non-empty): a KeyboardInterrupt raised inside a callback the interpreter
    ignores (JAX's garbage-collection callback, the import system's module-lock callback)
    is otherwise lost, and the interrupted command ran on to exit 0. Python's "Exception
    ignored" traceback for such a KeyboardInterrupt is not printed: the command says
    "interrupted" once. Only the main thread can set the handler; a SIGINT that is
    ignored stays ignored."""
    seen: list[bool] = []

    def remember(signum: int, frame: object) -> None:
        seen.append(True)
        raise KeyboardInterrupt

    def report_unraisable(unraisable: sys.UnraisableHookArgs) -> None:
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            previous_hook(unraisable)

    with sigint_handler(remember) as installed:
        if not installed:
            yield seen
            return
        previous_hook, sys.unraisablehook = sys.unraisablehook, report_unraisable
        try:
            yield seen
        finally:
            sys.unraisablehook = previous_hook


def _raised_while_interrupted(error: BaseException) -> bool:
    """Whether `error` was raised while handling a KeyboardInterrupt: a library that
    catches what a Ctrl-C interrupted and raises its own error (lark wraps exceptions
    raised while it builds its parser) was interrupted, not broken."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def unexpected_error_message(error: BaseException) -> str:
    """What the CLI says about an exception no error handling expected: resource
    exhaustion gets its own message, anything else is a bug to report."""
    if isinstance(error, MemoryError):
        return ("resource limit: out of memory; lower --memory-limit (batches are split to "
                "fit it) or give smaller inputs")
    if isinstance(error, RecursionError):
        return ("resource limit: maximum recursion depth exceeded (a value or program "
                "nested too deeply)")
    return f"internal error: {type(error).__name__}: {error} (please report)"
