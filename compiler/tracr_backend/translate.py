"""Lowering a rasp-sim s-op graph to tracr RASP expressions (docs/compiler.md).

One tracr expression per graph node, in the encoding tracr can compile:
- tokens and indices are categorical; constants (`Full`) are folded into the functions and
  predicates that use them, and only a constant that stands alone becomes a map of tokens;
- a Map absorbs the Maps only it uses when its table does not grow (one MLP for
  `length - indices - 1` or `a if a > b else b`); then with one varying input it is a tracr
  Map (categorical output; a numerical input is discretised), with two a SequenceMap (a numerical `a ± b` a LinearSequenceMap), of more a
  chain of tuple-valued SequenceMaps;
- a selector, composite or not, becomes ONE tracr Select: its leaves' varying keys (and
  queries) are joined into one categorical s-op, as a tuple when there are several
  (google-deepmind/tracr#4's workaround), and the predicate evaluates the whole and/or/not
  tree; `select(...) and select(...)` over the same s-ops needs no tuple at all;
- an aggregate is numerical (tracr's mean head) when its values are numbers and its
  selector may select several keys, else categorical; either way rasp-sim's default is kept
  by the head itself (annotation DEFAULT, blocks.py), never tracr's None or forced 0, and
  values computed by maps from one categorical s-op are folded into the head's value
  table (annotation VALUE_MAP): no MLP before it;
- the standard library's `length` and `selector_width` are recognised and lowered to
  tracr's SelectorWidth primitive (patterns.py).
Each expression carries the span of its node (annotation SPAN) for error messages.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeGuard, cast

from tracr.rasp import rasp

from rasp_sim.core import atom_functions
from rasp_sim.core import graph as g
from rasp_sim.base.errors import RaspError

from rasp_sim.core import library_patterns as patterns
from . import predicates
from .atoms import NOT_CONSTANT, atom_function, total
from .bases import (DEFAULT, OPERANDS, SCALE, SIDES, SIGNED, SPAN, SUM, VALUE_MAP, ValueSets,
                    is_numeric_column, plain, typed)
from .checks import MAX_TABLE, MAX_VALUE_SET, Unsupported, check_graph, describe, tokens_kind
from .continuous import (MASK_MARGIN, ContinuousLowering, LayerNormPick, NumericDomain,
                         PolyMap, Region, SoftmaxPick, poly_bound, positions_coefficient,
                         region_failure, terms_of, used_leaves)
from .polynomial import Poly
from .static import StaticValues

CAT, NUM = rasp.Encoding.CATEGORICAL, rasp.Encoding.NUMERICAL


@dataclass
class Translation:
    sink: rasp.SOp
    value_sets: ValueSets
    tokens_kind: str
    # The s-op each expression's label computes (as its residual directions hold it), so
    # a model's residual stream can be checked against the interpreter s-op by s-op.
    sources: dict[str, g.SOp] = field(default_factory=dict)


def translate(root: g.SOp, vocab: Sequence[Any], max_len: int, *, min_len: int = 1,
              numeric: NumericDomain | None = None, causal: bool = False) -> Translation:
    """`root` as a tracr program over `vocab` (values as the program's tokens see them),
    or over real-valued tokens (`numeric`, vocab unused) of lengths min_len..max_len;
    `causal`: for a model whose heads attend to keys k <= q only, so that what the
    lowering reads at compile time (a sum's width, static.py) is what that model computes."""
    check_graph(root)
    network = g.to_networkx(root)
    consumers = {id(n): d for n, d in network.out_degree()}
    translator = _Translator(ValueSets(vocab, max_len), consumers,
                             StaticValues(min_len, max_len, causal), numeric)
    translator.read_by_maps_only = {id(n) for n in network
                                    if all(isinstance(u, g.Map) for u in network.successors(n))}
    sink = translator.sop(root)
    if sink is rasp.tokens or sink is rasp.indices:  # the output is an input: copy it by an
        # MLP into its own output space (tracr's layer allocation needs at least one block)
        sink = _named(rasp.Map(lambda x: x, sink, simplify=False), root, CAT)
    sources = {translator.memo[id(node)].label: node for node in network
               if isinstance(node, g.SOp) and id(node) in translator.memo}
    return Translation(sink, translator.value_sets, tokens_kind(root), sources)




def _named(expr: rasp.SOp | rasp.Select, node: g.Node, encoding: rasp.Encoding | None = None,
           part: Any = "", **extra: Any) -> Any:  # Any: mypy cannot tell it from **extra
    """`expr` annotated with the node's name (plus `_part` for one of several expressions
    lowering one node: labels must be unique), span and encoding."""
    name = "".join(c if c.isalnum() else "_" for c in (node.name or type(node).__name__.lower()))
    name += f"_{part}" if part else ""
    annotations: dict[str, Any] = {"name": name, SPAN: node.span, **extra}
    if encoding is not None:
        annotations["encoding"] = encoding
    return rasp.annotate(expr, **annotations)


class _Translator(ContinuousLowering):
    def __init__(self, value_sets: ValueSets, consumers: dict[int, int], static: StaticValues,
                 numeric: NumericDomain | None):
        self.value_sets = value_sets
        self.static = static
        self.numeric = numeric
        self.continuity: dict[int, bool] = {}
        self.bounds: dict[int, float] = {}
        self.regions: dict[int, Region] = {}
        self.expansions: dict[int, tuple[list[g.SOp], Callable[..., Any]]] = {}
        self.value_memo: dict[int, frozenset | None] = {}
        self.consumers = consumers  # how many nodes use each node (fusion needs exactly 1)
        self.memo: dict[int, rasp.SOp] = {}
        self.softmax_picks: dict[int, rasp.SOp] = {}  # id of the softmax's sum -> its head
        self.layer_norm_picks: dict[tuple, rasp.SOp] = {}  # (quotient id, rows) -> its pick
        self.answer_maps: list[rasp.SOp] = []  # selects keyed on answers (_on_answers)
        self.converted: dict[tuple[int, rasp.Encoding], rasp.SOp] = {}
        self.tuples: dict[tuple[int, ...], rasp.SOp] = {}
        self.selectors: dict[int, rasp.Select] = {}
        self.constants: dict[int, Any] = {}
        self.base_functions: dict[int, tuple[list[g.SOp], Callable[..., Any]]] = {}

    # -- s-ops in their natural encoding
    def sop(self, node: g.SOp) -> rasp.SOp:
        if id(node) not in self.memo:
            self.memo[id(node)] = self._sop(node)
        return self.memo[id(node)]

    def _sop(self, node: g.SOp) -> rasp.SOp:
        value = self.constant(node)
        if value is not NOT_CONSTANT:  # a constant on its own: a map of tokens (one MLP)
            stored = typed(value)
            carrier = rasp.tokens if self.numeric is None else rasp.indices  # categorical
            return _named(rasp.Map(lambda _: stored, carrier, simplify=False), node, CAT)
        if isinstance(node, g.Tokens):
            return rasp.tokens if self.numeric is None else rasp.numerical(rasp.tokens)
        if isinstance(node, g.Indices):
            return rasp.indices
        recognised = patterns.selector_width_of(node)
        if recognised is not None:
            return _named(rasp.SelectorWidth(self.selector(recognised)), node, CAT)
        if isinstance(node, g.Map):
            return self._poly_map(node) if self.continuous(node) else self._map(node)
        if isinstance(node, g.Aggregate):
            return self._aggregate(node)
        raise Unsupported(describe(node), "has no tracr lowering", node.span)

    def constant(self, node: g.SOp) -> Any:
        """The node's value if it is the same at every position of every input."""
        if id(node) not in self.constants:
            self.constants[id(node)] = self._constant(node)
        return self.constants[id(node)]

    def _constant(self, node: g.SOp) -> Any:
        if isinstance(node, g.Full):
            return node.value
        if isinstance(node, g.Map):
            args = [self.constant(x) for x in node.inputs]
            if all(a is not NOT_CONSTANT for a in args):
                try:
                    return atom_function(node)(*args)
                except RaspError as error:
                    raise error.with_span(node.span)
        return NOT_CONSTANT

    def as_encoding(self, node: g.SOp, encoding: rasp.Encoding) -> rasp.SOp:
        """The node in `encoding`, through an explicit conversion map if needed."""
        if encoding == CAT:
            self.refuse_continuous(node, "where a categorical value is needed (a select's "
                                   "keys or queries, a lookup table, a categorical aggregate)")
        expr = self.sop(node)
        if rasp.get_encoding(expr) == encoding:
            return expr
        key = (id(node), encoding)
        if key not in self.converted:
            if encoding == NUM:
                self._check_averaged(node, expr)
                conversion = _named(rasp.Map(plain, expr, simplify=False), node, NUM,
                                    **{SIGNED: True})
            else:
                conversion = _named(rasp.Map(lambda x: x, expr, simplify=False), node, CAT)
            self.converted[key] = conversion
        return self.converted[key]

    def _check_averaged(self, node: g.SOp, expr: rasp.SOp) -> None:
        """The values of `node` (lowered as `expr`) can be averaged by a numerical head."""
        values = self.value_sets.of(expr)
        if not is_numeric_column(values):
            raise Unsupported(describe(node), "its values are averaged over several keys "
                              "but are not all numbers", node.span)
        if not all(math.isfinite(plain(v)) for v in values):
            raise Unsupported(describe(node), "takes a non-finite value (inf or nan) and "
                              "is averaged over several keys: a numerical direction "
                              "cannot carry it (a weight of 0 times inf is nan)", node.span)

    # -- maps
    def _operands(self, node: g.Map) -> tuple[list[g.SOp], Callable[..., Any]]:
        """The node's distinct varying inputs, and its function of them (constants folded)."""
        fn = atom_function(node)
        varying: list[g.SOp] = []
        for x in node.inputs:
            if self.constant(x) is NOT_CONSTANT and all(x is not v for v in varying):
                varying.append(x)
        slots = [next((i for i, v in enumerate(varying) if v is x), None) for x in node.inputs]
        fixed = [self.constant(x) if s is None else None for x, s in zip(node.inputs, slots)]

        def apply(*xs: Any) -> Any:
            return fn(*[c if s is None else xs[s] for c, s in zip(fixed, slots)])
        return varying, apply

    def _is_linear(self, node: g.Map, varying: list[g.SOp]) -> bool:
        """`a ± b` of two numerical s-ops: a LinearSequenceMap (exact, no value set)."""
        return (len(varying) == 2 and node.op in ("+", "-") and list(node.inputs) == varying
                and all(rasp.is_numerical(self.sop(v)) for v in varying))

    def _fusable(self, node: g.SOp) -> TypeGuard[g.Map]:
        """A Map used only by one other Map may be folded into it (fewer MLP layers)."""
        if not isinstance(node, g.Map) or self.consumers.get(id(node), 0) != 1:
            return False
        if id(node) in self.memo or self.constant(node) is not NOT_CONSTANT:
            return False
        if patterns.selector_width_of(node) is not None:
            return False
        varying = self._operands(node)[0]
        # _is_linear translates its operands, which makes them unfusable: ask it only
        # where both could be numerical (a lookup, a product: categorical maps never are)
        return not (all(self._may_be_numerical(v) for v in varying)
                    and self._is_linear(node, varying))

    def _may_be_numerical(self, node: g.SOp) -> bool:
        """Whether `node` may be translated as a numerical s-op, decided without
        translating it: a Map is categorical unless it is `a ± b` or continuous."""
        if id(node) in self.memo:
            return rasp.is_numerical(self.memo[id(node)])
        return not isinstance(node, g.Map) or node.op in ("+", "-") or self.continuous(node)

    def _expanded(self, node: g.Map) -> tuple[list[g.SOp], Callable[..., Any]]:
        """The node as one function of s-ops further down: a fusable input is replaced by
        its own inputs when the fused lookup table is no larger than the two it replaces
        (`length - indices - 1`, `a if a > b else b`: one MLP each). Memoised, and sized
        by `values_of` without translating anything, so a chain of n maps costs O(n)
        (trial translations nested exponentially: a 50-map chain did not finish)."""
        if id(node) in self.expansions:
            return self.expansions[id(node)]
        varying, apply = self._operands(node)
        changed = True
        while changed:
            changed = False
            for i, v in enumerate(varying):
                if not self._fusable(v):
                    continue
                inner, inner_apply = self._expanded(v)
                rest = varying[:i] + varying[i + 1:]
                merged = rest + [x for x in inner if all(x is not r for r in rest)]
                if len(merged) > max(2, len(varying)):
                    continue  # three or more inputs need tuple maps: more layers, not fewer
                if self._table(merged) > self._table(varying) + self._table(inner):
                    continue  # one MLP, but wider than the two it replaces
                apply = _substitute(apply, i, inner_apply,
                                    [_position(merged, r) for r in rest],
                                    [_position(merged, x) for x in inner])
                varying, changed = merged, True
                break
        self.expansions[id(node)] = varying, apply
        return varying, apply

    def _table(self, nodes: Sequence[g.SOp]) -> float:
        """Rows of a lookup table over `nodes` (categorically); inf if too large to know."""
        sizes = [self.values_of(n) for n in nodes]
        known = [len(v) for v in sizes if v is not None]
        return math.inf if len(known) < len(sizes) else math.prod(known)

    def values_of(self, node: g.SOp) -> frozenset | None:
        """The node's categorical values (bases.typed), or None if unknown or too many.
        A Map's are the image of its inputs' (memoised per node: fusion never changes a
        node's values); other nodes' come from their translation's value set."""
        if id(node) in self.value_memo:
            return self.value_memo[id(node)]
        value = self.constant(node)
        result: frozenset | None
        if value is not NOT_CONSTANT:
            result = frozenset([typed(value)])
        elif isinstance(node, g.Map) and patterns.selector_width_of(node) is None \
                and not self.continuous(node):
            known = [v for v in map(self.values_of, node.inputs) if v is not None]
            if len(known) < len(node.inputs) or math.prod(map(len, known)) > MAX_TABLE:
                result = None
            else:
                image = total(atom_function(node))
                values = {image(*combo) for combo in itertools.product(*known)} - {None}
                result = frozenset(values) if len(values) <= MAX_VALUE_SET else None
        else:
            try:
                result = frozenset(self.value_sets.of(self.as_encoding(node, CAT)))
            except Unsupported:
                result = None
        self.value_memo[id(node)] = result
        return result

    def _map(self, node: g.Map) -> rasp.SOp:
        varying, apply = self._expanded(node)
        if len(varying) == 1:
            return _named(rasp.Map(total(apply), self.sop(varying[0]), simplify=False), node, CAT)
        if self._is_linear(node, varying):
            sign = 1 if node.op == "+" else -1
            linear = rasp.LinearSequenceMap(self.sop(varying[0]), self.sop(varying[1]), 1, sign)
            return _named(linear, node, NUM)
        operands = [self.as_encoding(v, CAT) for v in varying]
        if len(operands) == 2:
            return _named(rasp.SequenceMap(total(apply), *operands), node, CAT,
                          **{OPERANDS: tuple(varying)})
        head = self.tuple_of(varying[:-1])
        return _named(rasp.SequenceMap(total(lambda t, z: apply(*t, z)), head, operands[-1]),
                      node, CAT, **{OPERANDS: tuple(varying)})

    def tuple_of(self, nodes: Sequence[g.SOp]) -> rasp.SOp:
        """One categorical s-op whose value is the tuple of the nodes' values."""
        key = tuple(id(n) for n in nodes)
        if key not in self.tuples:
            expr = _named(rasp.Map(lambda x: (x,), self.as_encoding(nodes[0], CAT),
                                   simplify=False), nodes[0], CAT)
            for n in nodes[1:]:
                expr = _named(rasp.SequenceMap(lambda t, x: t + (x,), expr,
                                               self.as_encoding(n, CAT)), n, CAT)
                self.value_sets.of(expr)  # refuses early if the tuple table is too large
            self.tuples[key] = expr
        return self.tuples[key]

    # -- continuous maps (continuous.py)
    def _poly_map(self, node: g.Map) -> rasp.SOp:
        region = self.region(node)
        terms = terms_of(region)
        if terms is None:
            failure = region_failure(region)
            reason = failure.reason if failure else ("is a polynomial of degree above 2, or "
                                                     "of degree 2 with a coefficient that "
                                                     "depends on a categorical value")
            raise Unsupported(describe(node), reason, (failure.span if failure else None)
                              or node.span)
        used = used_leaves(terms)
        for key in used:
            if key in region.softmax:
                self._check_softmax_use(region, terms, key)
        leaves = {key: (self._softmax(region.softmax[key]) if key in region.softmax
                        else self._layer_norm(region, terms, key) if key in region.layer_norm
                        else self.sop(region.leaves[key])) for key in used}
        return _named(self._poly_expr(region, terms, leaves), node, NUM)

    def _poly_expr(self, region: Region, terms: list, leaves: dict) -> PolyMap:
        if len(region.bases) == 1:
            base = self.as_encoding(region.bases[0], CAT)
            values = [typed(a[0]) for a in region.assignments]
        elif region.bases:
            base = self.tuple_of(region.bases)
            values = [typed(tuple(a)) for a in region.assignments]
        else:
            base, values = None, [None for _ in region.assignments]
        return PolyMap(base, leaves, terms, values)

    def _check_softmax_use(self, region: Region, terms: list, key: Any) -> None:
        """exp(a_q) / sum over sel(q) of exp(a_k) is the softmax weight of the query's own
        key only if the query selects itself: check every query where it is used."""
        total, _ = region.softmax[key]
        where = positions_coefficient(region, terms, key, self.static)
        if where is None or not self.static.is_static(total.selector):
            raise Unsupported(describe(total), "is a softmax's normaliser whose selector or "
                              "use depends on the tokens; the compiler must know that every "
                              "query using it selects itself", total.span)
        for n, (used, matrix) in zip(self.static.lengths,
                                     zip(where, self.static.matrices(total.selector))):
            if used is None or matrix is None:  # the program fails at n (static.py)
                continue
            bad = [q for q in range(n) if used[q] != 0 and not matrix[q, q]]
            if bad:
                raise Unsupported(describe(total), f"is a softmax's normaliser, but at length "
                                  f"{n} query {bad[0]} uses exp(a)/sum without selecting "
                                  "itself, which is not a softmax weight", total.span)

    def _softmax(self, parts: tuple[g.Aggregate, g.SOp]) -> rasp.SOp:
        total, score = parts
        if id(total) not in self.softmax_picks:
            expr, bound = self._score(score, total.selector)
            select = self.selector(total.selector)
            self.softmax_picks[id(total)] = _named(
                SoftmaxPick(expr, select, 2 * bound + MASK_MARGIN), total, NUM)
        return self.softmax_picks[id(total)]

    def _layer_norm(self, region: Region, terms: list, key: Any) -> rasp.SOp:
        """LayerNorm(z over the row of keys the selector gives the query), at the query's
        own key: the row gathered by one head per slot, a LayerNorm block over those
        directions and a pick by the query's slot (continuous.LayerNormPick). A row must be
        a class: every query using the value selects itself and keys that select exactly
        the same keys, the same keys at every length, and all rows have one size."""
        parts = region.layer_norm[key]
        where = positions_coefficient(region, terms, key, self.static)
        if where is None or not self.static.is_static(parts.selector):
            raise Unsupported(describe(parts.selector), "is a layer_norm's row selector whose "
                              "selector or use depends on the tokens; the compiler must know "
                              "every query's row", parts.selector.span)
        rows: dict[int, tuple[int, ...]] = {}
        for n, used, matrix in zip(self.static.lengths, where,
                                   self.static.matrices(parts.selector)):
            if used is None or matrix is None:  # the program fails at n (static.py)
                continue
            for q in np.flatnonzero(used).tolist():
                row = tuple(np.flatnonzero(matrix[q]).tolist())
                if q not in row or any((matrix[k] != matrix[q]).any() for k in row):
                    raise Unsupported(describe(parts.selector), f"is a layer_norm's row "
                                      f"selector, but at length {n} query {q}'s keys do not "
                                      "all select the same keys, itself included (a row must "
                                      "be a class of positions)", parts.selector.span)
                if rows.setdefault(q, row) != row:
                    raise Unsupported(describe(parts.selector), f"is a layer_norm's row "
                                      f"selector whose row for query {q} changes with the "
                                      "length; a compiled model gathers one row per query",
                                      parts.selector.span)
        sizes = sorted({len(row) for row in rows.values()})
        if len(sizes) > 1:
            raise Unsupported(describe(parts.selector), f"is a layer_norm's row selector with "
                              f"rows of {sizes} keys; a LayerNorm block normalises rows of "
                              "one size", parts.selector.span)
        memo_key = (key[1], tuple(sorted(rows.items())))
        if memo_key not in self.layer_norm_picks:
            values = self.sop(parts.values)
            width = sizes[0] if sizes else 1
            gathers = [_named(rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices, _slot_key(
                rows, j)), values, default=0), parts.values, NUM,
                part=f"row{j}_{len(self.layer_norm_picks)}") for j in range(width)]
            slots = {q: row.index(q) for q, row in rows.items()}
            self.layer_norm_picks[memo_key] = _named(
                LayerNormPick(gathers, slots, parts.eps), parts.values, NUM,
                part=f"layer_norm_{len(self.layer_norm_picks)}")
        return self.layer_norm_picks[memo_key]

    def _score(self, score: g.SOp, sel: g.Selector) -> tuple[rasp.SOp, float]:
        """The softmax's score as an s-op, without shifts constant over each selection."""
        if not isinstance(score, g.Map):
            return self.sop(score), self.bound(score)
        region = self.region(score)
        terms = terms_of(region)
        if terms is None:
            return self.sop(score), self.bound(score)  # raises the region's reason
        shifts = {key for key in used_leaves(terms)
                  if key in region.leaves and self._shift(region, terms, key, sel)}
        kept = [(m, c) for m, c in terms
                if not any(a == ("leaf", key) for a in m for key in shifts)]
        leaves = {key: self.sop(region.leaves[key]) for key in used_leaves(kept)}
        polys = [Poly({m: c[i] for m, c in kept if i in c}) for i in range(len(region.values))]
        bound = max((poly_bound(p, lambda k: self._leaf_bound(region, k)) for p in polys),
                    default=0.0)
        return _named(self._poly_expr(region, kept, leaves), score, NUM), bound

    def _shift(self, region: Region, terms: list, key: Any, sel: g.Selector) -> bool:
        """Is leaf `key` of the score the same at every key a query selects, with the same
        coefficient? Then softmax does not see it (CONTINUOUS.md: the max-subtraction)."""
        top = region.leaves[key]
        if not (isinstance(top, g.Aggregate) and top.reduction == "mean"
                and isinstance(top.selector, g.SelectorAnd)):
            return False
        parts = (top.selector.left, top.selector.right)
        fixed = [p for p in parts if isinstance(p, g.Select) and self.constant(p.queries)
                 is not NOT_CONSTANT]
        classes = [p for p in parts if self.static.is_static(p)]
        if not fixed or not classes or not self.static.is_static(sel):
            return False
        classes_of = classes[0] if classes[0] is not fixed[0] else classes[-1]
        coefficient = positions_coefficient(region, terms, key, self.static)
        if coefficient is None:
            return False
        for used, selection, grouping in zip(coefficient, self.static.matrices(sel),
                                             self.static.matrices(classes_of)):
            if used is None or selection is None or grouping is None:  # fails there
                continue
            for q in range(len(used)):
                keys = np.flatnonzero(selection[q])
                if not all((grouping[k] == grouping[q]).all() for k in keys):
                    return False
                if len({used[k] for k in keys}) > 1:
                    return False
        return True

    # -- selectors
    def selector(self, sel: g.Selector) -> rasp.Select:
        if id(sel) not in self.selectors:
            self.selectors[id(sel)] = self._selector(sel)
        return self.selectors[id(sel)]

    def _selector(self, sel: g.Selector) -> rasp.Select:
        keys: list[g.SOp] = []
        queries: list[g.SOp] = []
        for leaf in _leaves(sel):
            for side, found in ((leaf.keys, keys), (leaf.queries, queries)):
                if self.constant(side) is NOT_CONSTANT:
                    self.refuse_continuous(side, "as a select's keys or queries")
                    for node in self._folded(side)[0]:
                        if all(node is not s for s in found):
                            found.append(node)
        predicate = predicates.Predicate(self._predicate_tree(sel, keys, queries),
                                         len(keys) > 1, len(queries) > 1)
        key_sop = self._side(keys)
        query_sop = self._side(queries)
        sides = tuple(", ".join(describe(n) for n in side) for side in (keys, queries))
        select = _named(rasp.Select(key_sop, query_sop, predicate), sel, **{SIDES: sides})
        return self._on_answers(select, sel)

    def _on_answers(self, select: rasp.Select, sel: g.Selector) -> rasp.Select:
        """A select whose keys are a numerical s-op made categorical (a discretising MLP
        with one output direction per value: a mean of means has hundreds) and whose
        queries take few values keys on the answers instead: the tuple of the predicate's
        answers against each query value, a map of the same numerical s-op (one MLP in
        the same sublayer, a few directions). The same for numerical queries against few
        key values. The select is checked on the merged values first (check_select): the
        answers of a stored value then stand for every member's."""
        for side in ("keys", "queries"):
            converted = getattr(select, side)
            other = select.queries if side == "keys" else select.keys
            if not (isinstance(converted, rasp.Map) and rasp.is_numerical(converted.inner)):
                continue
            others = sorted(self.value_sets.of(other), key=repr)
            if 4 * len(others) >= len(self.value_sets.of(converted)):
                continue
            self.value_sets.check_select(select)
            answers = _named(rasp.Map(_asker(select.predicate, converted.f, others,
                                             side == "keys"), converted.inner, simplify=False),
                             sel, CAT,
                             part=f"answers{len(self.answer_maps)}")
            self.answer_maps.append(answers)
            position = {value: i for i, value in enumerate(others)}
            if side == "keys":
                select = _named(rasp.Select(answers, other, lambda a, q: a[position[q]]), sel,
                                **{SIDES: select.annotations[SIDES]})
            else:
                select = _named(rasp.Select(other, answers, lambda k, a: a[position[k]]), sel,
                                **{SIDES: select.annotations[SIDES]})
        return select

    def _side(self, nodes: list[g.SOp]) -> rasp.SOp:
        if not nodes:  # the predicate ignores this side: any categorical s-op will do
            return rasp.indices
        if len(nodes) == 1:
            return self.as_encoding(nodes[0], CAT)
        return self.tuple_of(nodes)

    def _predicate_tree(self, sel: g.Selector, keys: list[g.SOp], queries: list[g.SOp]) -> Any:
        """(key tuple, query tuple) -> the selector's value, M[q][k] = keys[k] op queries[q],
        as a tree of predicates.py nodes (pair by pair, or a whole table at once)."""
        if isinstance(sel, g.Select):
            # the interpreter's own comparison: it raises where the interpreter's select does
            return predicates.Leaf(self._reader(sel.keys, keys), self._reader(sel.queries, queries),
                                   atom_functions.atom_function(sel.op), sel.op)
        if isinstance(sel, g.SelectorNot):
            return predicates.Not(self._predicate_tree(sel.operand, keys, queries))
        assert isinstance(sel, g.SelectorPair)
        return predicates.Junction(self._predicate_tree(sel.left, keys, queries),
                                   self._predicate_tree(sel.right, keys, queries),
                                   runs_right_on=isinstance(sel, g.SelectorAnd))

    def _reader(self, side: g.SOp, found: list[g.SOp]) -> Callable[[tuple], Any]:
        value = self.constant(side)
        if value is not NOT_CONSTANT:
            return lambda t: value
        nodes, fn = self._folded(side)
        slots = [_position(found, n) for n in nodes]
        return lambda t: fn(*[t[i] for i in slots])

    def _folded(self, side: g.SOp) -> tuple[list[g.SOp], Callable[..., Any]]:
        """A select side as the s-ops its predicate reads and the function from their
        values to the side's value. A side computed by maps from ONE s-op (e.g.
        `(o + indices * c + j) if indices < k else -1`) is folded into the predicate, which
        then reads that s-op itself: no MLP, and the head can sit in the first layer.
        A side of several s-ops is folded down its chain of one-input maps to the s-op that
        chain reads, so that selects whose sides are different lookups of one coded s-op
        (an `or` of selects, one per row of a relation) read that one s-op, not a tuple of
        all their lookups (whose value set is the product of theirs)."""
        bases, fn = self._base_function(side)
        if len(bases) == 1:
            return bases, fn
        node: g.SOp = side
        maps: list[Callable[..., Any]] = []  # outermost first
        while isinstance(node, g.Map) and patterns.selector_width_of(node) is None \
                and not self.continuous(node):
            varying, apply = self._operands(node)
            if len(varying) != 1:
                break
            node = varying[0]
            maps.append(apply)

        def chain(value: Any) -> Any:
            for apply in reversed(maps):
                value = apply(value)
            return value
        return [node], chain

    def _base_function(self, node: g.SOp) -> tuple[list[g.SOp], Callable[..., Any]]:
        """`node` as a function of the non-map s-ops below it, through every map."""
        if id(node) in self.base_functions:
            return self.base_functions[id(node)]
        value = self.constant(node)
        if value is not NOT_CONSTANT:
            result: tuple[list[g.SOp], Callable[..., Any]] = ([], lambda: value)
        elif not isinstance(node, g.Map) or patterns.selector_width_of(node) is not None:
            result = ([node], lambda v: v)
        else:
            parts = [self._base_function(x) for x in node.inputs]
            bases: list[g.SOp] = []
            for part_bases, _ in parts:
                bases += [b for b in part_bases if all(b is not c for c in bases)]
            slots = [[_position(bases, b) for b in part_bases] for part_bases, _ in parts]
            fn = atom_function(node)

            def composed(*values: Any) -> Any:
                return fn(*[part(*[values[i] for i in slot])
                            for (_, part), slot in zip(parts, slots)])
            result = (bases, composed)
        self.base_functions[id(node)] = result
        return result

    # -- aggregates
    def _aggregate(self, node: g.Aggregate) -> rasp.SOp:
        select = self.selector(node.selector)
        values = self.sop(node.values)
        numeric = rasp.is_numerical(values) or is_numeric_column(self.value_sets.of(values))
        summed = node.reduction == "sum"
        if summed and not numeric:
            raise Unsupported(describe(node), "sums values that are not numbers", node.span)
        if numeric and (summed or self.continuous(node.values)
                        or not self._selects_one_key(node.selector)):
            if not is_numeric_column([node.default]):
                raise Unsupported(describe(node), f"default {node.default!r} for a mean of "
                                  "numbers: a numerical head can only write a number where "
                                  "nothing is selected", node.span)
            width = self.fixed_sum_width(node) if summed else 1
            if width is None:
                return self._width_times_mean(node, select)
            # tracr's own default must be 0; a nonzero one gets its own head (blocks.py).
            extra = {DEFAULT: node.default} if node.default != 0 else {}
            if summed:  # a mean whose values are scaled by the fixed width (blocks.py)
                extra[SCALE] = width
            return _named(self._mean_head(node, select, extra), node, NUM, **extra)
        # tracr's own default must be None; rasp-sim's is kept in DEFAULT (blocks.py).
        extra = {DEFAULT: node.default}
        folded = self._value_table(node.values)
        if folded is None:
            values = self.as_encoding(node.values, CAT)
        else:
            values, extra[VALUE_MAP] = folded
        return _named(rasp.Aggregate(select, values, default=None), node, CAT, **extra)

    def _selects_one_key(self, sel: g.Selector) -> bool:
        """At most one key per query: provably for every input (`_at_most_one_key`), or,
        for a selector that reads no token and selects somewhere, at every length of the
        domain, as its head attends (`length - indices - 1 == indices` written through a
        map: a reverse)."""
        if _at_most_one_key(sel) or self._equal_to_distinct_keys(sel):
            return True
        if not self.static.is_static(sel):
            return False
        matrices = [m for m in self.static.matrices(sel) if m is not None]
        # one that never selects is its default everywhere: the numerical head (a
        # constant, and a linear term of a sum) costs no MLP
        return (any(bool(m.any()) for m in matrices)
                and all(bool((m.sum(axis=1) <= 1).all()) for m in matrices))

    def _equal_to_distinct_keys(self, sel: g.Selector) -> bool:
        """`select(keys, q, ==)` whose keys differ at every position of every input (or an
        `and` with one): each query equals at most one of them."""
        if isinstance(sel, g.SelectorAnd):
            return (self._equal_to_distinct_keys(sel.left)
                    or self._equal_to_distinct_keys(sel.right))
        return isinstance(sel, g.Select) and sel.op == "==" and self._distinct(sel.keys)

    def _distinct(self, node: g.SOp) -> bool:
        """Whether `node` takes a different value at every position of every input:
        - a node that reads no token, checked at every length of the domain;
        - the rank of such a node among its own values (`selector_width(select(x, x, <))`:
          the sort of tracr's library and rasp-sim's);
        - a map one-to-one on the product of its varying inputs' values, one of which is
          distinct (`tokens + indices / 100`: two positions differ in that input, so in
          the tuple of inputs, so in the value)."""
        if self.static.is_static(node):
            return all(column is None or len(set(column[0].tolist())) == column.shape[1]
                       for column in self.static.columns([node]))
        ranked = patterns.selector_width_of(node)
        if ranked is not None:
            return (isinstance(ranked, g.Select) and ranked.keys is ranked.queries
                    and ranked.op in ("<", "<=", ">", ">=") and self._distinct(ranked.keys))
        if not isinstance(node, g.Map) or self.continuous(node):
            return False
        varying, apply = self._operands(node)
        if not any(self._distinct(v) for v in varying):
            return False
        sets = [self.values_of(v) for v in varying]
        if any(values is None for values in sets) \
                or math.prod(len(values) for values in sets if values is not None) > MAX_TABLE:
            return False
        image = total(apply)
        seen: set = set()
        for combo in itertools.product(*(sorted(v, key=repr) for v in sets if v is not None)):
            value = image(*combo)
            if value is None or value in seen:
                return False
            seen.add(value)
        return True

    def _mean_head(self, node: g.Aggregate, select: rasp.Select,
                   extra: dict[str, Any]) -> rasp.Aggregate:
        """A numerical head averaging the node's values (its value table folded into the
        head where it can be, VALUE_MAP added to `extra`), tracr's default 0."""
        folded = self._value_table(node.values)
        if folded is None:
            values = self.as_encoding(node.values, NUM)
        else:
            self._check_averaged(node.values, self.sop(node.values))
            values, extra[VALUE_MAP] = folded
        return rasp.Aggregate(select, values, default=0)

    def _width_times_mean(self, node: g.Aggregate, select: rasp.Select) -> rasp.SOp:
        """A sum whose width is not one k known at compile time (its selector reads the
        tokens, or selects more keys at some queries or lengths than at others) is
        selector_width(sel) x mean(sel, values), plus the default where nothing is
        selected: tracr's selector width, a mean head, and one gated MLP whose units are
        relu(+-mean) gated by the width's one-hot read out as +-w (ReGLU, continuous.py),
        exact up to the mean's and the product's roundings."""
        width = _named(rasp.SelectorWidth(select), node, CAT, part="width")
        extra: dict[str, Any] = {}
        mean = _named(self._mean_head(node, select, extra), node, NUM, part="mean", **extra)
        widths = list(range(self.value_sets.max_len + 1))
        terms = [((("leaf", "mean"),), {i: float(w) for i, w in enumerate(widths) if w}),
                 ((), {0: float(node.default)})]
        product = PolyMap(width, {"mean": mean}, terms, [typed(w) for w in widths])
        return _named(product, node, NUM, **{SUM: (mean, node.default)})

    def _value_table(self, values: g.SOp) -> tuple[rasp.SOp, Callable[[Any], Any]] | None:
        """Values that are ONE categorical s-op x or computed by maps from it, as (x, the
        function on x's stored values): the head's value table then holds f(x) for each
        value of x, so neither the maps nor a conversion to a number need an MLP before
        it (as `_folded` does for a select's sides). None for other values."""
        if self.continuous(values):
            return None
        bases, fn = self._base_function(values)
        if len(bases) != 1 or not rasp.is_categorical(self.sop(bases[0])):
            return None
        return self.sop(bases[0]), total(fn)


def _asker(predicate: Callable[[Any, Any], bool], inner: Callable[[Any], Any], others: list,
           keys: bool) -> Callable[[Any], tuple | None]:
    """v -> the predicate's answers for the side value inner(v) against each of `others`
    (None where inner is undefined, as the side's own map gives no value there)."""
    def ask(v: Any) -> tuple | None:
        x = inner(v)
        if x is None:
            return None
        return tuple(bool(predicate(x, o) if keys else predicate(o, x)) for o in others)
    return ask


def _slot_key(rows: dict[int, tuple[int, ...]], slot: int) -> Callable[[Any, Any], bool]:
    """The predicate (key index, query index) of the head gathering slot `slot` of each
    query's row (nothing for a query without one)."""
    return lambda key, query: query in rows and rows[query][slot] == key


def _position(nodes: Sequence[g.SOp], node: g.SOp) -> int:
    return next(i for i, n in enumerate(nodes) if n is node)


def _substitute(outer: Callable[..., Any], slot: int, inner: Callable[..., Any],
                outer_args: list[int], inner_args: list[int]) -> Callable[..., Any]:
    """xs -> outer(..., inner(xs[inner_args]) at `slot`, ...) with the other arguments
    xs[outer_args]: an input of `outer` replaced by the function computing it."""
    def composed(*xs: Any) -> Any:
        args = [xs[j] for j in outer_args]
        args.insert(slot, inner(*[xs[j] for j in inner_args]))
        return outer(*args)
    return composed


def _leaves(sel: g.Selector) -> list[g.Select]:
    if isinstance(sel, g.Select):
        return [sel]
    return [leaf for child in sel.children() for leaf in _leaves(cast(g.Selector, child))]


def _at_most_one_key(sel: g.Selector) -> bool:
    """Provably at most one selected key per query: equality with distinct keys (indices)."""
    if isinstance(sel, g.Select):
        return sel.op == "==" and isinstance(sel.keys, g.Indices)
    if isinstance(sel, g.SelectorAnd):
        return _at_most_one_key(sel.left) or _at_most_one_key(sel.right)
    return False
