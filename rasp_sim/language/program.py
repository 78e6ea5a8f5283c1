"""A program as interpreted: its named values and the arithmetic mode they were built in.

`Interpreter.run_file` / `run_source` (and the public `rasp_sim.parse` / `rasp_sim.load`)
return a `Program`. Its graphs are evaluated in the mode the interpreter built them for
(`exact`: float literals became Fractions, so the evaluator must compute with Fractions
too), so no caller passes the mode a second time and the two cannot disagree. The methods
without a leading underscore are the public API (docs/python.md).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from ..base import api_arguments as arguments
from ..base.api_arguments import checked_inputs, input_list
from ..base.errors import RaspNameError, RaspTypeError
from ..base.renderers import renderer
from ..evaluation.evaluate import (DEFAULT_MEMORY_LIMIT, evaluate, evaluate_batch,
                                   evaluate_groups, evaluate_values)
from ..evaluation.texts import one_length_texts
from ..core.graph import Node, Selector
from .values import kind_name

_REPR_NAMES = 5  # a Program's repr lists its last few names

if TYPE_CHECKING:  # analyse imports networkx: loaded when a program is analysed, not run
    from .analyse import Analysis


@dataclass(frozen=True)
class Program:
    source: str  # the file (or label) the program was read from, for messages
    values: Mapping[str, Any]  # every name the top level sees, the library's included
    last_name: str | None  # the name of the last top-level assignment
    exact: bool  # built for exact rational arithmetic (else float64)
    strict: bool  # built without extensions
    own_names: tuple[str, ...] = ()  # the names the program's top level binds, in order

    @property
    def names(self) -> tuple[str, ...]:
        """The s-ops and selectors the program's top level defines, in the order first
        bound (the library's names are not listed, but `program[name]` reaches them)."""
        return tuple(n for n in self.own_names if isinstance(self.values.get(n), Node))

    def __getitem__(self, name: str) -> Node:
        """The s-op or selector `name` (a RaspNameError if there is none)."""
        return self.node(name)[1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and isinstance(self.values.get(name), Node)

    def run(self, inputs: Sequence[Any], name: str | None = None, *,
            memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list:
        """`name`'s value on each input (default: the last name assigned), as the CLI's
        `run` computes it: one list of typed values (int, float, bool, str; Fraction in
        exact mode) per input, or for a selector one `SelectorValue` (its query x key
        rows) per input. `inputs` is a list of inputs, each a str (its characters are the
        tokens) or a sequence of atoms."""
        inputs = _checked("run", inputs)
        node = self.node(name)[1]
        values = evaluate_values(node, inputs, exact=self.exact,
                                 memory_limit_bytes=arguments.memory_limit("run", memory_limit))
        if isinstance(node, Selector):
            return [SelectorValue(rows, tuple(x)) for rows, x in zip(values, inputs)]
        return values

    def run_batch(self, batch: Any, name: str | None = None, *,
                  memory_limit: int = DEFAULT_MEMORY_LIMIT) -> np.ndarray:
        """The vectorised path: `name`'s values on a batch of equal-length inputs (a 2-D
        array or a list), as one array: (batch, n) for an s-op (dtype int64, float64,
        bool, NumPy strings for strings, or object for mixed columns and exact Fractions),
        (batch, n, n) bool for a selector."""
        node = self.node(name)[1]
        memory_limit = arguments.memory_limit("run_batch", memory_limit)
        if isinstance(batch, np.ndarray) and batch.ndim != 2:
            raise RaspTypeError(f"run_batch takes a 2-D batch (inputs x positions), got an "
                                f"array of shape {batch.shape}")
        batch = _checked("run_batch", batch)
        if len(batch) == 0:
            raise RaspTypeError("run_batch takes at least one input (the batch is empty)")
        value = evaluate_batch([node], batch, exact=self.exact,
                               memory_limit_bytes=memory_limit)[node]
        count = len(batch)
        return np.array(np.broadcast_to(value, (count, *value.shape[1:])))

    def analyse(self, name: str | None = None) -> "Analysis":
        """The layers and heads `name` needs (`rasp-sim analyse`)."""
        from .analyse import analyse

        return analyse(self.node(name)[1])

    def __repr__(self) -> str:
        # Short on purpose: `values` holds the whole scope, the library's bodies included,
        # and a dataclass repr of it floods tracebacks and pytest's failure reports.
        names = self.names
        shown = ", ".join(names[-_REPR_NAMES:])
        more = "..., " if len(names) > _REPR_NAMES else ""
        return (f"<Program of {len(names)} name{'s' if len(names) != 1 else ''} from "
                f"{Path(self.source).name}: {more}{shown}>")

    def _repr_svg_(self) -> str:
        """Jupyter: the `rasp-sim draw` picture of the last name assigned, each library
        call folded into one box named by the call, as `rasp-sim draw FILE` draws it."""
        call_names = renderer("draw_collapse", "call_names")
        node_svg = renderer("notebook", "node_svg")

        return node_svg(self.node()[1], user_file=self.source,
                        call_names=call_names(self.source, self.values))

    def node(self, name: str | None = None) -> tuple[str, Node]:
        """`name`'s s-op or selector (default: the last name the program assigned)."""
        arguments.optional_text("node", name, "name")
        if name is None:
            name = self.last_name
            if name is None:
                raise RaspNameError(f"{self.source} assigns no names: nothing to evaluate "
                                    "(pass --name NAME)")
        try:
            value = self.values[name]
        except KeyError:
            raise RaspNameError(f"{self.source} defines no name {name!r}") from None
        if not isinstance(value, Node):
            kind = kind_name(value)  # atom, list, dict or function here
            article = "an" if kind[0] in "aeiou" else "a"
            raise RaspTypeError(f"{name!r} is {article} {kind}, not an s-op or selector: "
                                "only s-ops and selectors run on inputs")
        return name, value

    def evaluate(self, inputs: Sequence[Any], name: str | None = None, *,
                 memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list:
        """`name`'s value on each input (`rasp_sim.evaluation.evaluate.evaluate`'s values)."""
        node = self.node(name)[1]
        input_list("evaluate", inputs)  # checked; an array is passed on whole
        return [row[0] for row in self._evaluate(
            [node], inputs, arguments.memory_limit("evaluate", memory_limit))]

    def evaluate_nodes(self, nodes: Sequence[Node], inputs: Sequence[Any], *,
                       memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list[list[Any]]:
        """The value of each of the program's `nodes` on each input (`out[i][r]`)."""
        nodes = _nodes("evaluate_nodes", nodes)
        input_list("evaluate_nodes", inputs)  # checked; an array is passed on whole
        return self._evaluate(nodes, inputs, arguments.memory_limit("evaluate_nodes",
                                                                    memory_limit))

    def _evaluate(self, nodes: Sequence[Node], inputs: Sequence[Any],
                  memory_limit: int) -> list[list[Any]]:
        """evaluate_nodes on arguments already checked."""
        return evaluate(nodes, inputs, exact=self.exact, memory_limit_bytes=memory_limit)

    def evaluate_groups(self, inputs: Sequence[Any] | np.ndarray,
                        name: str | None = None, *,
                        memory_limit: int = DEFAULT_MEMORY_LIMIT,
                        first_index: int = 0) -> Iterator[tuple[list[int], Any]]:
        """`name`'s value arrays, one length group at a time, with the positions of the
        group's inputs (`rasp_sim.evaluation.evaluate.evaluate_groups`)."""
        node = self.node(name)[1]
        input_list("evaluate_groups", inputs)  # checked; an array is passed on whole
        memory_limit = arguments.memory_limit("evaluate_groups", memory_limit)
        first_index = arguments.integer("evaluate_groups", first_index, "first_index", 0)
        for ids, arrays in evaluate_groups([node], inputs, exact=self.exact,
                                           memory_limit_bytes=memory_limit,
                                           first_index=first_index):
            yield ids, arrays[node]


def _checked(function: str, inputs: Any) -> Any:
    """`inputs` checked (`checked_inputs`; an array is passed on whole); strs of one length
    as the engine's `Texts`, whose reading is their check: the engine does not read them
    again."""
    texts = one_length_texts(inputs) if isinstance(inputs, (list, tuple)) else None
    return checked_inputs(function, inputs) if texts is None else texts


def _nodes(function: str, nodes: Any) -> list[Node]:
    """A list of s-ops and selectors (the program's, e.g. `program[name]`)."""
    if not isinstance(nodes, (list, tuple)) or not all(isinstance(n, Node) for n in nodes):
        raise RaspTypeError(f"{function}: nodes must be a list of s-ops and selectors "
                            "(program[name]), not " + arguments.shown(nodes))
    return list(nodes)


class SelectorValue(list):
    """A selector's value on one input: its rows, row q the keys query q selects
    (`M[q][k]`), as a list of lists of bools; in Jupyter a query x key grid labelled with
    the input's tokens."""

    def __init__(self, rows: Sequence[Sequence[bool]], tokens: tuple[Any, ...]):
        super().__init__(list(row) for row in rows)
        self.tokens = tokens

    def _repr_svg_(self) -> str:
        selector_svg = renderer("notebook", "selector_svg")

        return selector_svg(self, self.tokens)
