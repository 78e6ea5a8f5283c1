"""A rasp-sim s-op graph as a program in the original RASP language (tech-srl/RASP), so
the original interpreter can be timed on the library's constructions (benchmarks/
interpreter.py) with the same algorithm, node for node.

The library itself uses extensions the original lacks (`load`, `sum`, `assert`, `exp`,
`sqrt`), but its graph, once built, is plain RASP except for those. Each node becomes one
statement `v<k> = ...;`, so a shared node is computed once, as in rasp-sim (the text
first sets the running example, on which the original evaluates every statement):
- constants are written in place as literals (the original lifts atoms as rasp-sim does);
  its grammar has no negative or exponent literals, so -x is `(-x)` and floats are
  written positionally (`numpy.format_float_positional`, which reads back to the same
  double);
- maps are the original's operators, `!=` (absent there) as `not (a == b)`; an
  `assert(cond, ...)` is `not (not cond)`, its value where it holds (the benchmark's
  layouts satisfy every assertion: rasp-sim raises otherwise);
- `exp(x)` is `e ^ x` and `sqrt(x)` is `x ^ 0.5` (the original's `^` is Python's pow):
  one map each, as in rasp-sim, within a few units in the last place of the C library's
  exp and sqrt; `abs(x)` is `x if x >= 0 else -x`;
- a `sum` aggregate is the mean times the original library's `selector_width` of the same
  selector (the default where nothing is selected, the value where one is). That is how a
  user of the original writes it; it costs the original the width's two aggregates more
  than rasp-sim's one, so the construction rows overstate rasp-sim's lead over the
  original by up to that, and mean x count may differ from the sum in the last bit.
`log`, table lookups and membership are refused (`NotExpressible`): the library's
constructions do not use them.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from rasp_sim.core import graph


class NotExpressible(Exception):
    """The graph uses an operation the original RASP has no form of (the message names it)."""


_BINARY = {"+", "-", "*", "/", "%", "^", "==", "<", ">", "<=", ">=", "and", "or"}
_UNARY = {"not": "not ({})", "neg": "-({})", "pos": "+({})", "round": "round({})",
          "indicator": "indicator({})", "assert": "not (not ({}))",
          "exp": f"{math.e!r} ^ ({{}})", "sqrt": "({}) ^ 0.5",
          "abs": "({0}) if (({0}) >= 0) else (-({0}))"}


def original_source(root: graph.SOp, example: Sequence[Any], name: str = "y") -> str:
    """Original-RASP text whose variable `name` is `root`. The original evaluates every
    statement on its running example as it reads it, so the text first sets `example`, an
    input `root` accepts (its default, "hello", is no float layout)."""
    terms: dict[int, str] = {}
    lines = [f"set example [{', '.join(_literal(x) for x in example)}]"]  # no ';' in its grammar

    def statement(text: str) -> str:
        variable = f"v{len(lines)}"
        lines.append(f"{variable} = {text};")
        return variable

    for node in graph.ancestors(root):
        args = [terms[id(child)] for child in node.children()]
        if isinstance(node, graph.Full):
            terms[id(node)] = _literal(node.value)
        elif isinstance(node, graph.Aggregate) and node.reduction == "sum":
            selector, values = args
            mean = statement(f"aggregate({selector}, {values}, {_literal(node.default)})")
            width = statement(f"selector_width({selector})")
            terms[id(node)] = statement(f"({mean}) if ({width} < 2) else ({mean} * {width})")
        else:
            terms[id(node)] = statement(_expression(node, args))
    lines.append(f"{name} = {terms[id(root)]};")
    return "\n".join(lines) + "\n"


def _expression(node: graph.Node, args: list[str]) -> str:
    if isinstance(node, graph.Tokens):
        return f"tokens_{node.kind}"
    if isinstance(node, graph.Indices):
        return "indices"
    if isinstance(node, graph.Map):
        return _map(node, args)
    if isinstance(node, graph.Select):
        keys, queries = args
        return f"select({keys}, {queries}, {node.op})"
    if isinstance(node, (graph.SelectorAnd, graph.SelectorOr)):
        left, right = args
        return f"({left}) {'and' if isinstance(node, graph.SelectorAnd) else 'or'} ({right})"
    if isinstance(node, graph.SelectorNot):
        return f"not ({args[0]})"
    if isinstance(node, graph.Aggregate):  # a mean (sums are written by original_source)
        selector, values = args
        return f"aggregate({selector}, {values}, {_literal(node.default)})"
    raise NotExpressible(f"no original-RASP form of {type(node).__name__}")


def _map(node: graph.Map, args: list[str]) -> str:
    if node.op in _BINARY:
        left, right = args
        return f"({left}) {node.op} ({right})"
    if node.op == "!=":
        left, right = args
        return f"not (({left}) == ({right}))"
    if node.op in _UNARY:
        return _UNARY[node.op].format(args[0])
    if node.op == "where":
        condition, then, otherwise = args
        return f"({then}) if ({condition}) else ({otherwise})"
    raise NotExpressible(f"the original RASP has no `{node.op}` map")


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return f"(-{-value})" if value < 0 else str(value)
    if isinstance(value, float) and np.isfinite(value):
        text = np.format_float_positional(abs(value), unique=True, trim="0")
        return f"(-{text})" if np.signbit(value) else text
    if isinstance(value, str) and '"' not in value and "\n" not in value:
        return f'"{value}"'
    raise NotExpressible(f"the original RASP has no literal for {value!r}")
