"""Values that do not depend on the tokens, computed at compile time for every length.

A node none of whose ancestors reads the tokens (indices, constants, maps of them, selects
on them) has one value per input length. The compiler needs some of them: the width of
the selector of a `sum` (it must be a constant k), the positions where a softmax's value is
used and whether those queries select themselves. They are evaluated by rasp-sim's own
interpreter (the one source of the semantics) on one input of each length of the domain.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from rasp_sim import graph as g
from rasp_sim.evaluate import evaluate_batch


class StaticValues:
    def __init__(self, min_len: int, max_len: int):
        self.lengths = range(min_len, max_len + 1)
        self._static: dict[int, bool] = {}
        # each selector's matrices, computed once: the softmax and shift checks ask per key
        self._matrices: dict[int, list[np.ndarray]] = {}

    def is_static(self, node: g.Node) -> bool:
        """True iff the node's value does not depend on the tokens."""
        if id(node) not in self._static:
            self._static[id(node)] = not any(isinstance(n, g.Tokens)
                                             for n in g.ancestors(node))
        return self._static[id(node)]

    def _values(self, nodes: Sequence[g.Node], n: int) -> list[np.ndarray]:
        # Any tokens do: these nodes read none. The value is the row of the one input.
        values = evaluate_batch(list(nodes), [[0] * n])
        return [np.asarray(values[node])[0] for node in nodes]

    def matrices(self, selector: g.Selector) -> list[np.ndarray]:
        """The selector's (n, n) boolean matrix M[q][k] for every length n."""
        if id(selector) not in self._matrices:
            self._matrices[id(selector)] = [self._values([selector], n)[0].astype(bool)
                                            for n in self.lengths]
        return self._matrices[id(selector)]

    def columns(self, nodes: Sequence[g.SOp]) -> list[np.ndarray]:
        """For every length n, a (len(nodes), n) object array of the nodes' values."""
        out = []
        for n in self.lengths:
            rows = self._values(nodes, n) if nodes else []
            table = np.empty((len(nodes), n), dtype=object)
            for i, row in enumerate(rows):
                table[i] = [v.item() if hasattr(v, "item") else v for v in row]
            out.append(table)
        return out
