"""Running programs for people: what statements display, and the REPL's checks.

- `Session(*, exact=False, strict=False, output=None, example=None, sandbox=None,
  memory_limit=DEFAULT_MEMORY_LIMIT)`:
  run mode (docs/language.md): only `draw` and `show example` display (a bare
  expression statement shows nothing, as in a file the original loads), nothing is
  checked, and a failing statement in a loaded file ends the load.
- `ReplSession(...)`: REPL mode: every s-op/selector subexpression is checked on the
  running example (default "hello"), a failing definition is not bound, every statement
  displays its result, and a loaded file's failing statements are shown and skipped.

`output` is a callable taking one line of text, or a stream with `write`; default stdout.
Both own an `Interpreter` (`interpreter`), which builds the graphs; `run_source`,
`run_file`, `execute`, `lookup` and `exit_requested` are its.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator, TextIO

from ..core import graph
from . import ast
from .definition_check import DefinitionCheck
from .display import Display
from .environment import Environment, is_exported
from ..base.errors import RaspError, Span
from ..evaluation.evaluate import DEFAULT_MEMORY_LIMIT
from .interpreter import Host, Interpreter, Result
from .program import Program


class Session(Host):
    """Run mode: shows what a program's statements display."""

    def __init__(
        self,
        *,
        exact: bool = False,
        strict: bool = False,
        output: Callable[[str], Any] | TextIO | None = None,
        example: Any = None,
        sandbox: str | os.PathLike | None = None,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
    ):
        self._write = _writer(output)
        self.interpreter = Interpreter(exact=exact, strict=strict, example=example,
                                       sandbox=sandbox, host=self, memory_limit=memory_limit)
        # The values of s-ops on the running example, kept while it stays the same.
        self._main_check = DefinitionCheck(exact=self.interpreter.exact)
        self.display = Display(self.interpreter.settings, self.interpreter.values_on,
                               example, example)

    # -- the interpreter's entry points

    def run_source(self, text: str, file: str = "<input>") -> Program:
        return self.interpreter.run_source(text, file)

    def run_file(self, path: str | os.PathLike) -> Program:
        return self.interpreter.run_file(path)

    def execute(self, statement: ast.Statement) -> None:
        self.interpreter.execute(statement)

    def lookup(self, name: str) -> Any:
        return self.interpreter.lookup(name)

    @property
    def exit_requested(self) -> bool:
        return self.interpreter.exit_requested

    # -- Host

    def known_values(self, node: graph.Node, example: Any) -> list | None:
        """On the running example, the definition check's known values are reused."""
        if example is self.interpreter.sop_example:
            return self._main_check.values(node, example)
        return None

    def show(self, statement: ast.Statement, results: list[Result]) -> None:
        """Only the statements that exist to display: an expression statement's value
        (`a("hello");`) is the REPL's answer, not a file's output (the original prints
        nothing for one in a file it loads; a program's output is what `run` prints)."""
        if isinstance(statement, (ast.Draw, ast.ShowExample)):
            for result in results:
                self._show(result)

    def _show(self, result: Result) -> None:
        self.display.sop_example = self.interpreter.sop_example
        self.display.selector_example = self.interpreter.selector_example
        if result.kind == "named":
            lines = self.display.named(result.name, result.value)
        elif result.kind == "applied":
            lines = self.display.applied(result.value)
        elif result.kind == "example":
            lines = self.display.example(_named(result))
        else:
            lines = ["\t\t!!ignoring input:", "\t " + result.value.format()]
        for line in lines:
            self._write(line)


class ReplSession(Session):
    """REPL mode: the definition check (6.14) and the display of every statement."""

    checking = True
    names_expressions = True

    def __init__(self, *, example: Any = None, **options: Any):
        # Graph values built by each statement being executed (innermost last), with the
        # application input in force when they were built; checked by `verify`.
        self._pending: list[list[tuple[graph.Node, Any, Span]]] = []
        self._backup_example: Any = None  # the input of an enclosing `e(input)` (6.14)
        self._going_on = False  # a failing statement of a program run is shown, not raised
        super().__init__(example="hello" if example is None else example, **options)
        self._input_check = DefinitionCheck(exact=self.interpreter.exact)

    def run_file_going_on(self, path: str | os.PathLike) -> Program:
        """Run a program file as the REPL's start (`rasp-sim repl FILE`): a statement that
        fails is shown and the next one runs, as `load` at the prompt does and as the
        original runs a file."""
        self._going_on = True
        try:
            return self.run_file(path)
        finally:
            self._going_on = False

    def statement_failed(self, statement: ast.Statement, error: RaspError) -> None:
        if not self._going_on:
            raise error
        self._write(error.format())

    def enter_statement(self) -> None:
        self._pending.append([])

    def leave_statement(self) -> None:
        self._pending.pop()

    def built(self, node: graph.Node, span: Span) -> None:
        self._pending[-1].append((node, self._backup_example, span))

    @contextlib.contextmanager
    def on_input(self, example: Any) -> Iterator[None]:
        saved, self._backup_example = self._backup_example, example
        try:
            yield
        finally:
            self._backup_example = saved

    def verify(self) -> None:
        """The definition check (6.14) of the graph values the current statement built,
        run before the statement has any effect.

        The original checks each subexpression as soon as it is built; checking them
        together at the end of the statement (and of each statement in a function body
        or loop) accepts and rejects the same statements, and evaluates the shared graph
        once instead of once per subexpression. A value built inside `e(input)` passes if
        it evaluates on `input` or, failing that, on the running example."""
        pending, self._pending[-1] = self._pending[-1], []
        first: dict[int, tuple[graph.Node, Any, Span]] = {}
        for entry in pending:
            first.setdefault(id(entry[0]), entry)
        unique = list(first.values())
        example = self.interpreter.sop_example
        self._check_on([e for e in unique if e[1] is None], example)
        for entry in unique:  # rare: built inside an application
            if entry[1] is None:
                continue
            try:
                self._check_on([entry], entry[1])
            except RaspError as on_input:
                try:
                    self._check_on([entry], example)
                except RaspError:
                    raise on_input from None

    def _check_on(self, entries: list[tuple[graph.Node, Any, Span]], example: Any) -> None:
        if entries and example is not None:
            main = example is self.interpreter.sop_example
            checker = self._main_check if main else self._input_check
            checker.check([(node, span) for node, _, span in entries], example)

    def show(self, statement: ast.Statement, results: list[Result]) -> None:
        for result in results:
            self._show(result)

    def load_failed(self, statement: ast.Statement, error: RaspError,
                    env: Environment) -> Result | None:
        return Result("error", value=error)  # the load goes on

    def loaded(self, results: list[Result]) -> None:
        """What a load prints: the bindings that reach the loader (public names, also a
        bare public name such as `tokens;`), `show example` and errors, but no other
        expression's value and no application or `draw` result; the last binding of each
        name, or every binding if any statement failed (as the original)."""
        results = [r for r in results if _shown_from_file(r)]
        if not any(r.kind == "error" for r in results):
            seen: set[str] = set()
            kept = []
            for r in reversed(results):
                if r.kind == "named":
                    if r.name in seen:
                        continue
                    seen.add(_named(r))
                kept.append(r)
            results = kept[::-1]
        for result in results:
            self._show(result)


def _named(result: Result) -> str:
    """The name of a named or example result (the kinds that always have one)."""
    assert result.name is not None, result.kind
    return result.name


def _shown_from_file(result: Result) -> bool:
    if result.kind == "named":
        return is_exported(_named(result))
    return result.kind in ("example", "error")


def _writer(output: Callable[[str], Any] | TextIO | None) -> Callable[[str], Any]:
    if output is None:
        return lambda line: print(line)
    if hasattr(output, "write"):
        return lambda line: output.write(line + "\n")
    return output
