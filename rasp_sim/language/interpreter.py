"""The interpreter: walks the AST, manages scopes, and builds the lazy s-op graph.

Public API:

- `Interpreter(*, exact=False, strict=False, example=None, sandbox=None, host=None,
  memory_limit=DEFAULT_MEMORY_LIMIT)`
  - `exact`: float literals are Fractions and atom arithmetic is exact (`1/3*3 == 1`);
  - `strict`: no extensions (`exp`, `sum`, `aggregate (` ...: "Undefined variable");
  - `example`: the running example; none until the program runs `set example`;
  - `sandbox`: a folder: `load` reads only `.rasp` files inside it (subfolders included)
    or in the bundled library, after resolving symlinks and `..` (`--sandbox`);
  - `host`: who hears what the statements do (`Host`): the REPL's definition check and
    the display of results live there (`rasp_sim.language.repl_session`); by default nothing is
    checked or shown;
  - `memory_limit`: bytes (--memory-limit); a share of them bounds the atom-level values
    a program run builds (`budget`, a `rasp_sim.base.limits.AtomBudget`, renewed by each
    `run_source` and each `execute` at the REPL).
- `run_source(text, file)`, `run_file(path)`: run a whole program in the top scope
  (files are read by `rasp_sim.base.program_files.read_program`) and return it as a
  `rasp_sim.language.program.Program`, which evaluates in the mode it was built in.
- `execute(statement)`: run one parsed statement in the top scope (the REPL's entry).
- `lookup(name)`: a top-level binding (RaspNameError if unbound).
- `last_assigned_name`: the name of the last top-level assignment, or None.
- `sop_example`, `selector_example`: the running examples; `settings`: the display
  switches the program set; `exit_requested` after `exit`.
- `values_on(node, example)`: a node's values on one input, as applications compute them.
- `draw_hook`: optional callable `(sop, input)` called by `draw(...)` statements.

Every RaspError raised carries the span of the AST node at fault. The atom and operator
rules come from `rasp_sim.core.semantics` and `rasp_sim.language.operations`; evaluation of
graph nodes from `rasp_sim.evaluation.evaluate`.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.resources
import os
from collections import ChainMap
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from . import ast
from ..core import graph
from . import expression_names, operations
from .display import DisplaySettings
from .environment import BASE_RESERVED, Environment
from ..base.errors import (
    RaspError, RaspLoadError, RaspResourceError, RaspRuntimeError, RaspTypeError, Span,
    at_caller, source_line,
)
from ..evaluation.evaluate import DEFAULT_MEMORY_LIMIT, evaluate_one
from ..base.limits import (
    CALL_ITERATIONS, DICT_ENTRY_BYTES, LIST_ELEMENT_BYTES, AtomBudget, check_collection_length,
    recursion_limit,
)
from .parser import parse
from .program import Program
from ..base.program_files import read_program, sandbox_refusal
from .values import (
    Applied, Function, describe, is_atom, is_graph, kind_name, set_display_name,
)

# Deepest chain of RASP function calls before RaspResourceError. Python frames per RASP
# call are bounded (about a dozen), so the Python recursion limit is raised to fit.
MAX_CALL_DEPTH = 1000
_PYTHON_RECURSION_LIMIT = 40 * MAX_CALL_DEPTH

# The original loads its library as `load "RASP_support/rasplib";`, and a function is
# labelled by the load name of the file that defined it ("RASP_support/rasplib function").
LIBRARY_LOAD_NAME = "RASP_support/rasplib"


@functools.lru_cache(maxsize=None)
def _stdlib_program() -> ast.Program:
    """The standard library's AST, parsed once per process."""
    text = importlib.resources.files("rasp_sim.language").joinpath("stdlib.rasp").read_text()
    return parse(text, file="<stdlib>")


def _grown(size: int, element: Any, what: str, span: Span) -> int:
    """A comprehension's size after adding `element`: the elements of the strings, lists
    and dicts it holds, refused past MAX_COLLECTION_LENGTH (each is bounded alone, but a
    comprehension of a million 10-million-character strings is not)."""
    if isinstance(element, (str, list, dict)):
        size += len(element)
        try:
            check_collection_length(size, f"this {what} comprehension's elements")
        except RaspResourceError as error:
            raise error.with_span(span) from None
    return size


def _short_name(name: str) -> str:
    """A load name for a message: a 5,000-character one is cut."""
    return repr(name) if len(name) <= 80 else f"{name[:60]!r}... ({len(name):,} characters)"


def _library_folder() -> Path | None:
    try:
        return Path(str(importlib.resources.files("rasp_sim.programs")))
    except ModuleNotFoundError:
        return None


@dataclass
class Result:
    """What a statement produced for display: a named value, an application's values,
    the running example(s), or (in a loaded file at the REPL) an error."""

    kind: str  # "named" | "applied" | "example" | "error"
    name: str | None = None
    value: Any = None


class Host:
    """Whoever runs an interpreter and hears what its statements do: the REPL's
    definition check (docs/language.md) and the display of results
    (`rasp_sim.language.repl_session`). This default checks and shows nothing, for programs run
    only for their graph (the library, compile)."""

    # Whether `built`, `verify`, `enter_statement`, `leave_statement` and `on_input` are
    # called (the standard library is never checked).
    checking = False
    # Whether s-ops built by operators are named by their expression, as the original's
    # REPL shows them (`( indices + 1 )`), and `tokens` is the shared tokens node's name:
    # for display only, so other hosts keep the names their outputs use.
    names_expressions = False

    def enter_statement(self) -> None:
        """A statement (top-level, in a function body or loop, in a loaded file) starts."""

    def leave_statement(self) -> None:
        """The statement `enter_statement` announced has ended (or failed)."""

    def built(self, node: graph.Node, span: Span) -> None:
        """The expression at `span` built the s-op or selector `node`."""

    def verify(self) -> None:
        """The current statement has built all its values and is about to take effect."""

    def on_input(self, example: Any) -> ContextManager[None]:
        """Values built within are built for the application to `example`."""
        return contextlib.nullcontext()

    def known_values(self, node: graph.Node, example: Any) -> list | None:
        """`node`'s values on `example` if already known (else None: evaluated anew)."""
        return None

    def show(self, statement: ast.Statement, results: list[Result]) -> None:
        """A top-level statement ran and produced `results`."""

    def statement_failed(self, statement: ast.Statement, error: RaspError) -> None:
        """A top-level statement of a program run by `run_source` failed: raise to end
        the program, or return for the next statement to run (the original goes on)."""
        raise error

    def load_failed(self, statement: ast.Statement, error: RaspError,
                    env: Environment) -> Result | None:
        """A statement of a loaded file (running in `env`) failed: raise, or return for
        the load to go on (a Result is what the load shows for it)."""
        raise error

    def skips_draw(self, statement: ast.Draw) -> bool:
        """Whether `draw` statements are skipped unevaluated (a run with no example)."""
        return False

    def loaded(self, results: list[Result]) -> None:
        """A `load` ran the file whose statements produced `results`."""


class _Exit(Exception):
    """`exit`/`quit`: ends the current program (a loaded file, or the REPL)."""


class Interpreter:
    def __init__(
        self,
        *,
        exact: bool = False,
        strict: bool = False,
        example: Any = None,
        sandbox: str | os.PathLike | None = None,
        host: Host | None = None,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
    ):
        self.exact = exact
        self.strict = strict
        self.host = Host() if host is None else host
        self.sop_example: Any = example
        self.selector_example: Any = example
        self.settings = DisplaySettings()
        self.last_assigned_name: str | None = None
        self.exit_requested = False
        self.draw_hook: Callable[[graph.SOp, Any], None] | None = None
        self._checking = False  # the library is known good: the host checks what follows
        self._depth = 0
        # One budget per program run (a file with what it loads, a statement at the REPL
        # prompt, whose rebinding drops the old values): simpler to predict than tracking
        # which values are still alive, and it bounds the time spent too.
        self.budget = AtomBudget(memory_limit)
        self._running_program = False  # in run_source: its statements share one budget
        self._call_sites: list[Span] = []  # the spans of the calls being run, innermost last
        self._user_file: str | None = None  # the file of the top-level statement being run
        self._assigning = False
        self._files: list[Path] = []  # files being run, innermost last (for `load`)
        self._load_results: list[Result] = []  # what the loads in progress produced
        self._sandbox = None if sandbox is None else Path(sandbox).resolve()
        self._make_environments()
        self._checking = self.host.checking

    # ------------------------------------------------------------------ environments

    def _make_environments(self) -> None:
        values_env = Environment(name="base")
        for kind in ("str", "int", "float", "bool", "asis"):
            values_env.variables[f"tokens_{kind}"] = graph.Tokens(kind=kind, name=f"tokens_{kind}")
        values_env.variables["indices"] = graph.Indices(name="indices")
        values_env.variables["True"] = True
        values_env.variables["False"] = False
        # The library runs like a loaded file whose exports go to the base environment.
        self.base = Environment(values_env, name="base")
        library_env = Environment(values_env, name=LIBRARY_LOAD_NAME, exporter=self.base)
        for statement in _stdlib_program().statements:
            self._exec(statement, library_env)
        library_names = frozenset(self.base.variables)
        self.base.bind("tokens", values_env.variables["tokens_str"])
        if self.host.names_expressions:  # `tokens = tokens_str;` names it, as an assignment
            set_display_name(values_env.variables["tokens_str"], "tokens")
        self.top = Environment(
            self.base, name="console", reserved=BASE_RESERVED | library_names,
            on_bind=self._note_top_binding,
        )

    def _note_top_binding(self, name: str, value: Any) -> None:
        if self._assigning:
            self.last_assigned_name = name

    def lookup(self, name: str) -> Any:
        """The value of `name` in the top-level scope."""
        return self.top.lookup(name)

    @functools.cached_property
    def presence_selector(self) -> graph.Selector:
        """The all-true selector of every `atom in s-op` (one head for all of them). The
        original builds these on an internal selector of its own, not the library's
        `full_s`, so in one layer they take one head and the library's users another."""
        return operations.select(1, 1, "==", Span.whole_file("<built-in: atom in s-op>"))

    # ------------------------------------------------------------------ running

    def run_source(self, text: str, file: str = "<input>") -> Program:
        """Parse and run a whole program in the top-level scope; the program as it stands
        afterwards."""
        program = parse(text, file, strict=self.strict)
        self._files.append(Path(file))
        self.budget.renew()
        self._running_program = True
        try:
            for statement in program.statements:
                try:
                    self.execute(statement)
                except RaspError as error:
                    self.host.statement_failed(statement, error)
                if self.exit_requested:
                    break
        finally:
            self._files.pop()
            self._running_program = False
        return self.program(file)

    def run_file(self, path: str | os.PathLike) -> Program:
        return self.run_source(read_program(path), str(path))

    def program(self, source: str) -> Program:
        """The top-level names as they stand now, with the mode they were built in. The
        base scopes never change after the library is loaded, so only the top scope is
        copied. `out` (the last expression statement's value) is not one of its own names."""
        values = ChainMap(dict(self.top.variables), *_scope_chain(self.base))
        return Program(source=source, values=values, last_name=self.last_assigned_name,
                       exact=self.exact, strict=self.strict,
                       own_names=tuple(n for n in self.top.variables if n != "out"))

    def execute(self, statement: ast.Statement) -> None:
        """Run one statement in the top-level scope and let the host show its results."""
        self._user_file = statement.span.file
        if not self._running_program:  # a statement at the REPL prompt: a program of its own
            self.budget.renew()
        self._load_results = []  # drops what an interrupted load (Ctrl-C) left unprinted
        try:
            with recursion_limit(_PYTHON_RECURSION_LIMIT):
                results = self._exec(statement, self.top)
        except _Exit:
            self.exit_requested = True
            return
        except RecursionError:
            raise RaspResourceError(
                "Python recursion limit reached (the program nests too deeply)", statement.span
            ) from None
        except RaspError as error:
            raise self._at_statement(error, statement) from None
        self.host.show(statement, results)

    def values_on(self, node: graph.Node, example: Any) -> list:
        """`node`'s values on one input: a list of atoms, or rows of bools (values the
        host already knows are reused)."""
        known = self.host.known_values(node, example)
        if known is not None:
            return known
        return evaluate_one(node, _as_input(example), exact=self.exact)

    # ------------------------------------------------------------------ statements

    def _exec(self, statement: ast.Statement, env: Environment) -> list[Result]:
        method = _STATEMENTS[type(statement)]
        checking = self._checking
        if checking:
            self.host.enter_statement()
        try:
            return method(self, statement, env)
        except RaspError as error:
            raise error.with_span(statement.span)
        finally:
            if checking:
                self.host.leave_statement()

    def _exec_expr_statement(self, node: ast.ExprStatement, env: Environment) -> list[Result]:
        value = self._eval(node.expr, env)
        self._verify()
        if isinstance(value, Applied) and isinstance(node.expr, ast.Call):
            return [Result("applied", value=value)]
        name = node.expr.id if isinstance(node.expr, ast.Name) else "out"
        return [Result("named", name, value)]

    def _exec_assign(self, node: ast.Assign, env: Environment) -> list[Result]:
        values = [self._eval(v, env) for v in node.values]
        self._verify()
        value: Any = values[0] if len(values) == 1 else values
        if len(node.names) == 1:
            pairs = [(node.names[0], value)]
        else:
            if not isinstance(value, (list, str, dict)):
                raise RaspRuntimeError(
                    f"expected {len(node.names)} values, but got a single {kind_name(value)}"
                )
            if len(value) != len(node.names):
                raise RaspTypeError(f"expected {len(node.names)} values, but got: {len(value)}")
            pairs = list(zip(node.names, value))
        results = []
        self._assigning = True
        try:
            for name, v in pairs:
                env.bind(name, v)
                if is_graph(v):
                    set_display_name(v, name)
                results.append(Result("named", name, v))
        finally:
            self._assigning = False
        return results

    def _exec_def(self, node: ast.FunctionDef, env: Environment) -> list[Result]:
        function = Function(
            node.name, node.params, node.body, node.returns, env, env.name, node.span
        )
        env.bind(node.name, function)
        return [Result("named", node.name, function)]

    def _exec_for(self, node: ast.For, env: Environment) -> list[Result]:
        iterable = self._eval(node.iterable, env)
        self._verify()
        if not isinstance(iterable, (list, dict)):
            raise RaspTypeError(
                f"for loop needs to iterate over a list or dict, but got: {describe(iterable)}"
            )
        self._spend_iterations(f"this for loop of {len(iterable):,} iterations", len(iterable),
                               node.span)
        for item in list(iterable):
            self._bind_names(env, node.names, item)
            for statement in node.body:  # eager, silent, partial effects persist (6.10)
                self._exec(statement, env)
        return []

    def _exec_load(self, node: ast.Load, env: Environment) -> list[Result]:
        self._load(node.name, env, node.span)
        return []

    def _exec_draw(self, node: ast.Draw, env: Environment) -> list[Result]:
        if self.host.skips_draw(node):
            return []
        if node.input is not None:
            example = self._eval(node.input, env)
        elif self.sop_example is None:
            raise RaspTypeError(
                "draw needs an input: there is no running example (write draw(e, input), "
                "or set example first)"
            )
        else:
            example = self.sop_example
        value = self._with_backup(example, lambda: self._eval(node.expr, env))
        self._verify()
        if not isinstance(value, graph.SOp):
            raise RaspTypeError(f"draw expects s-op, got: {describe(value, 40)}")
        _require_iterable(example, "draw")
        applied = self._apply(value, example)
        if self.draw_hook is not None:
            self.draw_hook(value, example)
        return [Result("applied", value=applied)]

    def _exec_set_example(self, node: ast.SetExample, env: Environment) -> list[Result]:
        # The original evaluates the example in the top-level scope, even inside a file.
        example = self._eval(node.example, self.top)
        self._verify()
        if not isinstance(example, (str, list, dict)):
            raise RaspTypeError(f"example not iterable: {example}")
        if node.target in ("both", "s-op"):
            self.sop_example = example
        if node.target in ("both", "selector"):
            self.selector_example = example
        return []

    def _exec_show_example(self, node: ast.ShowExample, env: Environment) -> list[Result]:
        return [Result("example", node.target)]

    def _exec_examples_toggle(self, node: ast.ExamplesToggle, env: Environment) -> list[Result]:
        if node.target in ("both", "s-op"):
            self.settings.sop_examples = node.on
        if node.target in ("both", "selector"):
            self.settings.selector_examples = node.on
        return []

    def _exec_full_seq(self, node: ast.FullSeqDisplay, env: Environment) -> list[Result]:
        self.settings.full_seq = node.on
        return []

    def _exec_exit(self, node: ast.Exit, env: Environment) -> list[Result]:
        raise _Exit()

    # ------------------------------------------------------------------ load

    def _find_file(self, name: str, span: Span) -> Path:
        if "\0" in name:  # no file name holds one: the OS would refuse it
            raise RaspLoadError(f"cannot load {name!r}: a file name cannot contain a NUL "
                                "character", span)
        filename = name + ".rasp"
        library = _library_folder()
        # The current folder, as the original (relative, so messages stay short); a
        # sandbox searches only the program's folders and the library.
        folders = [] if self._sandbox is not None else [Path()]
        if library is not None and self.strict:
            # the library's portable versions come first (programs/numerics.rasp)
            folders.append(library / "strict")
        # extension: relative to the loader (the sandbox's folder at the REPL prompt)
        if self._files:
            folders.append(self._files[-1].parent)
        elif self._sandbox is not None:
            folders.append(self._sandbox)
        if library is not None:
            folders.append(library)  # extension: the bundled library, `load "linalg";`
        roots = self._sandbox_roots() or []
        for folder in folders:
            candidate = folder / filename
            if self._sandbox is not None:
                refusal = sandbox_refusal(candidate, roots)
                if refusal is not None:
                    raise RaspLoadError(f"--sandbox refuses to load {name!r}: {refusal}", span)
            try:
                if candidate.exists():  # not only regular files: read_program says what
                    return candidate
            except OSError as error:  # a name too long for the file system
                raise RaspLoadError(f"cannot load {_short_name(name)}: {error.strerror}",
                                    span) from None
        raise RaspLoadError(f"could not find file: {filename}", span)

    def _sandbox_roots(self) -> list[Path] | None:
        """The folders `--sandbox` lets `load` read (None without a sandbox)."""
        if self._sandbox is None:
            return None
        library = _library_folder()
        return [self._sandbox, *([library.resolve()] if library is not None else [])]

    def _check_cycle(self, path: Path, span: Span) -> None:
        """A file that (indirectly) loads itself would recurse until the stack runs out;
        loading one file twice side by side (a diamond) re-runs it, as the original."""
        running = [file.resolve() for file in self._files]
        target = path.resolve()
        if target in running:
            chain = [*self._files[running.index(target):], path]
            raise RaspLoadError("load cycle: " + " -> ".join(str(f) for f in chain), span)

    def _load(self, name: str, env: Environment, span: Span) -> None:
        """Run `name.rasp` in a fresh child of the base scope, exporting to `env` (6.13)."""
        path = self._find_file(name, span)
        self._check_cycle(path, span)
        program = parse(read_program(path, at=span, inside=self._sandbox_roots()), str(path),
                        strict=self.strict)
        file_env = Environment(self.base, name=name, exporter=env)
        saved = (self.settings.sop_examples, self.settings.selector_examples)
        self.settings.sop_examples = self.settings.selector_examples = False
        self._files.append(path)
        try:
            for statement in program.statements:
                try:
                    # (not `+=` on the attribute: a nested load inside _exec replaces the list)
                    produced = self._exec(statement, file_env)
                    self._load_results += produced
                except _Exit:
                    break
                except RaspError as error:
                    error = self._at_statement(error, statement)
                    shown = self.host.load_failed(statement, error, file_env)
                    if shown is not None:
                        self._load_results.append(shown)
            # One list serves every load in progress, as in the original: a nested load
            # hands over its loader's results so far with its own, in the order they
            # happened.
            results, self._load_results = self._load_results, []
            self.host.loaded(results)
        finally:
            self._files.pop()
            self.settings.sop_examples, self.settings.selector_examples = saved

    # ------------------------------------------------------------------ expressions

    def _eval(self, expr: ast.Expr, env: Environment) -> Any:
        """Evaluate `expr`, report a new s-op/selector to the host's check, and rebind
        `out` (6.14)."""
        try:
            value = _EXPRESSIONS[type(expr)](self, expr, env)
            if self._checking and is_graph(value):
                self.host.built(value, expr.span)
        except RaspError as error:
            raise error.with_span(expr.span)
        if not (isinstance(value, Applied) and isinstance(expr, ast.Call)):
            env.set_out(value)
        return value

    def _verify(self) -> None:
        """The current statement has built its values: the host's check runs before the
        statement has any effect."""
        if self._checking:
            self.host.verify()

    def _with_backup(self, example: Any, compute: Callable[[], Any]) -> Any:
        """`compute()`, whose values are built for the application to `example` (6.14)."""
        if not self._checking:
            return compute()
        with self.host.on_input(example):
            return compute()

    def _eval_int(self, node: ast.IntLiteral, env: Environment) -> Any:
        return node.value

    def _eval_float(self, node: ast.FloatLiteral, env: Environment) -> Any:
        return Fraction(node.text) if self.exact else node.value

    def _eval_string(self, node: ast.StringLiteral, env: Environment) -> Any:
        return node.value

    def _eval_name(self, node: ast.Name, env: Environment) -> Any:
        return env.lookup(node.id)

    def _eval_binary(self, node: ast.BinaryOp, env: Environment) -> Any:
        left = self._eval(node.left, env)
        right = self._eval(node.right, env)
        if isinstance(left, (str, list)) or isinstance(right, (str, list)):  # `+`, `*` build
            self._spend(lambda: self.budget.spend_operation(node.op, left, right), node.span)
        result = operations.binary(node.op, left, right, node.span, exact=self.exact)
        return self._name(result, expression_names.binary(node.op, left, right), left, right)

    def _eval_unary(self, node: ast.UnaryOp, env: Environment) -> Any:
        op = {"not": "not", "-": "neg", "+": "pos"}[node.op]
        operand = self._eval(node.operand, env)
        result = operations.unary(op, operand, node.span, exact=self.exact)
        return self._name(result, expression_names.unary(node.op, operand), operand)

    def _name(self, result: Any, name: str | None, *operands: Any) -> Any:
        """`result`, named `name` if the host names expressions and it is a new s-op."""
        if (self.host.names_expressions and name is not None
                and isinstance(result, graph.SOp) and result.name is None
                and all(result is not o for o in operands)):
            set_display_name(result, name)
        return result

    def _eval_ternary(self, node: ast.Ternary, env: Environment) -> Any:
        condition = self._eval(node.condition, env)
        if isinstance(condition, graph.Selector):
            raise RaspTypeError("the condition of a ternary cannot be a selector")
        if isinstance(condition, graph.SOp):
            # Elementwise: both branches are built (and both fully computed, 6.7).
            then = self._eval(node.then, env)
            otherwise = self._eval(node.otherwise, env)
            result = operations.where(condition, then, otherwise, node.span)
            return self._name(result, expression_names.ternary(condition, then, otherwise))
        # Lazy on atoms, which is what makes recursion terminate.
        return self._eval(node.then if condition else node.otherwise, env)

    def _eval_contains(self, node: ast.Contains, env: Environment) -> Any:
        item = self._eval(node.item, env)
        container = self._eval(node.container, env)
        result = operations.contains(item, container, node.span, self.presence_selector)
        name = expression_names.contains(item, container, _variable(node.container))
        return self._name(result, name, item, container)

    def _eval_index(self, node: ast.Index, env: Environment) -> Any:
        target = self._eval(node.target, env)
        key = self._eval(node.index, env)
        result = operations.index(
            target, key, node.span,
            indices=env.lookup("indices"), length=lambda: env.lookup("length"),
        )
        name = expression_names.index(key, _variable(node.target), _variable(node.index))
        return self._name(result, name, target, key)

    # -- calls

    def _eval_call(self, node: ast.Call, env: Environment) -> Any:
        function = node.function
        if (
            isinstance(function, ast.Name)
            and function.id in operations.EXTENSION_NAMES
            and not self.strict
            and not env.is_bound(function.id)
        ):
            args = [self._eval(a, env) for a in node.args]
            if function.id == "assert":
                return operations.assertion(args, *self._error_site(node.span))
            self._spend_on_builtin(function.id, args, node.span)
            return operations.EXTENSIONS[function.id](args, node.span, self.exact)
        if len(node.args) == 1:
            # The argument is the input the callee's definition check may use (6.14).
            args = [self._eval(node.args[0], env)]
            callee = self._with_backup(args[0], lambda: self._eval(function, env))
        else:
            callee = self._eval(function, env)
            args = [self._eval(a, env) for a in node.args]
        if isinstance(callee, Function):
            return self._call_function(callee, args, node.span)
        if is_graph(callee):
            if len(args) != 1:
                raise RaspTypeError(
                    f"wrong number of args for evaluate unfinished- expected: 1, got: {len(args)}."
                )
            _require_iterable(args[0], "Applying unfinished")
            return self._apply(callee, args[0])
        raise RaspTypeError(
            f"cannot apply {kind_name(callee)} {describe(callee, 40)}: only functions, s-ops "
            "and selectors can be applied (the original: 'not implemented this command yet')"
        )

    def _apply(self, node: graph.Node, example: Any) -> Applied:
        return Applied(self.values_on(node, example),
                       "s-op" if isinstance(node, graph.SOp) else "selector", example)

    def _call_function(self, function: Function, args: list, span: Span) -> Any:
        if len(args) != len(function.params):
            raise RaspTypeError(
                f"wrong number of args for {function.name}- expected: "
                f"{len(function.params)}, got: {len(args)}."
            )
        if self._depth >= MAX_CALL_DEPTH:
            raise RaspResourceError(
                f"maximum recursion depth ({MAX_CALL_DEPTH} calls) exceeded in function "
                f"{function.name} (defined at {function.span})",
                span,
            )
        scope = function.closure.child(function.closure.name + "'")
        for name, value in zip(function.params, args):
            scope.bind(name, value)
        self._spend_iterations(f"this call of {function.name}", CALL_ITERATIONS, span)
        self._depth += 1
        self._call_sites.append(span)
        try:
            for statement in function.body:
                self._exec(statement, scope)
            results = [self._eval(e, scope) for e in function.returns]
        except RaspError as error:
            raise self._at_program_line(error, span) from None
        finally:
            self._depth -= 1
            self._call_sites.pop()
        result = results[0] if len(results) == 1 else results
        if is_graph(result):
            set_display_name(
                result, f"{function.name}(" + " , ".join(describe(a, 20) for a in args) + ")"
            )
        return result

    def _at_program_line(self, error: RaspError, site: Span) -> RaspError:
        """An error located in a library (a loaded file's function: its static type
        errors, the definition check or an application of the s-ops it built), reported
        at `site` (a call, a statement) if that is a line of a program being run (the
        user's file, a file being loaded), the library's line a note. An error already
        at a program's line stays there."""
        running = {self._user_file, *(str(file) for file in self._files)}
        if error.span is None or error.span.file in running or site.file not in running:
            return error
        return at_caller(error, site)

    def _at_statement(self, error: RaspError, statement: ast.Statement) -> RaspError:
        """`_at_program_line` at a failed statement, but for a `load`, whose errors are
        the loaded file's own."""
        return error if isinstance(statement, ast.Load) else \
            self._at_program_line(error, statement.span)

    def _error_site(self, span: Span) -> tuple[Span, tuple[str, ...]]:
        """Where an `assert` at `span` reports its error: the innermost call in the user's
        file (the file of the top-level statement) that led to it, so that a library's
        check names the user's line; the library lines on the way become notes."""
        chain = [*self._call_sites, span]
        for k in range(len(chain) - 1, -1, -1):
            if chain[k].file == self._user_file:
                return chain[k], tuple(
                    f"  note: from {s}: {(source_line(s) or '').strip()}" for s in chain[k + 1:]
                )
        return span, ()

    # -- select and aggregate

    def _eval_select(self, node: ast.Select, env: Environment) -> Any:
        keys = self._eval(node.keys, env)
        queries = self._eval(node.queries, env)
        return operations.select(keys, queries, node.op, node.span)

    def _eval_aggregate(self, node: ast.Aggregate, env: Environment) -> Any:
        selector = self._eval(node.selector, env)
        values = self._eval(node.values, env)
        default = 0 if node.default is None else self._eval(node.default, env)
        return operations.aggregate(selector, values, default, node.span)

    # -- built-ins: range( zip( len( round indicator

    def _eval_builtin(self, node: ast.BuiltinCall, env: Environment) -> Any:
        args = [self._eval(a, env) for a in node.args]
        self._spend_on_builtin(node.name, args, node.span)
        result = operations.BUILTINS[node.name](args, node.span, self.exact)
        return self._name(result, expression_names.builtin(node.name, args), *args)

    # -- lists, dicts, comprehensions

    def _spend_on_builtin(self, name: str, args: list, span: Span) -> None:
        """Draw the list `range(` or `zip(` builds on the program's budget, before it is
        built (range's arguments are checked on the way, as range checks them)."""
        if name == "range":
            self._spend_elements("this range", operations.range_length(args),
                                 LIST_ELEMENT_BYTES, span)
        elif name == "zip" and args and all(isinstance(a, list) for a in args):
            # a fresh list per row: about a fresh element's bytes per element it holds
            self._spend_elements("this zip", len(args[0]) * len(args), LIST_ELEMENT_BYTES,
                                 span)

    def _eval_list(self, node: ast.ListLiteral, env: Environment) -> Any:
        self._spend_elements("this list", len(node.items), LIST_ELEMENT_BYTES, node.span)
        return [self._eval(item, env) for item in node.items]

    def _dict_key(self, expr: ast.Expr, env: Environment) -> Any:
        key = self._eval(expr, env)
        if not is_atom(key):
            raise RaspTypeError(
                f"dictionary keys can only be atoms, but instead got: {describe(key, 40)}",
                expr.span,
            )
        return key

    def _eval_dict(self, node: ast.DictLiteral, env: Environment) -> Any:
        self._spend_elements("this dict", len(node.pairs), DICT_ENTRY_BYTES, node.span)
        result = {}
        for key_expr, value_expr in node.pairs:
            key = self._dict_key(key_expr, env)
            result[key] = self._eval(value_expr, env)
        return result

    def _comprehension_items(self, node: Any, env: Environment, what: str) -> list:
        iterable = self._eval(node.iterable, env)
        if not isinstance(iterable, (list, dict)):
            raise RaspTypeError(
                f"{what} comprehension should have got a list or dict to loop over, but got: "
                + describe(iterable, 40)
            )
        count = len(iterable)
        self._spend_iterations(f"this {what} comprehension of {count:,} iterations", count,
                               node.span)
        self._spend_elements(f"this {what} comprehension", count,
                             DICT_ENTRY_BYTES if what == "dict" else LIST_ELEMENT_BYTES,
                             node.span)
        return list(iterable)

    def _spend_iterations(self, what: str, count: int, span: Span) -> None:
        """Draw `what`'s `count` iterations on the program's budget (MAX_ITERATIONS),
        before they run."""
        self._spend(lambda: self.budget.spend_steps(count, what), span)

    def _spend_elements(self, what: str, count: int, bytes_each: int, span: Span) -> None:
        """Draw a collection of `count` fresh elements on the program's budget, before it
        is built."""
        self._spend(lambda: self.budget.spend_elements(count, count * bytes_each, what), span)

    @staticmethod
    def _spend(spend: Callable[[], None], span: Span) -> None:
        """`spend()`, its refusal located at `span` (the loop, call or expression)."""
        try:
            spend()
        except RaspResourceError as error:
            raise error.with_span(span) from None

    def _eval_list_comp(self, node: ast.ListComprehension, env: Environment) -> Any:
        result = []
        size = 0  # the elements of the strings and lists it holds (MAX_COLLECTION_LENGTH)
        for item in self._comprehension_items(node, env, "list"):
            scope = env.child()  # comprehension names vanish afterwards (6.9)
            self._bind_names(scope, node.names, item)
            element = self._eval(node.element, scope)
            size = _grown(size, element, "list", node.span)
            result.append(element)
        return result

    def _eval_dict_comp(self, node: ast.DictComprehension, env: Environment) -> Any:
        result = {}
        size = 0
        for item in self._comprehension_items(node, env, "dict"):
            scope = env.child()
            self._bind_names(scope, node.names, item)
            key = self._dict_key(node.key, scope)
            value = self._eval(node.value, scope)
            size = _grown(size, value, "dict", node.span)
            result[key] = value
        return result

    def _bind_names(self, env: Environment, names: tuple[str, ...], item: Any) -> None:
        """Bind loop/comprehension names to one element, unpacking for several names."""
        if len(names) == 1:
            env.bind(names[0], item)
            return
        if not isinstance(item, (list, str, dict)):
            raise RaspTypeError(
                "iterating with multiple iterator names, but got single iterator value: "
                + describe(item, 40)
            )
        if len(item) != len(names):
            raise RaspTypeError(
                f"iterating with {len(names)} names but got {len(item)} values "
                f"( {describe(item, 40)} )"
            )
        for name, value in zip(names, item):
            env.bind(name, value)


def _variable(expr: ast.Expr) -> str | None:
    """The name if `expr` is a bare variable (the original names some results by it)."""
    return expr.id if isinstance(expr, ast.Name) else None


def _require_iterable(value: Any, what: str) -> None:
    if not isinstance(value, (str, list, dict)):
        raise RaspTypeError(f"{what} expects iterable input, got: {describe(value, 40)}")


def _as_input(example: Any) -> Any:
    """An example as the evaluator takes it: a string, or a list of its elements."""
    return example if isinstance(example, str) else list(example)


def _scope_chain(env: Environment | None) -> Iterator[dict[str, Any]]:
    """The variables of `env` and of each of its parents, innermost first."""
    while env is not None:
        yield env.variables
        env = env.parent


_STATEMENTS: dict[type, Callable[..., list[Result]]] = {
    ast.ExprStatement: Interpreter._exec_expr_statement,
    ast.Assign: Interpreter._exec_assign,
    ast.FunctionDef: Interpreter._exec_def,
    ast.For: Interpreter._exec_for,
    ast.Load: Interpreter._exec_load,
    ast.Draw: Interpreter._exec_draw,
    ast.SetExample: Interpreter._exec_set_example,
    ast.ShowExample: Interpreter._exec_show_example,
    ast.ExamplesToggle: Interpreter._exec_examples_toggle,
    ast.FullSeqDisplay: Interpreter._exec_full_seq,
    ast.Exit: Interpreter._exec_exit,
}

_EXPRESSIONS: dict[type, Callable[..., Any]] = {
    ast.IntLiteral: Interpreter._eval_int,
    ast.FloatLiteral: Interpreter._eval_float,
    ast.StringLiteral: Interpreter._eval_string,
    ast.Name: Interpreter._eval_name,
    ast.BinaryOp: Interpreter._eval_binary,
    ast.UnaryOp: Interpreter._eval_unary,
    ast.Ternary: Interpreter._eval_ternary,
    ast.Contains: Interpreter._eval_contains,
    ast.Index: Interpreter._eval_index,
    ast.Call: Interpreter._eval_call,
    ast.ListLiteral: Interpreter._eval_list,
    ast.DictLiteral: Interpreter._eval_dict,
    ast.ListComprehension: Interpreter._eval_list_comp,
    ast.DictComprehension: Interpreter._eval_dict_comp,
    ast.Select: Interpreter._eval_select,
    ast.Aggregate: Interpreter._eval_aggregate,
    ast.BuiltinCall: Interpreter._eval_builtin,
}
