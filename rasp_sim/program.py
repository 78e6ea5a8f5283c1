"""A program as interpreted: its named values and the arithmetic mode they were built in.

`Interpreter.run_file` / `run_source` return a `Program`. Its graphs are evaluated in the
mode the interpreter built them for (`exact`: float literals became Fractions, so the
evaluator must compute with Fractions too), so no caller passes the mode a second time
and the two cannot disagree.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from .errors import RaspNameError, RaspTypeError
from .evaluate import DEFAULT_MEMORY_LIMIT, evaluate, evaluate_groups
from .graph import Node
from .values import kind_name


@dataclass(frozen=True)
class Program:
    source: str  # the file (or label) the program was read from, for messages
    values: Mapping[str, Any]  # every name the top level sees, the library's included
    last_name: str | None  # the name of the last top-level assignment
    exact: bool  # built for exact rational arithmetic (else float64)
    strict: bool  # built without extensions

    def node(self, name: str | None = None) -> tuple[str, Node]:
        """`name`'s s-op or selector (default: the last name the program assigned)."""
        if name is None:
            name = self.last_name
            if name is None:
                raise RaspNameError(f"{self.source} assigns no names: nothing to evaluate "
                                    "(pass --name NAME)")
        if name not in self.values:
            raise RaspNameError(f"{self.source} defines no name {name!r}")
        value = self.values[name]
        if not isinstance(value, Node):
            kind = kind_name(value)  # atom, list, dict or function here
            article = "an" if kind[0] in "aeiou" else "a"
            raise RaspTypeError(f"{name!r} is {article} {kind}, not an s-op or selector: "
                                "only s-ops and selectors run on inputs")
        return name, value

    def evaluate(self, inputs: Sequence[Any], name: str | None = None, *,
                 memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list:
        """`name`'s value on each input (`rasp_sim.evaluate.evaluate`'s values)."""
        node = self.node(name)[1]
        return [row[0] for row in self.evaluate_nodes([node], inputs, memory_limit=memory_limit)]

    def evaluate_nodes(self, nodes: Sequence[Node], inputs: Sequence[Any], *,
                       memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list[list[Any]]:
        """The value of each of the program's `nodes` on each input (`out[i][r]`)."""
        return evaluate(nodes, inputs, exact=self.exact, memory_limit_bytes=memory_limit)

    def evaluate_groups(self, inputs: Sequence[Any] | np.ndarray,
                        name: str | None = None, *,
                        memory_limit: int = DEFAULT_MEMORY_LIMIT,
                        first_index: int = 0) -> Iterator[tuple[list[int], Any]]:
        """`name`'s value arrays, one length group at a time, with the positions of the
        group's inputs (`rasp_sim.evaluate.evaluate_groups`)."""
        node = self.node(name)[1]
        for ids, arrays in evaluate_groups([node], inputs, exact=self.exact,
                                           memory_limit_bytes=memory_limit,
                                           first_index=first_index):
            yield ids, arrays[node]
