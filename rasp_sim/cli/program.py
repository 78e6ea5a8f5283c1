"""Running a program file for a command (in run mode), confined by `--sandbox`."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..base.errors import RaspError
from ..evaluation.evaluate import DEFAULT_MEMORY_LIMIT
from ..core.graph import Node
from ..language.program import Program
from ..language.repl_session import Session


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


def run_statements(file: str, name: str | None, *, exact: bool = False,
                   strict: bool = False, sandbox: bool = False, example: Any = None,
                   strict_statements: bool = False,
                   memory_limit: int = DEFAULT_MEMORY_LIMIT,
                   command: str = "run") -> Program:
    """Run `file` for `rasp-sim COMMAND` (run, analyse, draw), going on past failing
    statements (rasp_sim.language.run_session): lazily without `example`, as the original with
    it. The failures are reported on stderr, and so is what the statements display
    (`show example`: stdout is the command's output); a RaspError (saying why) if the
    target `name` (None: the last name assigned) cannot be computed. `memory_limit`:
    --memory-limit, a share of which bounds the program's atom-level values
    (rasp_sim.base.limits.AtomBudget)."""
    from ..language.run_session import FaithfulSession, LazySession

    options: dict[str, Any] = dict(exact=exact, strict=strict, errors=sys.stderr,
                                   output=sys.stderr, sandbox=sandbox_folder(file, sandbox),
                                   memory_limit=memory_limit)
    session: FaithfulSession | LazySession
    if example is None:
        session = LazySession(command=command, **options)
    else:
        session = FaithfulSession(example=example, **options)
    program = session.run_file(file)
    refusal = session.report(program, name, strict_statements)
    if refusal is not None:
        raise RaspError(refusal)
    return program


def load_named_node(file: str, name: str | None, *, strict: bool = False,
                    sandbox: bool = False) -> tuple[str, Node]:
    """Run `file` and return `name`'s s-op or selector (default: the last name the
    program assigned), for commands that only look at the graph."""
    return load_program(file, strict=strict, sandbox=sandbox).node(name)
