"""`rasp-sim repl`: the interactive read-eval-print loop.

It behaves like the original's REPL (docs/language.md): every s-op or selector is
evaluated on the running example as it is defined, and a definition that fails there is
reported and not bound. Lines accumulate until they form complete statements (the `.. `
prompt); a syntax error discards the accumulated text. Errors never end the session;
Ctrl-C interrupts the running statement (or discards the unfinished input at the
prompt) and keeps the session; end of input (Ctrl-D) or `exit` ends it.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO

from ..base.errors import RaspError, RaspResourceError, Source, Span
from ..base.program_files import MAX_PROGRAM_BYTES
from .program import sandbox_folder
from .options import add_language_options
from .repl_draw import DRAW_FOLDER, DRAW_FORMATS

if TYPE_CHECKING:  # imported by the handler: `rasp-sim --help` stays light
    from ..language.repl_session import ReplSession

# The original's banner and prompts; a continuation line is indented by two spaces for
# each `def` in the statement so far, as the original indents it.
BANNER = "RASP 0.1\nrunning example is: hello"
PROMPT, CONTINUATION = ">> ", ".. "
# Longest line read from piped input: a statement has at most 10,000 tokens
# (rasp_sim.base.source_limits), so a longer line is not a program; without a bound, a stream
# with no line break (/dev/zero) would be read whole into memory.
MAX_LINE_CHARS = 2**20


def history_file() -> Path | None:
    """Where an interactive session keeps its history: $RASP_SIM_HISTORY, else
    ~/.rasp_sim_history; None (no history) when there is no home folder (HOME unset and
    no passwd entry, as in some containers), where Path.home() raises."""
    if "RASP_SIM_HISTORY" in os.environ:
        return Path(os.environ["RASP_SIM_HISTORY"])
    path = os.path.expanduser("~/.rasp_sim_history")  # left as is without a home
    return None if path.startswith("~") else Path(path)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "repl", help="interactive RASP session with a running example",
        description="An interactive RASP session. Definitions are checked on the running "
        "example (default \"hello\"; change it with `set example ...`). Exit with `exit`, "
        "`quit` or end of input.",
    )
    parser.add_argument("file", nargs="?", help="a program to run before the first prompt")
    parser.add_argument("--draw-dir", default=DRAW_FOLDER, metavar="DIR",
                        help=f"where `draw(x);` writes its pictures (default {DRAW_FOLDER}, "
                        "as the original)")
    parser.add_argument("--draw-format", choices=DRAW_FORMATS, default=DRAW_FORMATS[0],
                        help=f"the pictures' format (default {DRAW_FORMATS[0]})")
    add_language_options(parser)
    # Ctrl-C ends the statement being run, not the session (main exits 130 otherwise)
    parser.set_defaults(handler=run_repl, handles_interrupts=True)


def run_repl(args: argparse.Namespace) -> int:
    from ..language.repl_session import ReplSession
    from .repl_draw import picture_writer

    repl = ReplSession(exact=args.exact, strict=args.strict,
                       sandbox=sandbox_folder(args.file, args.sandbox))
    repl.interpreter.draw_hook = picture_writer(args.draw_dir, args.draw_format,
                                                repl.interpreter.exact, sys.stdout)
    interactive = sys.stdin.isatty()
    if interactive:
        _enable_history()
    print(BANNER)  # the original's, also when stdin is piped (its transcripts show it)
    if args.file:
        _report_errors(lambda: repl.run_file_going_on(args.file), sys.stdout)
    try:
        session(repl, _line_reader(interactive), sys.stdout)
    except RaspResourceError as error:  # input that is not a program: the session ends
        print(error.format(), file=sys.stderr)
        return 1
    return 0


def session(repl: ReplSession, read_line: Callable[[str], str | None], out: TextIO) -> None:
    """Read statements with `read_line(prompt)` (None at end of input) and run them.

    As in the original, a blank or comment line before a statement starts one (the next
    prompt is `.. `), and end of input prints a line break (`exit` does not)."""
    from ..language.parser import IncrementalCheck

    pending: list[str] = []
    pending_chars = 0
    continuing = False  # a blank line was read: the statement has begun
    check = IncrementalCheck()
    while not repl.exit_requested:
        try:
            line = read_line(_prompt(pending) if pending or continuing else PROMPT)
        except KeyboardInterrupt:  # at the prompt: drop the unfinished input, as Python
            print(file=out)
            pending, pending_chars, continuing, check = [], 0, False, IncrementalCheck()
            continue
        if line is None:
            print(file=out)
            break
        if not pending and _is_blank(line):
            continuing = True
            continue
        pending.append(line)
        pending_chars += len(line) + 1
        if pending_chars > MAX_PROGRAM_BYTES:  # an unfinished statement of blank lines
            raise RaspResourceError(
                f"an unfinished statement of more than {MAX_PROGRAM_BYTES:,} characters "
                "(rasp_sim.base.program_files.MAX_PROGRAM_BYTES)",
                Span.whole_file("<stdin>"))
        if check.add_line(line):
            continue
        text = "\n".join(pending) + "\n"
        pending, pending_chars, continuing, check = [], 0, False, IncrementalCheck()
        _report_errors(lambda: _run_chunk(repl, text, out), out)


def _is_blank(line: str) -> bool:
    """A line the original reads as empty: blank, or a comment."""
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _prompt(pending: list[str]) -> str:
    """The continuation prompt: two spaces more for each `def` word so far (the original
    counts the whitespace-separated words `def` of the statement's non-comment lines)."""
    depth = sum(line.split().count("def") for line in pending if not _is_blank(line))
    return CONTINUATION + "  " * depth


def _run_chunk(repl: ReplSession, text: str, out: TextIO) -> None:
    """Parse a complete chunk of input and run its statements; one that fails is
    reported and the next runs (Ctrl-C stops them all)."""
    from ..language.parser import parse

    program = parse(text, "<repl>", strict=repl.interpreter.strict)
    for statement in program.statements:
        try:
            repl.execute(statement)
        except RaspError as error:
            print(error.format(), file=out)
        if repl.exit_requested:
            break


def _report_errors(action: Callable[[], object], out: TextIO) -> None:
    """Run `action`; a RaspError is printed, Ctrl-C (KeyboardInterrupt) stops it and
    prints `interrupted`: neither ends the session, and earlier definitions stay."""
    try:
        action()
    except RaspError as error:
        print(error.format(), file=out)
    except KeyboardInterrupt:
        print("interrupted", file=out)


def _line_reader(interactive: bool) -> Callable[[str], str | None]:
    lines = 0

    def read(prompt: str) -> str | None:
        nonlocal lines
        lines += 1
        try:
            if interactive:
                return input(prompt)
            sys.stdout.write(prompt)  # as input() writes it when stdin is piped
            sys.stdout.flush()
            return _read_piped(lines)
        except EOFError:
            return None

    return read


def _read_piped(number: int) -> str:
    line = sys.stdin.readline(MAX_LINE_CHARS + 1)
    if not line:
        raise EOFError
    if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
        span = Span(Source("<stdin>"), number, MAX_LINE_CHARS + 1, number, MAX_LINE_CHARS + 2)
        raise RaspResourceError(f"a line of more than {MAX_LINE_CHARS:,} characters "
                                "(rasp_sim.cli.repl.MAX_LINE_CHARS): not a program", span)
    return line.rstrip("\n")


def _enable_history() -> None:
    path = history_file()
    if path is None:
        return
    try:
        import atexit
        import readline
    except ImportError:  # readline is missing on some platforms: history is a nicety
        return
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(10_000)
    atexit.register(_save_history, readline, path)


def _save_history(readline, path: Path) -> None:
    try:
        readline.write_history_file(path)
    except OSError:
        pass
