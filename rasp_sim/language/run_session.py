"""`rasp-sim run`'s statement semantics: a program goes on past a failing statement, as
in the original, which reports the error and runs the next statement.

- `LazySession` (the default; no running example): a statement that fails as it runs
  binds nothing. Such an error cannot depend on the run's inputs, none of which is known
  yet (a type error, a missing `load` file, an error on an explicit `f("abc")`). The names
  it would have bound hold a `FailedBinding`, so that a later statement that uses one
  fails too instead of finding an older value. The target is then computed if it does not
  go back to a failed statement (the failures are warnings), and refused otherwise (they
  are errors). `draw` is skipped with a note: `run` draws no pictures. `analyse` and
  `draw` run a program this way too (`command` names the one running it).
- `FaithfulSession` (`run --example X`): the original's semantics, as the REPL has them:
  every statement is checked on the running example X; one that fails there is reported
  and binds nothing, the old binding staying in force; the target is computed with the
  bindings that survived.

Both report on `errors` (stderr) and display what run mode displays on stdout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TextIO

from . import ast
from .environment import Environment, FailedBinding, FailedNameError
from ..base.errors import RaspError, RaspNameError, Span, source_line, warning_text
from .interpreter import Result
from .program import Program
from .repl_session import ReplSession, Session



def draw_note(command: str) -> str:
    """Why a program's `draw(x);` is skipped by `rasp-sim COMMAND`."""
    if command == "draw":
        return "draw skipped: `rasp-sim draw` draws NAME, not the program's draw statements"
    return (f"draw skipped: `rasp-sim {command}` draws no pictures (`rasp-sim draw FILE "
            "NAME` does)")


@dataclass
class Failure:
    """A statement that failed: its error, and the earlier failures it goes back to: the
    one that left a name it used without a value, or for an undefined name every failed
    `load` before it (which might have defined it)."""

    error: RaspError
    causes: list["Failure"]
    statement: ast.Statement
    refused_export: bool = False  # a loaded file's binding of a library name
    failed_load: bool = False


def assigned_names(statement: ast.Statement) -> tuple[str, ...]:
    """The names `statement` binds in its scope when it succeeds (a `for` loop binds its
    loop names and its body's; a `load` binds what its file defines: unknown here)."""
    if isinstance(statement, ast.Assign):
        return statement.names
    if isinstance(statement, ast.FunctionDef):
        return (statement.name,)
    if isinstance(statement, ast.For):
        return statement.names + tuple(n for s in statement.body for n in assigned_names(s))
    return ()


def _refused_export(error: RaspError, name: str) -> bool:
    """A loaded file's binding of a library name: made in the file, refused in its loader
    (the original keeps the file's binding for the rest of the file)."""
    return isinstance(error, RaspNameError) and error.message == f"Cannot set reserved name: {name}"


class LazySession(Session):
    """The default `run`: failing statements are recorded and skipped (see the module)."""

    def __init__(self, *, errors: TextIO, command: str = "run", **options: Any):
        super().__init__(**options)
        self._errors = errors
        self._command = command
        self.failures: list[Failure] = []

    def statement_failed(self, statement: ast.Statement, error: RaspError) -> None:
        self._fail(statement, error, self.interpreter.top)
        _note_target(self, statement)

    def load_failed(self, statement: ast.Statement, error: RaspError,
                    env: Environment) -> Result | None:
        self._fail(statement, error, env)
        return None

    def skips_draw(self, statement: ast.Draw) -> bool:
        print(f"{statement.span}: note: {draw_note(self._command)}", file=self._errors)
        return True

    def _fail(self, statement: ast.Statement, error: RaspError, env: Environment) -> None:
        names = assigned_names(statement)
        refused = [n for n in names if _refused_export(error, n)]
        causes = []
        if isinstance(error, FailedNameError):
            causes = [error.failure]
        elif isinstance(error, RaspNameError) and error.message.startswith("Undefined"):
            causes = [f for f in self.failures if f.failed_load]
        failure = Failure(error, causes, statement, bool(refused),
                          isinstance(statement, ast.Load))
        self.failures.append(failure)
        for name in names:
            if name not in refused:
                env.bind_failed(name, FailedBinding(statement.span, failure))

    def report(self, program: Program, name: str | None, strict_statements: bool) -> str | None:
        """Print the failures on `errors`; None if the target `name` (None: the last name
        assigned) can be computed, else why not. A failure the target goes back to is an
        error, the others are warnings (errors with `strict_statements`, which refuses
        any)."""
        target = program.last_name if name is None else name
        value = program.values.get(target) if target is not None else None
        chain = _causes(value.failure) if isinstance(value, FailedBinding) else []
        refused = bool(chain) or (strict_statements and bool(self.failures))
        for failure in self.failures:
            if any(failure is f for f in chain) or strict_statements:
                print(_error_text(failure), file=self._errors)
            elif failure.refused_export:
                print(warning_text(failure.error, "the loaded file keeps its own binding, "
                                   "the loader the library's (as in the original)"),
                      file=self._errors)
            else:
                unused = f": {target} does not depend on it" if target is not None else ""
                skipped = skipped_statement(failure.statement, failure.error)
                print(warning_text(failure.error, f"{skipped} is skipped{unused}"),
                      file=self._errors)
        if chain:
            refusal = f"{target} depends on a statement that failed (above)"
            if self._command == "run":  # the only command with --example
                refusal += (". With --example X, run follows the original instead: every "
                            "statement is checked on X, and one that fails keeps the old "
                            "binding")
            return refusal
        return _strictly_refused(len(self.failures)) if refused else None


def skipped_statement(statement: ast.Statement, error: RaspError) -> str:
    """How a report names the statement that failed: "the statement" where the error is
    located in it, else its location and line (an error inside a function's body is
    located there, far from the call whose statement is skipped)."""
    if error.span is None or _within(error.span, statement.span):
        return "the statement"
    line = (source_line(statement.span) or "").strip()
    return f"the statement at {statement.span} ({line})" if line else \
        f"the statement at {statement.span}"


def _error_text(failure: Failure) -> str:
    """A failure reported as an error, naming its statement where the error lies outside
    it."""
    skipped = skipped_statement(failure.statement, failure.error)
    note = [] if skipped == "the statement" else [f"  note: {skipped} fails"]
    return "\n".join([failure.error.format(), *note])


def _within(inner: Span, outer: Span) -> bool:
    return (inner.source == outer.source
            and (outer.line, outer.column) <= (inner.line, inner.column)
            and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))


def _causes(failure: Failure) -> list[Failure]:
    """`failure` and every failure it goes back to."""
    found: list[Failure] = []
    waiting = [failure]
    while waiting:
        current = waiting.pop()
        if all(current is not f for f in found):
            found.append(current)
            waiting += current.causes
    return found


def _note_target(session: Session, statement: ast.Statement) -> None:
    """A failed top-level assignment still names the default target (the last name
    assigned): the run computes what that name holds, not an earlier name."""
    if isinstance(statement, ast.Assign) and statement.names:
        session.interpreter.last_assigned_name = statement.names[-1]


class FaithfulSession(ReplSession):
    """`run --example X`: the original's statement semantics (see the module)."""

    def __init__(self, *, example: Any, errors: TextIO, **options: Any):
        super().__init__(example=example, **options)
        self._errors = errors
        self.failures: list[RaspError] = []

    def statement_failed(self, statement: ast.Statement, error: RaspError) -> None:
        self._report(statement, error)
        _note_target(self, statement)

    def load_failed(self, statement: ast.Statement, error: RaspError,
                    env: Environment) -> Result | None:
        self._report(statement, error)
        return None

    def _report(self, statement: ast.Statement, error: RaspError) -> None:
        self.failures.append(error)
        skipped = skipped_statement(statement, error)
        print(warning_text(error, f"{skipped} is skipped and binds nothing (as in the "
                           "original): an earlier binding of its names stays"),
              file=self._errors)

    def show(self, statement: ast.Statement, results: list[Result]) -> None:
        if isinstance(statement, ast.Draw):
            print(f"{statement.span}: note: {draw_note('run')}", file=self._errors)
            return
        Session.show(self, statement, results)  # run mode's display, not the REPL's

    def loaded(self, results: list[Result]) -> None:
        """A load shows nothing in a run (its failures are reported as they happen)."""

    def report(self, program: Program, name: str | None, strict_statements: bool) -> str | None:
        """None if the target can be computed, else why not: every failure was reported
        as it happened; `strict_statements` refuses the program if any statement failed."""
        if strict_statements and self.failures:
            return _strictly_refused(len(self.failures))
        return None


def _strictly_refused(count: int) -> str:
    statements = "a statement" if count == 1 else f"{count:,} statements"
    return f"{statements} failed (above), and --strict-statements refuses the program"
