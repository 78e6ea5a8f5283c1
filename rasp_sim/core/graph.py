"""The lazy s-op/selector graph: what a RASP program denotes.

The interpreter builds these nodes; the evaluator (`rasp_sim.evaluation.evaluate`) runs them on
batches of inputs; the analyser (`rasp_sim.language.analyse`) schedules them into layers and
heads; the compiler walks them to lower them to weights.

Nodes are frozen dataclasses compared by **identity** (`eq=False`): two textually equal
`select(...)` expressions are two heads (docs/language.md), so structural equality
would be wrong. Each node remembers the span that created it and a display `name`.

Every elementwise computation is a `Map` with an `op` from the closed set `MapOp`:
RASP has no user lambdas, so a closed set lets the evaluator vectorise each op and the
compiler lower it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Literal, Sequence, Union, cast

from ..base.errors import Span
from ..base.renderers import renderer

if TYPE_CHECKING:  # networkx is imported where a graph is built: `rasp-sim run` never needs it
    import networkx as nx

TokensKind = Literal["str", "int", "float", "bool", "asis"]
Comparison = Literal["==", "!=", "<", ">", "<=", ">="]

# The closed set of elementwise operations. `params` of a Map carries any atom data the
# op needs (a lookup table, a member list, a broadcast atom is a Full node instead).
MapOp = Literal[
    # binary arithmetic and comparison, Python semantics (docs/language.md)
    "+", "-", "*", "/", "%", "^", "==", "!=", "<", ">", "<=", ">=",
    # s-op boolean operators: always give bools (6.3)
    "and", "or", "not",
    # unary
    "neg", "pos", "round", "indicator",
    # `then if cond else otherwise` with inputs (cond, then, otherwise) (6.7)
    "where",
    # `table[sop]`: params = (table,) where table is a list, str or dict (6.8)
    "lookup",
    # `sop in members`: params = (members,) a list of atoms (6.8)
    "member",
    # extension maps (docs/language.md, "Extensions")
    "exp", "log", "sqrt", "abs",
    # `assert(cond, message)` on an s-op: True, or the program's error where cond is
    # false; params = (message, notes) (docs/language.md, "Extensions")
    "assert",
]


@dataclass(frozen=True, eq=False, repr=False)
class Node:
    span: Span | None = field(default=None, kw_only=True)
    name: str | None = field(default=None, kw_only=True)

    def set_name(self, name: str) -> None:
        """Give the node a display name, in place.

        The one mutable field, on purpose: as in the original, `x = e` names the object
        `e` denotes, and the object's identity must not change, because heads are
        counted by selector identity (docs/language.md). Names never affect values."""
        object.__setattr__(self, "name", name)

    def children(self) -> tuple["Node", ...]:
        return ()

    def with_children(self, children: Sequence["Node"]) -> "Node":
        """A copy of this node (same span and name) whose children are `children`, in
        `children()` order: the one place that knows which field holds which child."""
        assert not children, f"{type(self).__name__} has no children"
        return self

    def __repr__(self) -> str:
        # Shallow on purpose: the dataclass repr would nest the whole graph and hit the
        # recursion limit on deep programs.
        label = f" {self.name!r}" if self.name else ""
        return f"<{type(self).__name__}{label} at {self.span}>"

    def _repr_svg_(self) -> str:
        """Jupyter: the `rasp-sim draw` picture of this s-op or selector."""
        node_svg = renderer("notebook", "node_svg")

        return node_svg(self)


# ----------------------------------------------------------------------------- s-ops


@dataclass(frozen=True, eq=False, repr=False)
class SOp(Node):
    """A sequence operator: input sequence -> sequence of atoms of the same length."""


@dataclass(frozen=True, eq=False, repr=False)
class Tokens(SOp):
    kind: TokensKind = "str"


@dataclass(frozen=True, eq=False, repr=False)
class Indices(SOp):
    pass


@dataclass(frozen=True, eq=False, repr=False)
class Full(SOp):
    """An atom lifted to a constant s-op (depth 0)."""

    value: Any = None


@dataclass(frozen=True, eq=False, repr=False)
class Map(SOp):
    op: MapOp = "+"
    inputs: tuple[SOp, ...] = ()
    params: tuple[Any, ...] = ()

    def children(self) -> tuple[Node, ...]:
        return self.inputs

    def with_children(self, children: Sequence[Node]) -> Node:
        return replace(self, inputs=tuple(cast(Sequence[SOp], children)))


@dataclass(frozen=True, eq=False, repr=False)
class Aggregate(SOp):
    """Mean (or, as an extension, sum) of the selected values, with RASP's rules:
    0 selected -> default; 1 -> that value unchanged; >= 2 -> float mean, numeric only
    (docs/language.md)."""

    selector: "Selector" = None  # type: ignore[assignment]
    values: SOp = None  # type: ignore[assignment]
    default: Any = 0
    reduction: Literal["mean", "sum"] = "mean"

    def children(self) -> tuple[Node, ...]:
        return (self.selector, self.values)

    def with_children(self, children: Sequence[Node]) -> Node:
        selector, values = children
        return replace(self, selector=cast(Selector, selector), values=cast(SOp, values))


# -------------------------------------------------------------------------- selectors


@dataclass(frozen=True, eq=False, repr=False)
class Selector(Node):
    """A lazy n x n boolean matrix, M[q][k]."""


@dataclass(frozen=True, eq=False, repr=False)
class Select(Selector):
    """M[q][k] = keys[k] op queries[q]."""

    keys: SOp = None  # type: ignore[assignment]
    queries: SOp = None  # type: ignore[assignment]
    op: Comparison = "=="

    def children(self) -> tuple[Node, ...]:
        return (self.keys, self.queries)

    def with_children(self, children: Sequence[Node]) -> Node:
        keys, queries = children
        return replace(self, keys=cast(SOp, keys), queries=cast(SOp, queries))


@dataclass(frozen=True, eq=False, repr=False)
class SelectorPair(Selector):
    """A selector combining two selectors elementwise: `and` or `or`."""

    left: Selector = None  # type: ignore[assignment]
    right: Selector = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.left, self.right)

    def with_children(self, children: Sequence[Node]) -> Node:
        left, right = children
        return replace(self, left=cast(Selector, left), right=cast(Selector, right))


@dataclass(frozen=True, eq=False, repr=False)
class SelectorAnd(SelectorPair):
    pass


@dataclass(frozen=True, eq=False, repr=False)
class SelectorOr(SelectorPair):
    pass


@dataclass(frozen=True, eq=False, repr=False)
class SelectorNot(Selector):
    operand: Selector = None  # type: ignore[assignment]

    def children(self) -> tuple[Node, ...]:
        return (self.operand,)

    def with_children(self, children: Sequence[Node]) -> Node:
        (operand,) = children
        return replace(self, operand=cast(Selector, operand))


GraphValue = Union[SOp, Selector]


# ---------------------------------------------------------------------------- walking


def ancestors(
    roots: "Node | tuple[Node, ...] | list[Node]",
    children: "Callable[[Node], Sequence[Node]] | None" = None,
) -> Iterator[Node]:
    """Every node `roots` depend on (roots included), each once, children before parents;
    `children(node)` in place of `node.children()` if given (the evaluator's fused nodes
    depend on their pattern's inputs)."""
    if isinstance(roots, Node):
        roots = (roots,)
    seen: set[int] = set()
    order: list[Node] = []
    stack: list[tuple[Node, bool]] = [(r, False) for r in reversed(list(roots))]
    while stack:  # iterative: deep programs would overflow Python's recursion limit
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for child in reversed(node.children() if children is None else children(node)):
            if id(child) not in seen:
                stack.append((child, False))
    return iter(order)


def to_networkx(roots: "Node | tuple[Node, ...] | list[Node]") -> nx.DiGraph:
    """A DiGraph whose nodes are the graph nodes themselves, edges child -> parent."""
    import networkx as nx

    g = nx.DiGraph()
    for node in ancestors(roots):
        g.add_node(node)
        for child in node.children():
            g.add_edge(child, node)
    return g
