"""Running a program file for a command (in run mode), confined by `--sandbox`."""
from __future__ import annotations

from pathlib import Path

from ..ast import Assign
from ..errors import RaspError, quote
from ..graph import Node
from ..parser import parse
from ..program import Program
from ..program_files import read_program
from ..repl_session import Session


def sandbox_folder(file: str | None, sandbox: bool) -> Path | None:
    """The folder `--sandbox` confines `load` to: FILE's folder, or the current folder
    when there is no FILE (the REPL); None without `--sandbox`."""
    if not sandbox:
        return None
    return Path(file).parent if file else Path()


def load_program(file: str, *, exact: bool = False, strict: bool = False,
                 sandbox: bool = False) -> Program:
    """Run `file` in run mode (no running example; what its statements display goes to
    stdout). `sandbox`: see rasp_sim.cli.options.add_sandbox_option."""
    return Session(exact=exact, strict=strict,
                   sandbox=sandbox_folder(file, sandbox)).run_file(file)


def load_named_node(file: str, name: str | None, *, strict: bool = False,
                    sandbox: bool = False) -> tuple[str, Node]:
    """Run `file` and return `name`'s s-op or selector (default: the last name the
    program assigned), for commands that only look at the graph."""
    return load_program(file, strict=strict, sandbox=sandbox).node(name)


def at_call_site(error: RaspError, file: str, name: str) -> RaspError:
    """An error located in a loaded file (the standard library, `programs/`) is reported
    at the user's statement that binds `name` (the call that led there), with the loaded
    file's line as a note: graph nodes built inside a library function remember only
    the library's lines."""
    if error.span is None or Path(error.span.file).resolve() == Path(file).resolve():
        return error
    try:
        program = parse(read_program(file), file)
    except RaspError:
        return error
    binding = [s for s in program.statements if isinstance(s, Assign) and name in s.names]
    if not binding:
        return error
    library = error.span
    error.message = f"{error.message} (at {library}, in a loaded library)"
    error.notes = [f"  note: {library}:", *quote(library), *error.notes]
    error.span = binding[-1].span
    return error
