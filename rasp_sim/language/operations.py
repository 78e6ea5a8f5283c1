"""RASP's operations on evaluated operands (docs/language.md): what an operator,
index, membership test, `select`, `aggregate` or built-in gives for the values it got.

Atoms are computed at once by `rasp_sim.core.semantics`; an s-op operand makes the result
a lazy graph node (`rasp_sim.core.graph`), with atom operands lifted to `Full` nodes so the
analyser and compiler see them. Errors are raised without a span; the interpreter
attaches the span of the expression at fault.
"""
from __future__ import annotations

from typing import Any, Callable, Literal, cast

from ..core import graph
from ..core import semantics
from ..base.errors import RaspError, RaspRuntimeError, RaspTypeError, Span
from ..base.limits import check_collection_length
from .values import Function, describe, is_atom, is_graph


def lift(value: Any, span: Span) -> graph.SOp:
    """An s-op operand as is; an atom (or any other non-graph value) as a constant s-op."""
    if isinstance(value, graph.SOp):
        return value
    if isinstance(value, graph.Selector):
        raise RaspTypeError("expected an s-op or atom, got a selector")
    return graph.Full(value=value, span=span)


def make_map(op: graph.MapOp, operands: tuple, span: Span, params: tuple = ()) -> graph.Map:
    return graph.Map(op=op, inputs=tuple(lift(v, span) for v in operands), params=params, span=span)


def binary(op: str, left: Any, right: Any, span: Span, *, exact: bool) -> Any:
    """`left op right`: arithmetic, comparison, `and`/`or` (6.1, 6.3, 6.4)."""
    sop = isinstance(left, graph.SOp) or isinstance(right, graph.SOp)
    selectors = [isinstance(v, graph.Selector) for v in (left, right)]
    if op in ("and", "or"):
        if any(selectors) and not all(selectors):
            raise RaspTypeError("Cannot apply and/or between selector and non-selector")
        if all(selectors):
            node_type = graph.SelectorAnd if op == "and" else graph.SelectorOr
            return node_type(left=left, right=right, span=span)
    elif any(selectors):
        raise RaspTypeError(f"Cannot apply {op} to selector(s)")
    if sop and op == "==" and not all(is_atom(v) or is_graph(v) for v in (left, right)):
        return _never_equal(left if isinstance(left, graph.SOp) else right, span)
    if sop:  # the grammar's binary operators are all MapOp names
        return make_map(cast(graph.MapOp, op), (left, right), span)
    return semantics.binary(op, left, right, exact=exact)  # atom and/or: both evaluated


def _never_equal(sop: graph.SOp, span: Span) -> graph.Map:
    """`sop == [1]` (a list, dict or function): False at every position, as the original
    compares each atom with it in Python. Built on `sop`, so its layer is the s-op's."""
    return make_map("and", (make_map("==", (sop, sop), span), False), span)


def unary(op: str, value: Any, span: Span, *, exact: bool) -> Any:
    """`not`, `neg`, `pos`, `round` and the extension maps `exp`, `log`, `sqrt`, `abs`:
    elementwise on an s-op, at once on an atom; `not` of a selector negates it."""
    if isinstance(value, graph.SOp):  # as are its unary ones
        return make_map(cast(graph.MapOp, op), (value,), span)
    if isinstance(value, graph.Selector):
        if op == "not":
            return graph.SelectorNot(operand=value, span=span)
        raise RaspTypeError(f"cannot apply {op} to a selector")
    return semantics.unary(op, value, exact=exact)


def where(condition: graph.SOp, then: Any, otherwise: Any, span: Span) -> graph.Map:
    """`then if condition else otherwise` with an s-op condition: both branches built."""
    return make_map("where", (condition, then, otherwise), span)


def contains(item: Any, container: Any, span: Span, full_s: graph.Selector) -> Any:
    """`item in container` (6.8); `full_s` is the all-true selector `atom in s-op`
    aggregates with."""
    if isinstance(item, graph.SOp):
        if not isinstance(container, list):
            raise RaspTypeError(
                '"[s-op] in X" expects X to be list of atoms, but got non-list: '
                + describe(container, 40)
            )
        if not all(is_atom(v) for v in container):
            raise RaspTypeError(
                '"[s-op] in X" expects X to be list of atoms, but got list with values: '
                + describe(container, 40)
            )
        return make_map("member", (item,), span, params=(tuple(container),))
    if is_atom(item):
        if isinstance(container, list):
            return item in container
        if isinstance(container, graph.SOp):
            # "present anywhere": an all-true mean of an indicator, then > 0.
            hits = make_map("indicator", (make_map("==", (container, item), span),), span)
            mean = graph.Aggregate(selector=full_s, values=hits, default=0, span=span)
            return make_map(">", (mean, 0), span)
        raise RaspTypeError(
            f'"[atom] in X" expects X to be list or s-op, but got: {describe(container, 40)}'
        )
    if isinstance(item, (graph.Selector, Function)):
        what = "select" if isinstance(item, graph.Selector) else "function"
        raise RaspTypeError(
            f"don't check if {what} is contained in list/dict: unless exact same "
            f"instance, unable to check equivalence of {what}s"
        )
    raise RaspTypeError(f'"A in X" expects A to be s-op or atom, but got A: {describe(item, 40)}')


def index(
    target: Any, key: Any, span: Span, *, indices: graph.SOp, length: Callable[[], Any]
) -> Any:
    """`target[key]` (6.8). `length()` gives the `length` in scope, which a negative
    s-op index counts from (as in the original, it is looked up, so it can be shadowed)."""
    if isinstance(target, (list, str)):
        what = "list" if isinstance(target, list) else "string"
        if isinstance(key, graph.SOp):
            return make_map("lookup", (key,), span, params=(target,))
        if not isinstance(key, int):
            raise RaspTypeError(
                f"index into {what} has to be s-op or integer, got: {describe(key, 40)}"
            )
        if key >= len(target) or -key > len(target):
            raise RaspTypeError(f"index {key} out of range for {what} of length {len(target)}")
        return target[key]
    if isinstance(target, dict):
        if isinstance(key, graph.SOp):
            return make_map("lookup", (key,), span, params=(target,))
        if not is_atom(key):
            raise RaspTypeError(
                "index into dict has to be s-op or atom (i.e., string, int, float, bool), "
                f"got: {describe(key, 40)}"
            )
        if key not in target:
            raise RaspTypeError(f"index [ {describe(key)} ] not in dict.")
        return target[key]
    if isinstance(target, graph.SOp):
        if not isinstance(key, int):
            raise RaspTypeError(f"index into sequence has to be integer, got: {describe(key, 40)}")
        # The value at position key, broadcast: one aggregate, so one layer.
        position: Any = key if key >= 0 else binary("+", length(), key, span, exact=False)
        selector = graph.Select(keys=indices, queries=lift(position, span), op="==", span=span)
        return graph.Aggregate(selector=selector, values=target, default=0, span=span)
    raise RaspTypeError(
        "can only index into a list, dict, string, or sequence, but instead got: "
        + describe(target, 40)
    )


def assertion(args: list, site: Span, notes: tuple[str, ...]) -> Any:
    """`assert(condition, message)` (an extension): on an atom condition, True or the
    program's own error at once; on an s-op, a bool s-op that is True everywhere and whose
    evaluation raises the error at the first position where the condition is false.
    `site` is where the error is reported (the user's call that led to the assert), and
    `notes` the library lines on the way (`Interpreter._error_site`)."""
    arity("assert", args, 2)
    condition, message = args
    if not isinstance(message, str):
        raise RaspTypeError(f"assert expects a string message, got: {describe(message, 40)}")
    if isinstance(condition, graph.SOp):
        return make_map("assert", (condition,), site, params=(message, notes))
    if not is_atom(condition):
        raise RaspTypeError(
            f"assert expects an s-op or atom condition, got: {describe(condition, 40)}"
        )
    try:
        return semantics.assertion(condition, message, notes)
    except RaspError as error:
        raise error.with_span(site) from None


def select(keys: Any, queries: Any, op: graph.Comparison, span: Span) -> graph.Select:
    """`select(keys, queries, op)`: M[q][k] = keys[k] op queries[q]; atoms lifted (6.4)."""
    return graph.Select(keys=lift(keys, span), queries=lift(queries, span), op=op, span=span)


def aggregate(
    selector: Any, values: Any, default: Any, span: Span,
    reduction: Literal["mean", "sum"] = "mean",
) -> graph.Aggregate:
    """`aggregate(sel, values[, default])` (6.5), or the `sum` extension."""
    if not isinstance(selector, graph.Selector):
        raise RaspTypeError(f"Expected selector, got: {describe(selector, 40)}")
    if isinstance(values, graph.Selector):
        raise RaspTypeError("Expected sequence, got a selector")
    if is_graph(default):
        raise RaspTypeError(f"Expected atom, got: {describe(default, 40)}")
    return graph.Aggregate(
        selector=selector, values=lift(values, span), default=default,
        reduction=reduction, span=span,
    )


# ---------------------------------------------------------------------- built-ins (6.9)


def arity(name: str, args: list, expected: int) -> None:
    if len(args) != expected:
        raise RaspTypeError(
            f"wrong number of args for {name}- expected: {expected}, got: {len(args)}."
        )


def range_length(args: list) -> int:
    """The length of the list `range(*args)` builds, its arguments checked, refused past
    MAX_COLLECTION_LENGTH."""
    if len(args) not in (1, 2, 3):
        raise RaspTypeError(
            f"wrong number of inputs to range, expected: 1, 2, or 3, got: {len(args)}"
        )
    if not all(isinstance(a, int) for a in args):
        raise RaspTypeError(f"range expects all integer inputs, but got: {describe(args)}")
    try:
        numbers = range(*args)
    except ValueError as error:  # range(1, 5, 0)
        raise RaspRuntimeError(f"range failed: {error}") from None
    check_collection_length(len(numbers), "range")
    return len(numbers)


def _range(args: list, span: Span, exact: bool) -> list:
    range_length(args)
    return list(range(*args))


def _zip(args: list, span: Span, exact: bool) -> list:
    if not args:
        raise RaspTypeError("zip needs at least one list")
    for i, value in enumerate(args):
        if not isinstance(value, list):
            raise RaspTypeError(
                f"attempting to zip lists, but {i + 1} -th element is not list: "
                + describe(value, 40)
            )
    for i, value in enumerate(args):
        if len(value) != len(args[0]):
            raise RaspTypeError(
                f"attempting to zip lists of length {len(args[0])} , but {i + 1} -th "
                f"list has length {len(value)}"
            )
    return [list(t) for t in zip(*args)]


def _len(args: list, span: Span, exact: bool) -> int:
    arity("len", args, 1)
    if not isinstance(args[0], list):
        raise RaspTypeError(f"attempting to compute length of non-list: {describe(args[0], 40)}")
    return len(args[0])


def _indicator(args: list, span: Span, exact: bool) -> Any:
    arity("indicator", args, 1)
    if not isinstance(args[0], graph.SOp):
        raise RaspTypeError(f"indicator operator expects s-op, got: {describe(args[0], 40)}")
    return make_map("indicator", (args[0],), span)


def _elementwise(name: str) -> Callable[[list, Span, bool], Any]:
    def apply(args: list, span: Span, exact: bool) -> Any:
        arity(name, args, 1)
        return unary(name, args[0], span, exact=exact)

    return apply


def _aggregate_call(reduction: Literal["mean", "sum"]) -> Callable[[list, Span, bool], Any]:
    def apply(args: list, span: Span, exact: bool) -> Any:
        if len(args) not in (2, 3):
            name = "sum" if reduction == "sum" else "aggregate"
            raise RaspTypeError(
                f"wrong number of args for {name}- expected: 2 or 3, got: {len(args)}."
            )
        default = args[2] if len(args) == 3 else 0
        return aggregate(args[0], args[1], default, span, reduction)

    return apply


# The fused-token built-ins and keywords (`range(`, `round`, ...).
BUILTINS: dict[str, Callable[[list, Span, bool], Any]] = {
    "range": _range,
    "zip": _zip,
    "len": _len,
    "round": _elementwise("round"),
    "indicator": _indicator,
}

# Extensions reached through an ordinary call of a name the program has not bound
# (docs/language.md): the whitespace forms `aggregate (`, `range (`, `zip (`,
# `len (`, the maps `exp`, `log`, `sqrt`, `abs`, and the `sum` aggregate. (The parser
# turns `select (k, q, OP)` into a Select itself.) `assert` is one too, called by the
# interpreter with the site it reports at (`assertion`).
EXTENSIONS: dict[str, Callable[[list, Span, bool], Any]] = {
    "range": _range,
    "zip": _zip,
    "len": _len,
    "aggregate": _aggregate_call("mean"),
    "sum": _aggregate_call("sum"),
    **{name: _elementwise(name) for name in ("exp", "log", "sqrt", "abs")},
}
EXTENSION_NAMES = frozenset(EXTENSIONS) | {"assert"}
