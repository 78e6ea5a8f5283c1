"""Values that do not depend on the tokens, computed at compile time for every length.

A node none of whose ancestors reads the tokens (indices, constants, maps of them, selects
on them) has one value per input length. The compiler needs some of them: the width of
the selector of a `sum` (it must be a constant k), the positions where a softmax's value is
used and whether those queries select themselves. They are evaluated by rasp-sim's own
interpreter (the one source of the semantics) on one input of each length of the domain.

In a causal model every head attends to keys k <= q only, so every aggregate computes its
selector restricted to those keys (`causal_nodes`, what validation compares a causal model
with): the static values of a causal compile are those of that program, and a selector's
matrix is the one its head computes. A sum's width, a softmax's and a layer_norm's rows
read from the unrestricted program were those of another model (a sum of width 1 whose
causal width grows with the query was lowered as its mean).

A node that fails at a length (a division by `length - 2`, a mean of a column of bools
only) fails on every input of that length, as it reads no token: the program is defined on
none of them, validation counts them outside its domain, and what the model computes there
does not matter. Its values at that length are None, and the checks skip that length.
"""
from __future__ import annotations

from typing import Sequence, cast

import numpy as np

from rasp_sim.core import graph as g
from rasp_sim.base.errors import RaspError
from rasp_sim.evaluation.evaluate import evaluate_batch


def causal_nodes(nodes: Sequence[g.Node]) -> list[g.Node]:
    """The nodes as a causal model computes them: the selector of every aggregate among
    their ancestors, whole, restricted to keys k <= q. The mask applies to the attention
    pattern, so to the selector as a head computes it (`not select(...)` does not select
    later keys), not to each select. One copy per node, shared by all of `nodes`."""
    copies: dict[int, g.Node] = {}
    positions = g.Indices(name="indices")
    for node in g.ancestors(list(nodes)):
        children = [copies[id(child)] for child in node.children()]
        if isinstance(node, g.Aggregate):
            children[0] = g.SelectorAnd(
                left=cast(g.Selector, children[0]), span=node.selector.span,
                right=g.Select(keys=positions, queries=positions, op="<="))
        copies[id(node)] = node.with_children(children)
    return [copies[id(node)] for node in nodes]


class StaticValues:
    def __init__(self, min_len: int, max_len: int, causal: bool = False):
        self.lengths = range(min_len, max_len + 1)
        self.causal = causal  # values and matrices of the causal program (module docstring)
        self._static: dict[int, bool] = {}
        # each selector's matrices, computed once: the softmax and shift checks ask per key
        self._matrices: dict[int, list[np.ndarray | None]] = {}

    def is_static(self, node: g.Node) -> bool:
        """True iff the node's value does not depend on the tokens."""
        if id(node) not in self._static:
            self._static[id(node)] = not any(isinstance(n, g.Tokens)
                                             for n in g.ancestors(node))
        return self._static[id(node)]

    def _values(self, nodes: Sequence[g.Node], n: int) -> list[np.ndarray] | None:
        """The nodes' values at length n, None where one fails (module docstring)."""
        # Any tokens do: these nodes read none. The value is the row of the one input.
        evaluated = causal_nodes(nodes) if self.causal else list(nodes)
        try:
            values = evaluate_batch(evaluated, [[0] * n])
        except RaspError:
            return None
        return [np.asarray(values[node])[0] for node in evaluated]

    def matrices(self, selector: g.Selector) -> list[np.ndarray | None]:
        """The selector's (n, n) boolean matrix M[q][k] for every length n (None where the
        program fails at n), as the head of an aggregate on it attends: in a causal model,
        of the causal program's values and restricted to k <= q. (For a part of an
        aggregate's selector, the restriction commutes with `and`: the part's matrix
        restricted as the whole is.)"""
        if id(selector) not in self._matrices:
            matrices = []
            for n in self.lengths:
                values = self._values([selector], n)
                matrix = None if values is None else values[0].astype(bool)
                matrices.append(np.tril(matrix) if self.causal and matrix is not None
                                else matrix)
            self._matrices[id(selector)] = matrices
        return self._matrices[id(selector)]

    def columns(self, nodes: Sequence[g.SOp]) -> list[np.ndarray | None]:
        """For every length n, a (len(nodes), n) object array of the nodes' values (None
        where the program fails at n)."""
        out: list[np.ndarray | None] = []
        for n in self.lengths:
            rows = self._values(nodes, n) if nodes else []
            if rows is None:
                out.append(None)
                continue
            table = np.empty((len(nodes), n), dtype=object)
            for i, row in enumerate(rows):
                table[i] = [v.item() if hasattr(v, "item") else v for v in row]
            out.append(table)
        return out
