"""A rasp-sim s-op graph as a tracr RASP expression, so tracr's evaluator can be timed on
the library's constructions (benchmarks/interpreter.py) with the same algorithm, node for
node.

Each node becomes tracr's primitive of the same meaning:
- `tokens_<kind>`: a Map of the same conversion over tracr's tokens; `indices`: indices;
  a constant: Full;
- a Map: tracr's Map (one input) or SequenceMap (two) of the same element function
  (`rasp_sim.core.atom_functions`); three inputs (`where`) go through a SequenceMap of pairs;
- `select(keys, queries, op)`: Select with the comparison of the same name (tracr calls
  `predicate(key, query)`, as RASP compares `key op query`); and/or/not of selectors:
  SelectorAnd/Or/Not;
- a mean aggregate: Aggregate, whose mean is RASP's (the default where nothing is
  selected, the value itself where one is, sum / count otherwise); a `sum` aggregate, which
  tracr lacks: that mean times the SelectorWidth of its selector, as a tracr user writes it.
  (mean x count can differ from the sum in the last bit: compare with a tolerance.)

tracr's `rasp.evaluate` evaluates a child every time it is referenced, so a subexpression
shared by k parents runs k times. The library's constructions share heavily: evaluated as a
tree, inverse 4x4 is about 7e13 node evaluations for its 460 nodes, U n = d = 4 about 2e9.
`MemoizedEvaluator` is tracr's evaluator with one cache per input (each node once), the
fastest tracr evaluation of these programs; the benchmark times that.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

from tracr.rasp import rasp

from rasp_sim.core import graph
from rasp_sim.core.atom_functions import atom_function
from rasp_sim.core.semantics import convert_token


def to_tracr(root: graph.SOp) -> rasp.SOp:
    """The tracr expression computing `root` (each shared node translated once)."""
    done: dict[int, Any] = {}
    for node in graph.ancestors(root):
        done[id(node)] = _translate(node, [done[id(child)] for child in node.children()])
    return done[id(root)]


def _translate(node: graph.Node, children: list[Any]) -> Any:
    if isinstance(node, graph.Tokens):
        return rasp.Map(partial(convert_token, node.kind), rasp.tokens, simplify=False)
    if isinstance(node, graph.Indices):
        return rasp.indices
    if isinstance(node, graph.Full):
        return rasp.Full(node.value)
    if isinstance(node, graph.Map):
        return _elementwise(atom_function(node.op, node.params), children)
    if isinstance(node, graph.Select):
        keys, queries = children
        return rasp.Select(keys, queries, rasp.Comparison(node.op))
    if isinstance(node, graph.SelectorAnd):
        return rasp.SelectorAnd(*children)
    if isinstance(node, graph.SelectorOr):
        return rasp.SelectorOr(*children)
    if isinstance(node, graph.SelectorNot):
        return rasp.SelectorNot(*children)
    if isinstance(node, graph.Aggregate):
        selector, values = children
        mean = rasp.Aggregate(selector, values, default=node.default)
        if node.reduction == "mean":
            return mean
        return rasp.SequenceMap(_times_count, mean, rasp.SelectorWidth(selector))
    raise TypeError(f"no tracr translation for {type(node).__name__}")


def _elementwise(fn: Callable[..., Any], inputs: Sequence[Any]) -> rasp.SOp:
    """tracr's Map or SequenceMap of `fn` over `inputs`; an input given twice (`x * x`) is
    read once, as tracr asks (a SequenceMap of an s-op with itself is discouraged)."""
    distinct = list({id(sop): sop for sop in inputs}.values())
    if len(distinct) == len(inputs) <= 2:
        return (rasp.Map(fn, inputs[0], simplify=False) if len(inputs) == 1
                else rasp.SequenceMap(fn, *inputs))
    slots = [next(i for i, sop in enumerate(distinct) if sop is x) for x in inputs]

    def call(values: tuple) -> Any:
        return fn(*(values[slot] for slot in slots))

    if len(distinct) == 1:
        return rasp.Map(lambda x: call((x,)), distinct[0], simplify=False)
    if len(distinct) == 2:
        return rasp.SequenceMap(lambda a, b: call((a, b)), *distinct)
    tupled = rasp.SequenceMap(lambda a, b: (a, b), distinct[0], distinct[1])
    for extra in distinct[2:-1]:
        tupled = rasp.SequenceMap(lambda t, x: (*t, x), tupled, extra)
    return rasp.SequenceMap(lambda t, x: call((*t, x)), tupled, distinct[-1])


def _times_count(mean: Any, count: int) -> Any:
    """A sum from tracr's mean: the mean itself where at most one value is selected (the
    default, or that value unchanged), mean x count otherwise."""
    return mean if count <= 1 else mean * count


class MemoizedEvaluator(rasp.DefaultRASPEvaluator):
    """tracr's evaluator, each node evaluated once per input (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._values: dict[int, Any] | None = None

    def evaluate(self, expr: rasp.RASPExpr, xs: Sequence[Any]) -> Any:
        outermost = self._values is None
        if outermost:
            self._values = {}
        try:
            key = id(expr)
            if key not in self._values:
                self._values[key] = super().evaluate(expr, xs)
            return self._values[key]
        finally:
            if outermost:
                self._values = None
