"""Shared helpers for the interpreter tests: run RASP text, read bindings and values."""
from __future__ import annotations

from typing import Any

from rasp_sim.core import graph
from rasp_sim.evaluation.evaluate import evaluate
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.language.repl_session import ReplSession, Session


def run(text: str, *, file: str = "t.rasp", **options: Any) -> Interpreter:
    """A fresh interpreter with a session (run mode unless `repl=True`) that has run
    `text`. Printed lines are collected in `interpreter.lines`."""
    lines: list[str] = []
    kind = ReplSession if options.pop("repl", False) else Session
    interpreter = kind(output=lines.append, **options).interpreter
    interpreter.lines = lines  # type: ignore[attr-defined]
    interpreter.run_source(text, file)
    return interpreter


def value(text: str, name: str = "x", **options: Any) -> Any:
    """The binding `name` after running `text`."""
    return run(text, **options).lookup(name)


def on(node: Any, example: Any, *, exact: bool = False) -> list:
    """The values of an s-op (list of atoms) or selector (rows of bools) on one input."""
    assert isinstance(node, (graph.SOp, graph.Selector)), node
    return evaluate([node], [example], exact=exact)[0][0]


def sop(text: str, example: Any, name: str = "x", **options: Any) -> list:
    """Run `text`, then evaluate the s-op/selector bound to `name` on `example` (in the
    mode the program was built in)."""
    (values,) = run(text, **options).program("t.rasp").evaluate([example], name)
    return values
