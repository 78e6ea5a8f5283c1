"""The REPL's definition check (docs/language.md), incrementally.

Every s-op or selector a REPL statement builds must evaluate on the running example.
Checked naively, each new node re-evaluates its whole ancestry, so a REPL session
costs time quadratic in the size of its graph. `DefinitionCheck` remembers the values
of the s-ops it has already verified on the current example and evaluates a new node
on a copy of its not-yet-verified part whose verified s-op inputs are replaced by
constant lookups of their known values (`Map("lookup", (indices,), (values,))`). A
lookup reproduces the values and their types exactly, so the copy raises exactly when
the node would: which error, and which span, since copies keep their spans.
"""
from __future__ import annotations

from typing import Any

from ..core import graph
from ..base.errors import RaspError, RaspRuntimeError, Span
from ..evaluation.evaluate import evaluate

# Forget the known values beyond this many s-ops (memory stays bounded).
_MAX_KNOWN = 50_000


class DefinitionCheck:
    def __init__(self, *, exact: bool):
        self.exact = exact
        self._example: Any = None
        self._known: dict[int, tuple[graph.SOp, list]] = {}  # id -> (node, values)
        self._indices = graph.Indices()

    def values(self, node: graph.Node, example: Any) -> list:
        """The node's values on `example` (what the REPL displays), reusing and
        extending the known values."""
        if self._example is example and id(node) in self._known:
            return self._known[id(node)][1]
        return self.check([(node, node.span)], example)[0]

    def check(self, entries: list[tuple[graph.Node, Span | None]], example: Any) -> list:
        """Raise the RaspError that evaluating any entry's node on `example` raises,
        located at the node's span or else at the entry's (the expression that built
        it). `example` is any iterable the REPL accepts (a string, list or dict); the
        known values are kept while the same example object is passed. Returns the
        values of the entries' nodes."""
        if len(example) == 0:
            raise RaspRuntimeError("the running example is empty: every s-op fails on it")
        if example is not self._example or len(self._known) > _MAX_KNOWN:
            self._example, self._known = example, {}
        if not isinstance(example, str):
            example = list(example)
        todo = [(node, span) for node, span in entries if id(node) not in self._known]
        copies = self._copies([node for node, _ in todo])
        roots = [copies[id(node)] for node, _ in todo]
        try:
            results = evaluate(roots, [example], exact=self.exact)[0] if roots else []
        except RaspError as error:
            if error.span is None:  # a base value (tokens_int) failed: find its user
                for root, (_, span) in zip(roots, todo):
                    try:
                        evaluate([root], [example], exact=self.exact)
                    except RaspError:
                        raise error.with_span(span) from None
            raise
        computed = {}
        for (node, _), values in zip(todo, results):
            computed[id(node)] = values
            if isinstance(node, graph.SOp):
                self._known[id(node)] = (node, values)
        return [
            self._known[id(node)][1] if id(node) in self._known else computed[id(node)]
            for node, _ in entries
        ]

    def _copies(self, roots: list[graph.Node]) -> dict[int, graph.Node]:
        """For each node from `roots` down to the verified s-ops: the node itself if
        nothing below it is verified, else a copy over the substitutes."""
        result: dict[int, graph.Node] = {}
        stack: list[tuple[graph.Node, bool]] = [(r, False) for r in roots]
        while stack:  # iterative: an unverified ancestry can be deep
            node, expanded = stack.pop()
            if id(node) in result:
                continue
            known = self._known.get(id(node))  # never a root: roots are unverified
            if known is not None:
                result[id(node)] = graph.Map(
                    op="lookup", inputs=(self._indices,), params=(known[1],), span=node.span
                )
                continue
            children = node.children()
            if not expanded:
                stack.append((node, True))
                stack.extend((c, False) for c in children if id(c) not in result)
                continue
            new = [result[id(c)] for c in children]
            if all(a is b for a, b in zip(new, children)):
                result[id(node)] = node
            else:
                result[id(node)] = node.with_children(new)
        return result
