"""Static rejection: what tracr cannot lower, found before tracr runs.

Every refusal is an `Unsupported` error naming the construct, the reason and the source
location of the rasp-sim node that needs it (file:line:col through `RaspError.format`).
The translator (translate.py) raises it where a construct has no lowering; `check_graph`
walks the graph first so the common cases are reported before any tracr object exists.
"""
from __future__ import annotations

from typing import Iterable

from rasp_sim.core import graph as g
from rasp_sim.base.errors import CompileError, RaspError, RaspResourceError, Span

from .runtime import MAX_LEN

# Above these sizes a lookup table or value set would make a model nobody can use; the
# limits are checked before anything is enumerated (docs/compiler.md).
MAX_VALUE_SET = 5_000
MAX_TABLE = 100_000
MAX_VOCAB = 1_000
# Longest chain of operations (s-ops and selectors) compiled: the passes recurse through a
# node's operands, a few Python frames per level, and time and memory grow with the
# square of the depth (1,000 nested aggregates: 9 s and 0.5 GB measured; 2,000: 40 s and
# 1.9 GB). The library's deepest programs are about 120 deep.
MAX_DEPTH = 1_000
# Python frames per level of depth that the compile passes are allowed (about 3 measured
# for maps and aggregates), for the recursion limit they run under.
FRAMES_PER_LEVEL = 40


class Unsupported(CompileError):
    """A construct the tracr backend cannot lower (or refuses to, with the reason)."""

    kind = "cannot compile"

    def __init__(self, construct: str, reason: str, span: Span | None = None):
        super().__init__(f"{construct}: {reason}", span)
        self.construct = construct
        self.reason = reason


def describe(node: g.Node) -> str:
    """A short name of a node for messages: its construct, and its name if it has one."""
    kind = type(node).__name__
    if isinstance(node, g.Map):
        kind = f"map '{node.op}'"
    elif isinstance(node, g.Select):
        kind = f"select(…, …, {node.op})"
    elif isinstance(node, g.Aggregate):
        kind = "aggregate" if node.reduction == "mean" else "sum-aggregate"
    return f"{kind} '{node.name}'" if node.name else kind


def check_depth(root: g.Node) -> None:
    """Refuse a graph deeper than MAX_DEPTH before any pass recurses through it, at the
    operation where the chain passes the limit."""
    depths: dict[int, int] = {}
    for node in g.ancestors(root):  # iterative, children first
        depth = 1 + max((depths[id(c)] for c in node.children()), default=0)
        if depth > MAX_DEPTH:
            raise RaspResourceError(
                f"{describe(node)} ends a chain of {depth:,} operations, each built on the "
                f"previous one: above the compiler's limit of {MAX_DEPTH:,} "
                "(rasp_sim.compiler.tracr_backend.checks.MAX_DEPTH)", node.span)
        depths[id(node)] = depth


def check_graph(root: g.Node) -> None:
    """Refuse what no lowering can take: a selector as the output, several token kinds."""
    if not isinstance(root, g.SOp):
        raise Unsupported(describe(root), "only an s-op can be compiled (this is a selector)",
                          root.span)
    kinds: dict[int, frozenset] = {}
    for node in g.ancestors(root):  # children first: the first mixing node is where it happens
        kinds[id(node)] = (frozenset([node.kind]) if isinstance(node, g.Tokens) else
                           frozenset().union(*(kinds[id(c)] for c in node.children())))
        if len(kinds[id(node)]) > 1:
            raise Unsupported("tokens", "the program reads the input as several kinds "
                              f"({', '.join(sorted(kinds[id(node)]))}); a compiled model has "
                              "one token vocabulary, so use one of tokens_str/int/float/bool/"
                              "asis", node.span)


def tokens_kind(root: g.SOp) -> str:
    """The kind (str, int, ...) in which the program reads its input; "str" if it reads none
    (several kinds are refused by check_graph)."""
    kinds = sorted({n.kind for n in g.ancestors(root) if isinstance(n, g.Tokens)})
    return kinds[0] if kinds else "str"


def check_vocab(vocab: Iterable[object], max_len: int) -> None:
    """The declared input domain must be non-empty, of moderate size, duplicate-free."""
    vocab = list(vocab)
    if not vocab:
        raise Unsupported("vocabulary", "is empty: give at least one token with --vocab")
    if len(vocab) > MAX_VOCAB:
        raise Unsupported("vocabulary", f"has {len(vocab)} tokens; the limit is {MAX_VOCAB} "
                          "(every token is a residual dimension and an embedding row)")
    seen: list[object] = []
    for token in vocab:
        if any(token == s and type(token) is type(s) for s in seen):
            raise Unsupported("vocabulary", f"lists {token!r} twice")
        seen.append(token)
    if max_len < 1:
        raise Unsupported("max-len", f"must be at least 1, got {max_len}")
    if max_len > MAX_LEN:
        raise Unsupported("max-len", f"{max_len} is above the limit {MAX_LEN} (every position "
                          "is a residual dimension)")
