"""Call functions of the RASP library (programs/*.rasp) from Python.

The library is RASP source; this module is the thin bridge tests, benchmarks and
scripts use to instantiate a library function at given shapes and evaluate the
resulting s-op on a batch of inputs:

    from rasp_sim.language import library
    node = library.build("matmul(tokens_float, 2, 3, 4)")      # the s-op (graph node)
    rows = library.run("matmul(tokens_float, 2, 3, 4)", [[...], [...]])
    library.cost("attention(tokens_float, 3, 3, 3, 3, 1)")     # (layers, heads per layer)

`expr` is any RASP expression over the names the library exports; it is evaluated in a
fresh top-level scope after `load "<file>";` for each file in `files`. Interpreters are
cached per (files, exact, strict), so building many instances costs one load; built
programs (`program(expr)`, a `rasp_sim.language.program.Program`) are cached per expression. `exact=True` interprets float literals as Fractions and
evaluates with exact rational arithmetic; `strict=True` disables every extension, which
makes the library load programs/strict/numerics.rasp (see programs/numerics.rasp).
Errors are `RaspError`s with spans, as from the interpreter and evaluator.
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

from ..core import graph
from .analyse import analyse
from .interpreter import Interpreter
from .program import Program

DEFAULT_FILES: tuple[str, ...] = ("classic", "attention")  # attention loads linalg

# The name the expression is bound to in the interpreter's top scope.
_RESULT = "library_result"


@functools.lru_cache(maxsize=8)
def interpreter(files: tuple[str, ...] = DEFAULT_FILES, exact: bool = False,
                strict: bool = False) -> Interpreter:
    """An interpreter with `files` loaded (cached; do not rebind its names)."""
    it = Interpreter(exact=exact, strict=strict)
    for name in files:
        it.run_source(f'load "{name}";', file=f"<load {name}>")
    return it


@functools.lru_cache(maxsize=4096)
def program(expr: str, files: tuple[str, ...] = DEFAULT_FILES, exact: bool = False,
            strict: bool = False) -> Program:
    """The program that binds `expr` once the library `files` are loaded."""
    return interpreter(files, exact, strict).run_source(f"{_RESULT} = {expr};",
                                                        file=f"<{expr}>")


def build(expr: str, files: tuple[str, ...] = DEFAULT_FILES, exact: bool = False,
          strict: bool = False) -> graph.Node:
    """The graph node `expr` denotes once the library `files` are loaded."""
    return program(expr, files, exact, strict).node(_RESULT)[1]


def run(expr: str, inputs: Sequence[Any], *, files: tuple[str, ...] = DEFAULT_FILES,
        exact: bool = False, strict: bool = False) -> list[list[Any]]:
    """`expr`'s value on each input (a list of atoms per input), computed in the mode
    the expression was built in."""
    return program(expr, files, exact, strict).evaluate(inputs, _RESULT)


def cost(expr: str, files: tuple[str, ...] = DEFAULT_FILES,
         strict: bool = False) -> tuple[int, tuple[int, ...]]:
    """(layers, heads per layer) of `expr`, as `rasp-sim analyse` reports them."""
    report = analyse(build(expr, files, False, strict))
    return report.n_layers, tuple(report.heads)
