"""Own basis inference, replacing tracr's `basis_inference.infer_bases` (docs/compiler.md).

Differences from tracr 1.0.0, each a fix:
- a numerical mean of values V over w selected keys takes the values {sum of a w-multiset
  of V / w}, e.g. {k/w : 0 <= k <= w} for 0/1 values (tracr: {v/w}, so 2/3 is missing and a
  discretising MLP after a mean is built on the wrong grid), and any numbers are allowed
  (tracr: 0/1 only);
- value sets are lazy: computed only where a categorical basis or a discretising MLP needs
  them, never for numerical s-ops that only feed attention values, linear maps or the
  output (tracr enumerates every s-op by Cartesian product and runs out of memory);
- every enumeration is bounded: a product or a set above the limits of checks.py is refused
  with the span of the node before it is built.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import networkx as nx
from tracr.compiler import nodes
from tracr.craft import bases
from tracr.rasp import rasp

from .checks import MAX_TABLE, MAX_VALUE_SET, Unsupported

# Annotations the translator puts on tracr expressions.
SPAN = "rasp_sim_span"        # the Span of the rasp-sim node an expression lowers
DEFAULT = "rasp_sim_default"  # rasp-sim's default of an aggregate, where tracr's differs
SIGNED = "rasp_sim_signed"    # a categorical -> numerical map built by blocks.signed_map_mlp
SCALE = "rasp_sim_scale"      # a sum's fixed selector width k: the head's values times k
VALUE_MAP = "rasp_sim_value_map"  # an aggregate's f: it averages f(x) of its s-op x's values
SIDES = "rasp_sim_sides"      # a select's (keys, queries): what each side reads, for messages
SUM = "rasp_sim_sum"          # a sum lowered as width x mean: (its mean head, its default)
OPERANDS = "rasp_sim_operands"  # every rasp-sim s-op a SequenceMap reads, in order (its
                                # first operand is the tuple of all but the last when there
                                # are more than two), for joint.py's check of where they meet


@dataclass(frozen=True)
class Flag:
    """A bool as a categorical value. In Python True == 1 (and hashes alike), so a value set
    holding both would give them ONE residual direction and the model would print True
    where the program gives 1; Flag(True) equals only Flag(True). Every function the
    translator hands to tracr takes and returns values through `typed`/`plain`."""

    value: bool

    def __repr__(self) -> str:
        return repr(self.value)

    def __float__(self) -> float:
        return float(self.value)


def typed(value: Any) -> Any:
    """A value as it is stored in a categorical value set (bools become Flags)."""
    if isinstance(value, bool):
        return Flag(value)
    if isinstance(value, tuple):
        return tuple(typed(v) for v in value)
    return value


def plain(value: Any) -> Any:
    """The program's value of a stored categorical value (the inverse of `typed`)."""
    if isinstance(value, Flag):
        return value.value
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


def is_numeric_column(values: Iterable[Any]) -> bool:
    """Would a column of these values type-check as int or float (docs/language.md)?"""
    values = [plain(v) for v in values]
    numbers = all(isinstance(v, (int, float)) for v in values)
    return numbers and not all(isinstance(v, bool) for v in values)


def _span(expr: rasp.RASPExpr) -> Any:
    return expr.annotations.get(SPAN) if SPAN in expr.annotations else None


def _name(expr: rasp.RASPExpr) -> str:
    return f"{type(expr).__name__} '{expr.name}'"


class ValueSets:
    """Lazily computed, memoised value sets of tracr s-ops.

    A stored value may stand for several values of the program (`members`): a numerical
    s-op's near-equal numbers (float sums in different orders: 0.2 and
    0.20000000000000004) are one grid point, since no float64 step of a discretising MLP
    can separate them, and what maps and gathers make of such a point stands for what the
    program makes of each of them. The compiled model carries one residual direction for
    all of them, so a block is exact only where it treats all of them alike: a map of one
    s-op must agree on them (within validation's tolerance), a select must select alike
    for every one of them (`check_select`) and a categorical output must be one value
    (`check_output`); anything else is refused here, before a model exists. (A map of
    several s-ops is the exception: see `_images`, and joint.py, which decides it.) A mean
    of one selected bool is that bool, which the model carries as the number it equals:
    it is a member apart."""

    def __init__(self, vocab: Sequence[Any], max_len: int):
        self.vocab = frozenset(typed(v) for v in vocab)
        self.max_len = max_len
        self.memo: dict[str, frozenset] = {}
        # per label: stored value -> the program's values it stands for, where several
        self.aliases: dict[str, dict[Any, frozenset]] = {}
        # per label of a map of several s-ops: one pair of members it maps differently
        self.undecided: dict[str, Undecided] = {}
        self._carriers: dict[str, dict[Any, Any]] = {}  # per label: value -> stored value

    def of(self, expr: rasp.SOp) -> frozenset:
        if expr.label not in self.memo:
            values, aliases = self._compute(expr)
            if rasp.is_numerical(expr):
                values, aliases = _merged(values, aliases)
            if len(values) > MAX_VALUE_SET:
                raise Unsupported(_name(expr), f"takes {len(values)} distinct values, above the "
                                  f"limit {MAX_VALUE_SET} for a categorical basis or a "
                                  "discretising MLP", _span(expr))
            self.memo[expr.label] = frozenset(values)
            self.aliases[expr.label] = aliases
        return self.memo[expr.label]

    def members(self, expr: rasp.SOp, value: Any) -> frozenset:
        """The program's values that the stored `value` of `expr` stands for."""
        self.of(expr)
        return self.aliases[expr.label].get(value, frozenset([value]))

    def stored_of(self, expr: rasp.SOp, value: Any) -> Any:
        """The stored value of `expr` that carries the program's `value` (bases.typed):
        itself, or the stored value of the run it belongs to, else one within validation's
        tolerance (a float sum the enumeration did not meet); `value` where none is."""
        if expr.label not in self._carriers:
            carriers = {v: v for v in self.of(expr)}
            for stored, members in self.aliases[expr.label].items():
                carriers.update(dict.fromkeys(members, stored))
            self._carriers[expr.label] = carriers
        carriers = self._carriers[expr.label]
        if value not in carriers:
            carriers[value] = next((v for v in self.of(expr) if _same_value(
                plain(v), plain(value), exact_type=False)), value)
        return carriers[value]

    def misread(self, expr: rasp.SequenceMap, operands: tuple[Any, Any]
                ) -> tuple[Any, Any] | None:
        """(the program's value, the model's) of the map `expr` where its operands hold the
        program's values `operands`, if they differ beyond validation's tolerance: its
        table gives f of the stored values that carry them. None where it is exact."""
        program = expr.f(*operands)
        model = expr.f(self.stored_of(expr.fst, operands[0]),
                       self.stored_of(expr.snd, operands[1]))
        if program is None or _same_value(plain(program), plain(model), exact_type=False):
            return None  # None: the program fails there (outside its domain)
        return program, model

    def _compute(self, expr: rasp.SOp) -> tuple[set, dict[Any, frozenset]]:
        if isinstance(expr, rasp.TokensType):
            return set(self.vocab), {}
        if isinstance(expr, rasp.IndicesType):
            return set(range(self.max_len)), {}
        if isinstance(expr, rasp.SelectorWidth):
            return set(range(self.max_len + 1)), {}
        if isinstance(expr, rasp.Map):
            return self._images(expr, expr.f, [expr.inner])
        if isinstance(expr, rasp.SequenceMap):
            left, right = self.of(expr.fst), self.of(expr.snd)
            if len(left) * len(right) > MAX_TABLE:
                raise Unsupported(_name(expr), f"needs a table of {len(left)} × {len(right)} "
                                  f"entries, above the limit {MAX_TABLE}", _span(expr))
            return self._images(expr, expr.f, [expr.fst, expr.snd])
        if isinstance(expr, rasp.Aggregate):
            values, aliases = self._averaged(expr)
            default = expr.annotations[DEFAULT] if DEFAULT in expr.annotations else None
            if rasp.is_categorical(expr):
                return values | ({typed(default)} if default is not None else set()), aliases
            if SCALE in expr.annotations:  # a sum of a fixed width k (translate.py): the
                # head writes k x the mean, the sums of k values (not their means)
                return self._means(expr, _with_members(values, aliases),
                                   0 if default is None else default, summed=True,
                                   width=expr.annotations[SCALE]), {}
            return self._means(expr, _with_members(values, aliases),
                               0 if default is None else default), {}
        if SUM in expr.annotations:  # width x mean (translate.py): the sums themselves
            mean, default = expr.annotations[SUM]
            return self._means(expr, _with_members(*self._averaged(mean)), default,
                               summed=True), {}
        raise Unsupported(_name(expr), "has no value-set rule", _span(expr))

    def _images(self, expr: rasp.SOp, f: Callable[..., Any], operands: list[rasp.SOp]
                ) -> tuple[set, dict[Any, frozenset]]:
        """f's values on the operands' stored values, and what each stands for: f of the
        members. f of one operand must agree (within validation's tolerance) on the
        members of a stored value: where it does not, the program's value depends on float
        rounding, and the model would be wrong on some inputs whatever representative it
        kept. Of several operands, a disagreement is not refused here: the product of
        their value sets pairs values that never meet at one position (Dyck's depth, a
        difference of means times indices + 1, is an integer wherever the two meet, but
        -1/12 x 6 rounds either way), so it may be infeasible. It is recorded
        (`undecided`) and joint.py decides it on the values that do meet, or refuses."""
        stored = [self.of(op) for op in operands]
        aliased = [self.aliases[op.label] for op in operands]
        values: set = set()
        aliases: dict[Any, set] = {}
        for combo in itertools.product(*stored):
            y = f(*combo)
            if y is not None:
                values.add(y)
            if not any(v in a for v, a in zip(combo, aliased)):
                continue
            for members in itertools.product(*(a.get(v, (v,)) for v, a in zip(combo, aliased))):
                image = f(*members)
                # a bool and the number it equals (a mean of one bool): one stored value,
                # which the blocks reading it must treat alike (check_select, check_output)
                if not _same_value(plain(image), plain(y), exact_type=False):
                    if len(combo) > 1:
                        self.undecided.setdefault(expr.label, Undecided(
                            expr, tuple(combo), tuple(members), y, image))
                        continue
                    raise Unsupported(_name(expr), _depends(combo[0], members[0],
                                                            f"give {plain(y)!r} and "
                                                            f"{plain(image)!r}"), _span(expr))
                if y is not None and image != y:
                    aliases.setdefault(y, {y}).add(image)
        return values, {y: frozenset(m) for y, m in aliases.items()}

    def check_select(self, select: rasp.Select) -> None:
        """Refuse a select that a stored value cannot decide: one whose members are
        selected differently (`select(m, 0.4, <=)` where m may be 0.4 or
        0.4000000000000001), naming the two values and the select's location. Where
        every member gives the same answer against every value of the other side, the
        select table decided on the stored values is exact."""
        keys, queries = select.keys, select.queries
        key_values, query_values = self.of(keys), self.of(queries)
        key_aliases, query_aliases = self.aliases[keys.label], self.aliases[queries.label]
        pairs = itertools.chain(
            ((k, q) for k in key_aliases for q in query_values),
            ((k, q) for q in query_aliases for k in key_values if k not in key_aliases))
        for k, q in pairs:
            answers = {(t, s): bool(select.predicate(t, s))
                       for t in self.members(keys, k) for s in self.members(queries, q)}
            if len(set(answers.values())) > 1:
                raise Unsupported(_name(select), _split_selection(answers, select),
                                  _span(select))

    def check_output(self, expr: rasp.SOp) -> None:
        """A categorical output must be one value for all the values its stored value
        stands for (a gather of a mean that may be False or 0 gives the model's 0)."""
        if not rasp.is_categorical(expr):
            return  # numbers are compared as numbers (a bool as 0 or 1)
        for value, members in self.aliases[expr.label].items():
            for member in members:
                if not _same_value(plain(member), plain(value)):
                    raise Unsupported(_name(expr), _depends(value, member, "so it outputs "
                                      "one of them for both"), _span(expr))

    def _averaged(self, expr: rasp.Aggregate) -> tuple[set, dict[Any, frozenset]]:
        """The values a head reads at its keys (through its value table, if folded)."""
        if VALUE_MAP in expr.annotations:
            return self._images(expr, expr.annotations[VALUE_MAP], [expr.sop])
        return set(self.of(expr.sop)), dict(self.aliases[expr.sop.label])

    def _means(self, expr: rasp.SOp, values: set, default: Any, summed: bool = False,
               width: int | None = None) -> set:
        """All means (or, `summed`, sums) of n = 1..max_len selected values (n = `width`
        only, if given: a sum of a fixed width), and the empty row's default, as rasp-sim
        computes them: sum(selected) * 1.0 / n (a bool adds as 0 or 1; one selected value
        is itself, a bool kept as a Flag, apart from the 0 or 1 it equals)."""
        values = {plain(v) for v in values}
        out: set = {default}
        sums: set = {0}
        for n in range(1, self.max_len + 1 if width is None else width + 1):
            if len(sums) * len(values) > MAX_TABLE:
                raise Unsupported(_name(expr), "its mean takes too many distinct values "
                                  f"to enumerate (over {MAX_TABLE:,} sums), and a block that "
                                  "reads it needs them all: a map, select or gather of a "
                                  "mean is a table over its values (means, sums, + and - "
                                  "of it, and the output, need none)", _span(expr))
            sums = {s + v for s in sums for v in values}
            if width is not None and n < width:
                continue
            if n == 1:
                out |= {typed(v) for v in values}
            else:
                out |= sums if summed else {s * 1.0 / n for s in sums}
        return out


@dataclass(frozen=True)
class Undecided:
    """A map of several s-ops whose stored operand values `stored` stand for `members`
    (differing from them in the last bits), which it maps to `image` instead of the
    stored values' `value`: the model computes `value` wherever `members` meet."""

    expr: rasp.SOp
    stored: tuple
    members: tuple
    value: Any
    image: Any

    @property
    def name(self) -> str:
        return _name(self.expr)

    @property
    def span(self) -> Any:
        return _span(self.expr)

    def reason(self) -> str:
        """The two operand values that differ in the last bits, and what it makes of
        each, with the other operand's value."""
        at = next(i for i, (a, b) in enumerate(zip(self.stored, self.members)) if a != b)
        others = [plain(v) for i, v in enumerate(self.stored) if i != at]
        return _depends(self.stored[at], self.members[at],
                        f"give {plain(self.value)!r} and {plain(self.image)!r} with "
                        f"{', '.join(map(repr, others))} as its other operand")


def _split_selection(answers: dict[tuple[Any, Any], bool], select: rasp.Select) -> str:
    """Why a select cannot be decided on merged values: two members of one side that one
    value of the other side selects differently."""
    keys, queries = select.annotations[SIDES] if SIDES in select.annotations else ("", "")
    of = {"key": f" of {keys}" if keys else "", "query": f" of {queries}" if queries else ""}
    for (t, s), answer in answers.items():
        for (t2, s2), other in answers.items():
            if other == answer or (s2 != s and t2 != t):
                continue
            side, (a, b), against = ("key", (t, t2), s) if s2 == s else ("query", (s, s2), t)
            other_side = "query" if side == "key" else "key"
            versus = (f" against the {other_side} value {plain(against)!r}{of[other_side]}"
                      if of[other_side] else "")
            return (f"its selection depends on float rounding: the {side} values "
                    f"{plain(a)!r} and {plain(b)!r}{of[side]}, which a compiled model cannot "
                    f"tell apart (they differ in the last bits), are selected differently"
                    f"{versus}")
    raise AssertionError("two answers differ, so two that share a key or a query differ")


def _depends(a: Any, b: Any, outcome: str) -> str:
    """Why a block's value depends on which of two merged values a and b it reads."""
    if isinstance(plain(a), bool) != isinstance(plain(b), bool):
        return (f"its value depends on the type of a mean: {plain(a)!r} and {plain(b)!r} (a "
                "mean of one bool is that bool, of several a number), which a compiled model "
                f"carries as one number, {outcome}")
    return (f"its value depends on float rounding: {plain(a)!r} and {plain(b)!r}, which a "
            f"compiled model cannot tell apart (they differ in the last bits), {outcome}")


def _with_members(values: set, aliases: dict[Any, frozenset]) -> set:
    """Every value that the stored `values` stand for."""
    return set(values).union(*aliases.values())


def _merged(values: set, aliases: dict[Any, frozenset]) -> tuple[set, dict[Any, frozenset]]:
    """A numerical s-op's values as grid points: one stored value (the smallest, a plain
    number) per run of near-equal numbers, standing for every number of the run; a bool
    (a mean of one bool, kept as a Flag) is a member apart from the 0 or 1 it equals."""
    runs = close_runs(_with_members(values, aliases))
    return ({plain(run[0]) for run in runs},
            {plain(run[0]): frozenset(run) for run in runs if len(run) > 1})


# Numbers closer than this (relative) are one grid point: float sums in different orders
# differ in the last bits, and a discretising MLP cannot separate points 1e-16 apart.
MERGE_TOLERANCE = 1e-9
# Above this MLP exactness the step's two ReLUs carry values ~L, whose float64 difference
# loses more than 1e-9: the grid is too fine to discretise exactly.
MAX_EXACTNESS = 1e6


def _same_value(a: Any, b: Any, exact_type: bool = True) -> bool:
    """Equal, or numbers within validation's tolerance (1e-9 relative), tuples element by
    element: what validation accepts as the same output. Without `exact_type` a bool is
    the number it equals (False and 0: the same number in a numerical direction)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same_value(x, y, exact_type) for x, y in zip(a, b))
    numbers = all(isinstance(v, (int, float)) and (not exact_type or not isinstance(v, bool))
                  for v in (a, b))
    if numbers:
        return a == b or abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return a == b and type(a) is type(b)


def close_runs(values: Iterable[Any]) -> list[list[Any]]:
    """The values in sorted runs of numbers each within MERGE_TOLERANCE of the previous."""
    runs: list[list[Any]] = []
    # by value, a number before the bool (Flag) it equals: a run's first is a number
    for v in sorted(values, key=lambda v: (float(v), isinstance(v, Flag))):
        x = float(v)
        if runs and abs(x - float(runs[-1][-1])) <= MERGE_TOLERANCE * max(1.0, abs(x)):
            runs[-1].append(v)
        else:
            runs.append([v])
    return runs


def needs_value_set(graph: nx.DiGraph, node_id: str) -> bool:
    """Categorical s-ops need one (their basis); numerical ones only when a Map reads them
    (a Map of a numerical s-op is a discretising MLP built on the value set)."""
    expr = graph.nodes[node_id][nodes.EXPR]
    return rasp.is_categorical(expr) or any(
        isinstance(graph.nodes[user][nodes.EXPR], rasp.Map) for user in graph.successors(node_id))


def annotate_graph(graph: nx.DiGraph, value_sets: ValueSets) -> float:
    """Set VALUE_SET and OUTPUT_BASIS on every s-op node, check that every select can be
    decided on stored values (ValueSets.check_select); return the MLP exactness L that
    makes every discretising MLP exact on its grid (half the smallest gap >= 2/L)."""
    smallest_gap = math.inf
    for node_id in graph.nodes:
        expr = graph.nodes[node_id][nodes.EXPR]
        # a softmax pick's select is no graph node (continuous.SoftmaxPick.children)
        select = expr if isinstance(expr, rasp.Select) else getattr(expr, "select", None)
        if isinstance(select, rasp.Select):
            value_sets.check_select(select)
        if not isinstance(expr, rasp.SOp):
            continue
        values = value_sets.of(expr) if needs_value_set(graph, node_id) else None
        graph.nodes[node_id][nodes.VALUE_SET] = values
        if rasp.is_categorical(expr):
            space = bases.VectorSpaceWithBasis.from_values(expr.label, values)
        else:
            space = bases.VectorSpaceWithBasis.from_names([expr.label])
            if values is not None:
                gap = _smallest_gap(values)
                if 4.0 / gap > MAX_EXACTNESS:
                    raise Unsupported(_name(expr), f"takes values only {gap:.3g} apart; a "
                                      "discretising MLP after it cannot separate them exactly "
                                      "in float64 (use fewer or coarser values)", _span(expr))
                smallest_gap = min(smallest_gap, gap)
        graph.nodes[node_id][nodes.OUTPUT_BASIS] = space.basis
        if isinstance(expr, rasp.SelectorWidth):  # its MLP discretises 1/(w+1)
            smallest_gap = min(smallest_gap, 1 / (value_sets.max_len * (value_sets.max_len + 1)))
    # tracr's step is exact where |x - threshold| >= 1/L; thresholds sit mid-gap, so
    # L = 4/gap leaves a factor 2 of margin. 100 is tracr's default.
    return max(100.0, 4.0 / smallest_gap) if math.isfinite(smallest_gap) else 100.0


def _smallest_gap(values: Iterable[Any]) -> float:
    ordered = sorted(float(v) for v in values)
    gaps = [b - a for a, b in zip(ordered, ordered[1:]) if b > a]
    return min(gaps) if gaps else math.inf
