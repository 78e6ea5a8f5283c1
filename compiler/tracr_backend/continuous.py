"""Lowering real-valued s-ops: numeric tokens, polynomial maps, sums and softmax.

With `--numeric-tokens` the input is a real number per position, written linearly into one
residual direction, and everything computed from it is "continuous": it has no finite value
set, so it is lowered without lookup tables:
- a Map region over continuous inputs becomes one ReGLU MLP (polynomial.py): the region is
  evaluated symbolically once per value of its categorical inputs (which are folded down
  to the non-map s-ops they are computed from, its "bases"), maps used only inside the
  region are fused into it while the result stays of degree <= 2;
- an aggregate of a continuous value is a numerical head (a mean); a `sum` is a mean whose
  value is scaled by the selector's width where that is one number k known at compile
  time (every query selects nothing or k keys on every input length, static.py checks
  that), else selector width x mean (translate.py);
- `exp(a) / sum(sel, exp(a))` is a softmax: an attention head whose score is a (computed
  by the region of `a`) over the keys `sel` selects, whose values are the keys' positions,
  followed by a ReGLU MLP that picks the weight of the query's own position. It needs every
  query where the value is used to select itself (checked on every length). A shift
  `a = x - top` by a `top` that is the same for all keys a query selects (a mean over
  `select(f, c, op) and E` with E the softmax's selector's classes, as the library's
  max-subtraction builds it) is dropped: softmax does not change under it, and the model's
  own softmax subtracts the maximum anyway.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeGuard, cast

import numpy as np
from tracr.craft import bases as craft_bases
from tracr.rasp import rasp

from rasp_sim.core import graph as g
from rasp_sim.base.errors import RaspError

from .atoms import NOT_CONSTANT, atom_function
from .bases import ValueSets, plain, typed
from .checks import MAX_TABLE, Unsupported, describe
from rasp_sim.core.library_patterns import LayerNormParts, layer_norm_of
from .polynomial import UNDEFINED, Failure, Poly, Undefined, apply_op, leaf_atoms
from .static import StaticValues

# The softmax head's mask: a key outside the selection gets -MASK_MARGIN - 2A below the
# smallest score of a selected key (A bounds |score|), so its weight is e^-1500 = 0 in
# float64; BOS sits halfway and wins only when nothing is selected.
MASK_MARGIN = 1500.0


@dataclass(frozen=True)
class NumericDomain:
    """Inputs of a numeric-token model: lengths min_len..max_len, values in [low, high]."""

    min_len: int
    max_len: int
    low: float
    high: float

    @property
    def bound(self) -> float:
        return max(abs(self.low), abs(self.high))


@dataclass
class Region:
    """A map region evaluated once per assignment of its bases' values."""

    bases: list[g.SOp]
    assignments: list[tuple]           # the bases' (program) values, one tuple each
    values: list[Any]                  # the region's value per assignment (Poly, ...)
    leaves: dict[Any, g.SOp]           # leaf key -> the s-op it stands for
    softmax: dict[Any, tuple[g.Aggregate, g.SOp]]  # softmax leaf key -> (sum, score)
    layer_norm: dict[Any, LayerNormParts] = field(default_factory=dict)  # its leaf key -> parts


class PolyMap(rasp.SOp):
    """A polynomial map region (continuous.py), lowered by blocks.reglu_mlp."""

    def __init__(self, base: rasp.SOp | None, leaves: dict[Any, rasp.SOp],
                 terms: list[tuple[tuple, dict]], base_values: list[Any]):
        super().__init__()
        self.base = base              # one categorical s-op (or a tuple of them) or None
        self.leaves = leaves          # leaf key -> numerical tracr s-op
        self.terms = terms            # (monomial, {base value index: coefficient})
        self.base_values = base_values  # stored (typed) base values, by index

    @property
    def children(self) -> Sequence[rasp.RASPExpr]:
        return ([self.base] if self.base is not None else []) + list(self.leaves.values())

    def __call__(self, xs: Any) -> Any:  # tracr's evaluator is never run on these
        raise NotImplementedError("evaluated by rasp-sim's interpreter, not tracr's")


class SoftmaxPick(rasp.SOp):
    """softmax over the keys `select` selects of `score`, at the query's own position."""

    def __init__(self, score: rasp.SOp, select: rasp.Select, margin: float):
        super().__init__()
        self.score = score
        self.select = select
        self.margin = margin

    @property
    def children(self) -> Sequence[rasp.RASPExpr]:
        return [self.score, self.select.keys, self.select.queries, rasp.indices]

    def __call__(self, xs: Any) -> Any:
        raise NotImplementedError("evaluated by rasp-sim's interpreter, not tracr's")


class LayerNormPick(rasp.SOp):
    """The query's own entry of LayerNorm(its row): the row's values gathered into
    `gathers` (one head each, slot j holding the row's j-th key), normalised by a LayerNorm
    block over those directions, and slot `slots[index]` picked (blocks.layer_norm_pick)."""

    def __init__(self, gathers: list[rasp.SOp], slots: dict[int, int], eps: float):
        super().__init__()
        self.gathers = gathers
        self.slots = slots  # query index -> the query's slot in its row
        self.eps = eps

    @property
    def children(self) -> Sequence[rasp.RASPExpr]:
        return [*self.gathers, rasp.indices]

    def __call__(self, xs: Any) -> Any:
        raise NotImplementedError("evaluated by rasp-sim's interpreter, not tracr's")


class ContinuousLowering:
    """The translator's methods for continuous s-ops (mixed into translate._Translator,
    which provides sop, selector, constant, _base_function, as_encoding, value_sets,
    consumers and tuple_of)."""

    numeric: NumericDomain | None
    static: StaticValues
    value_sets: ValueSets
    read_by_maps_only: set[int]  # ids of the nodes every consumer of which is a Map
    continuity: dict[int, bool]
    bounds: dict[int, float]
    regions: dict[int, Region]

    if TYPE_CHECKING:  # provided by translate._Translator
        def constant(self, node: g.SOp) -> Any: ...
        def as_encoding(self, node: g.SOp, encoding: rasp.Encoding) -> rasp.SOp: ...
        def _base_function(self, node: g.SOp) -> tuple[list[g.SOp], Callable[..., Any]]: ...

    # -- which nodes are continuous
    def continuous(self, node: g.Node) -> bool:
        if self.numeric is None:
            return False
        if id(node) not in self.continuity:
            self.continuity[id(node)] = self._continuous(node)
        return self.continuity[id(node)]

    def _continuous(self, node: g.Node) -> bool:
        if isinstance(node, g.Tokens):
            return True
        if isinstance(node, g.Aggregate):
            return self.continuous(node.values)
        if isinstance(node, g.Map):
            return any(self.continuous(x) for x in node.inputs)
        return False

    def refuse_continuous(self, node: g.SOp, use: str) -> None:
        if self.continuous(node):
            raise Unsupported(describe(node), f"is real-valued (it depends on the numeric "
                              f"tokens) and is used {use}, which needs a finite set of values",
                              node.span)

    # -- map regions
    def region(self, root: g.Map) -> Region:
        """The largest region of single-use continuous maps under `root` that lowers.

        Greedy from the root: each fusable input is tried with all of its own fusable
        inputs first (a quotient may lower only together with the choice of its
        denominator), then alone; it is kept if the region still lowers (or never did)."""
        if id(root) in self.regions:
            return self.regions[id(root)]
        fused: set[int] = set()
        best = self._evaluate(root, fused)
        frontier = [x for x in root.inputs if self._fusable_continuous(x)]
        while frontier:
            child = frontier.pop(0)
            if id(child) in fused:
                continue
            for attempt in (self._subtree(child), [child]):
                trial = self._evaluate(root, fused | {id(n) for n in attempt})
                if self._lowerable(trial) or not self._lowerable(best):
                    fused |= {id(n) for n in attempt}
                    best = trial
                    frontier += [x for n in attempt for x in n.inputs
                                 if self._fusable_continuous(x) and id(x) not in fused]
                    break
        self.regions[id(root)] = best
        return best

    def _subtree(self, node: g.Map) -> list[g.Map]:
        """`node` and every fusable map below it through fusable maps."""
        out: list[g.Map] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if all(current is not n for n in out):
                out.append(current)
                stack += [x for x in current.inputs if self._fusable_continuous(x)]
        return out

    def _fusable_continuous(self, node: g.Node) -> TypeGuard[g.Map]:
        """A continuous map read only by maps may be computed inside each region that
        reads it (a polynomial is cheap to recompute; a layer is not), except exp, which
        only a softmax's quotient lowers."""
        return (isinstance(node, g.Map) and self.continuous(node)
                and id(node) in self.read_by_maps_only and not self._is_exp(node))

    @staticmethod
    def _is_exp(node: g.Node) -> TypeGuard[g.Map]:
        return isinstance(node, g.Map) and node.op == "exp"

    def _evaluate(self, root: g.Map, fused: set[int]) -> Region:
        inside = fused | {id(root)}
        bases: list[g.SOp] = []
        self._collect_bases(root, inside, bases, set())
        tables = [[plain(v) for v in sorted(self.value_sets.of(self.as_encoding(b, CAT)),
                                            key=repr)] for b in bases]
        if math.prod(len(t) for t in tables) > MAX_TABLE:
            raise Unsupported(describe(root), "depends on too many combinations of "
                              f"categorical values ({' x '.join(str(len(t)) for t in tables)})",
                              root.span)
        region = Region(bases, list(itertools.product(*tables)), [], {}, {})
        for assignment in region.assignments:
            env = dict(zip((id(b) for b in bases), assignment))
            region.values.append(self._value(root, inside, env, {}, region))
        self._check_merged(root, inside, region)
        return region

    def _check_merged(self, root: g.Map, inside: set[int], region: Region) -> None:
        """The region is built on the stored values of its categorical inputs; one that
        stands for several near-equal floats (ValueSets.members) must give the same
        polynomial for each of them, or the model is wrong on some inputs."""
        sops = [self.as_encoding(b, CAT) for b in region.bases]
        for assignment, value in zip(region.assignments, region.values):
            choices = [[plain(m) for m in self.value_sets.members(sop, typed(v))]
                       for sop, v in zip(sops, assignment)]
            if all(len(c) == 1 for c in choices):
                continue
            for members in itertools.product(*choices):
                env = dict(zip((id(b) for b in region.bases), members))
                other = self._value(root, inside, env, {}, region)
                if not _same_region_value(value, other):
                    shown = (lambda t: t[0]) if len(members) == 1 else (lambda t: t)
                    raise Unsupported(describe(root), "its value depends on float rounding: "
                                      f"{shown(assignment)!r} and {shown(members)!r}, which a "
                                      "compiled model cannot tell apart (they differ in the "
                                      "last bits), give different results", root.span)

    def _collect_bases(self, node: g.Map, inside: set[int], bases: list[g.SOp],
                       seen: set[int]) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for x in node.inputs:
            if self.continuous(x):
                if id(x) in inside:  # inside: the region's maps
                    self._collect_bases(cast(g.Map, x), inside, bases, seen)
            elif self.constant(x) is NOT_CONSTANT:
                for b in self._base_function(x)[0]:
                    if all(b is not c for c in bases):
                        bases.append(b)

    def _value(self, node: g.SOp, inside: set[int], env: dict, memo: dict,
               region: Region) -> Any:
        if id(node) in memo:
            return memo[id(node)]
        if not self.continuous(node):
            value = self.constant(node)
            if value is NOT_CONSTANT:
                bases, fn = self._base_function(node)
                try:
                    value = fn(*[env[id(b)] for b in bases])
                except RaspError:  # the program fails here: the model is free
                    value = UNDEFINED
        elif id(node) in inside and layer_norm_of(node) is not None:
            key = ("layer_norm", id(node))
            region.layer_norm[key] = cast(LayerNormParts, layer_norm_of(node))
            value = Poly.atom(("leaf", key))
        elif id(node) in inside:
            assert isinstance(node, g.Map)  # a region's inside holds its maps only
            args = [self._value(x, inside, env, memo, region) for x in node.inputs]
            parts = self._softmax_parts(args, region) if node.op == "/" else None
            if parts is not None:
                key = ("softmax", id(parts[0]))
                region.softmax[key] = parts
                value = Poly.atom(("leaf", key))
            else:
                value = apply_op(node, args, lambda values: atom_function(node)(*values))
        else:
            region.leaves[id(node)] = node
            value = Poly.atom(("leaf", id(node)))
        memo[id(node)] = value
        return value

    def _softmax_parts(self, args: list[Any], region: Region
                       ) -> tuple[g.Aggregate, g.SOp] | None:
        """(the sum, the exponent) if the quotient's values are exp(a) / sum(sel, exp(a)),
        both as leaves (the denominator may be chosen by a categorical `where` first)."""
        numerator, denominator = (_single_leaf(a, region) for a in args)
        if numerator is None or denominator is None or not self._is_exp(numerator):
            return None
        if isinstance(denominator, g.Aggregate) and denominator.reduction == "sum" \
                and denominator.values is numerator and denominator.default == 0:
            return denominator, numerator.inputs[0]
        return None

    @staticmethod
    def _lowerable(region: Region) -> bool:
        return terms_of(region) is not None

    # -- bounds (for the softmax mask)
    def bound(self, node: g.SOp) -> float:
        """An upper bound of |value| of a continuous s-op over the domain."""
        if id(node) not in self.bounds:
            self.bounds[id(node)] = self._bound(node)
        return self.bounds[id(node)]

    def _bound(self, node: g.SOp) -> float:
        if isinstance(node, g.Tokens):
            assert self.numeric is not None  # tokens are continuous in numeric mode only
            return self.numeric.bound
        if not self.continuous(node):
            value = self.constant(node)
            if value is not NOT_CONSTANT:
                return abs(float(value)) if isinstance(value, (int, float)) else 0.0
            values = [plain(v) for v in self.value_sets.of(self.as_encoding(node, CAT))]
            numbers = [abs(float(v)) for v in values if isinstance(v, (int, float))]
            return max(numbers, default=0.0)
        if isinstance(node, g.Aggregate):
            scale = 1 if node.reduction == "mean" else \
                self.fixed_sum_width(node) or self.value_sets.max_len
            default = abs(float(node.default)) if isinstance(node.default, (int, float)) else 0.0
            return max(self.bound(node.values) * scale, default)
        assert isinstance(node, g.Map)  # the other continuous s-ops are handled above
        region = self.region(node)
        return max((poly_bound(v, lambda key: self._leaf_bound(region, key))
                    for v in region.values if isinstance(v, Poly)), default=0.0)

    def _leaf_bound(self, region: Region, key: Any) -> float:
        if key in region.layer_norm:  # a normalised row of at most max_len values
            return math.sqrt(self.value_sets.max_len)
        return 1.0 if key in region.softmax else self.bound(region.leaves[key])

    # -- sums
    def fixed_sum_width(self, node: g.Aggregate) -> int | None:
        """The k with which every query selects 0 or k keys on every length, or None where
        the width is not one number known at compile time (the selector reads the tokens,
        or widths differ by query or length): such a sum is width x mean (translate.py)."""
        if self.static is None or not self.static.is_static(node.selector):
            return None
        widths = set()
        for matrix in self.static.matrices(node.selector):
            if matrix is not None:  # None: the program fails at that length (static.py)
                widths |= set(matrix.sum(axis=1).tolist())
        widths.discard(0)
        if len(widths) > 1:
            return None
        return widths.pop() if widths else 1


def _same_region_value(a: Any, b: Any) -> bool:
    """Equal region values: polynomials with the same monomials and coefficients within
    validation's tolerance (1e-9 relative), else equal values."""
    if isinstance(a, Poly) and isinstance(b, Poly):
        return a.terms.keys() == b.terms.keys() and all(
            abs(c - b.terms[m]) <= 1e-9 * max(1.0, abs(c)) for m, c in a.terms.items())
    return a is b or (type(a) is type(b) and a == b)


def _single_leaf(value: Any, region: Region) -> g.Node | None:
    """The node of a value that is exactly one leaf (coefficient 1), else None."""
    if not isinstance(value, Poly) or len(value.terms) != 1:
        return None
    (monomial, coefficient), = value.terms.items()
    if coefficient != 1.0 or len(monomial) != 1 or monomial[0][0] != "leaf":
        return None
    return region.leaves.get(monomial[0][1])


CAT = rasp.Encoding.CATEGORICAL


def poly_bound(poly: Poly, leaf_bound: Callable[[Any], float]) -> float:
    """sum |c| prod bound(atom): a bound of |poly| given bounds of its leaves."""
    def atom_bound(atom: tuple) -> float:
        if atom[0] == "leaf":
            return leaf_bound(atom[1])
        return sum(abs(c) * (atom_bound(a) if a else 1.0) for a, c in atom[1])
    return sum(abs(c) * math.prod(atom_bound(a) for a in m) for m, c in poly.terms.items())


def terms_of(region: Region) -> list[tuple[tuple, dict[int, float]]] | None:
    """The region's monomials with their coefficient per assignment, or None if it cannot
    be one ReGLU MLP: a Failure, degree > 2, relu x relu, or a degree-2 coefficient that
    depends on the categorical bases."""
    table: dict[tuple, dict[int, float]] = {}
    for index, value in enumerate(region.values):
        if isinstance(value, Undefined):
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and math.isfinite(value):
            value = Poly.constant(value)
        if not isinstance(value, Poly):
            return None
        for monomial, c in value.terms.items():
            table.setdefault(monomial, {})[index] = c
    for monomial, coefficients in table.items():
        if len(monomial) > 2:
            return None
        if len(monomial) == 2:
            if all(a[0] == "relu" for a in monomial):
                return None
            defined = [i for i, v in enumerate(region.values) if not isinstance(v, Undefined)]
            if len({coefficients.get(i, 0.0) for i in defined}) > 1:
                return None
    return sorted(table.items(), key=lambda item: repr(item[0]))


def region_failure(region: Region) -> Failure | None:
    """The first Failure among the region's values, if any."""
    return next((v for v in region.values if isinstance(v, Failure)), None)


def used_leaves(terms: list[tuple[tuple, dict]]) -> set:
    return leaf_atoms(Poly({m: 1.0}) for m, _ in terms)


def positions_coefficient(region: Region, terms: list[tuple[tuple, dict]], key: Any,
                          static: StaticValues) -> list[np.ndarray | None] | None:
    """Per length, per position: the coefficient with which the region uses leaf `key`
    (any monomial containing it), or None if the bases are not static; a length's row is
    None where the program fails at that length (static.py)."""
    if not all(static.is_static(b) for b in region.bases):
        return None
    index = {a: i for i, a in enumerate(region.assignments)}
    uses: dict[int, float] = {}
    for monomial, coefficients in terms:
        if any(atom == ("leaf", key) for atom in monomial):
            for i, c in coefficients.items():
                uses[i] = uses.get(i, 0.0) + abs(c)
    out: list[np.ndarray | None] = []
    for columns in static.columns(region.bases):
        if columns is None:
            out.append(None)
            continue
        n = columns.shape[1] if columns.ndim == 2 else 0
        row = np.zeros(n)
        for p in range(n):
            assignment = tuple(columns[:, p].tolist())
            row[p] = uses.get(index.get(assignment, -1), 0.0)
        out.append(row)
    return out


def poly_units(expr: PolyMap, leaf_direction: Callable[[Any], Any],
               base_label: str | None, one: Any, bos: Any) -> list[tuple[dict, dict]]:
    """The ReGLU units (act weights, gate weights) computing `expr`'s polynomial.

    A coefficient c(b) of the categorical base b is the gate sum_v c(v) [b = v] (a readout
    of b's one-hot, 0 at BOS); a constant one is c (one - BOS), so that every unit is 0 at
    the BOS position (the BOS invariant, blocks.py): there each leaf and each one-hot is 0."""
    def gate_of(coefficients: dict[int, float], scale: float = 1.0) -> dict:
        if base_label is None:
            c = scale * next(iter(coefficients.values()), 0.0)
            return {one: c, bos: -c}
        gate: dict = {}
        for i, c in coefficients.items():
            direction = craft_bases.BasisDirection(base_label, expr.base_values[i])
            gate[direction] = gate.get(direction, 0.0) + scale * c
        return gate

    def form(atom: tuple) -> dict:
        """A relu atom's linear form as residual weights (the constant through `one`)."""
        return {(leaf_direction(a[1]) if a else one): c for a, c in atom[1]}

    units: list[tuple[dict, dict]] = []
    for monomial, coefficients in expr.terms:
        if not monomial:
            units.append(({one: 1.0}, gate_of(coefficients)))
        elif len(monomial) == 1 and monomial[0][0] == "relu":
            units.append((form(monomial[0]), gate_of(coefficients)))
        elif len(monomial) == 1:
            x = leaf_direction(monomial[0][1])
            units += [({x: 1.0}, gate_of(coefficients)), ({x: -1.0}, gate_of(coefficients, -1.0))]
        else:  # degree 2, one coefficient for every base value (terms_of checked it)
            c = next(iter(coefficients.values()))
            relus = [a for a in monomial if a[0] == "relu"]
            leaves = [leaf_direction(a[1]) for a in monomial if a[0] == "leaf"]
            if relus:
                units.append((form(relus[0]), {leaves[0]: c}))
            else:
                x, y = leaves
                units += [({x: 1.0}, {y: c}), ({x: -1.0}, {y: -c})]
    return units

