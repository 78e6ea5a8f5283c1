"""A tracr RASP expression as RASP source text (docs/tracr.md).

One walk over tracr's graph, children first. Each tracr s-op becomes one statement named
after its label; each opaque Python function (a Map's, a SequenceMap's, a Select's
predicate) is tabulated over the values that can reach it (`columns.Column`), so the text
is plain RASP that `rasp-sim run` runs and `rasp-sim compile` lowers:

| tracr | RASP |
|---|---|
| tokens, indices, length | `tokens_asis`, `indices`, `length` |
| Full(c), a Map or SequenceMap of constants | the atom c (RASP lifts atoms) |
| Map(f, x) | `{x0: f(x0), ...}[x]` |
| SequenceMap(f, x, y) | `{0: f(x0, y0), 1: f(x0, y1), ...}[code]`, code = `{..}[x] * |Y| + {..}[y]` |
| LinearSequenceMap(x, y, a, b) | `a * x + b * y` over numbers |
| Select(k, q, predicate) | `select(k, q, op)` (selects.py) |
| SelectorAnd/Or/Not | `a and b`, `a or b`, `not a` |
| SelectorWidth(s) | `selector_width(s)` |
| Aggregate(s, x, default) | `aggregate(s, x, default)`; bools averaged as `indicator(x)` |
| ConstantSOp(v) | `[v0, v1, ...][indices]` |

tracr's encodings (numerical, categorical) do not change what `rasp.evaluate` computes,
and rasp-sim's compiler chooses its own, so they are recorded in comments only.
"""
from __future__ import annotations

import itertools
import keyword
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from tracr.rasp import rasp

from .columns import (MAX_COLUMN_VALUES, Column, ConversionError, atom, column, literal,
                      lookup_text, means, sort_key, stand_in)
from ..core.graph import ancestors
from ..base.source_limits import MAX_PROGRAM_TOKENS, MAX_STATEMENT_TOKENS, count_tokens
from .selects import COMPARISONS, Relation, relation, select_text

# Names a program's top level cannot bind (the base environment and the standard
# library, docs/language.md) or that the grammar reserves.
_RESERVED = frozenset({
    "tokens", "tokens_asis", "tokens_str", "tokens_int", "tokens_float", "tokens_bool",
    "indices", "length", "out", "True", "False", "full_s", "selector_width", "has_focus",
    "count", "contains", "max", "min", "average", "load_from_location", "shift",
    "mark_first_instance", "mark_last_instance", "select_from_first", "select_from_last",
    "sort", "select_next_identical", "select", "aggregate", "sum", "exp", "log", "sqrt",
    "abs", "range", "zip", "len", "indicator", "round", "def", "return", "if", "else",
    "for", "in", "load", "and", "or", "not", "draw", "set", "show", "exit", "quit",
    "example", "examples", "selector", "assert", "on", "off", "a",
})


@dataclass(frozen=True)
class Translation:
    text: str  # the RASP program
    names: dict[str, str]  # tracr label -> the name its statement binds
    output: str  # the name of the program's result (the last statement)
    notes: tuple[str, ...]  # what the reader should know (values left out of tables)


@dataclass(frozen=True)
class _Value:
    text: str  # a name, or an atom's literal for a constant
    column: Column
    constant: bool = False
    fill: Any = None  # the atom, for a constant


def translate(sop: rasp.SOp, vocab: Sequence[Any], max_seq_len: int) -> Translation:
    """`sop` as RASP text over tokens in `vocab` and lengths 1..max_seq_len."""
    if not isinstance(sop, rasp.SOp):
        raise ConversionError(f"from_tracr takes a tracr s-op (rasp.SOp), not "
                              f"{type(sop).__name__}")
    writer = _Writer(vocab, max_seq_len)
    value = writer.sop(sop)
    if value.column.objects is not None:
        raise ConversionError(f"{sop.label}: the program's values are tuples "
                              f"({value.column.objects[0]!r}, ...), not atoms")
    if value.constant:  # a program's result must be an s-op: spread the atom over positions
        name = writer.bind(sop, f"{literal(value.fill)} if indices == indices else "
                                f"{literal(value.fill)}", "a constant")
        value = _Value(name, value.column)
    elif value.text in ("tokens_asis", "indices", "length"):  # a base value: bind its label
        value = _Value(writer.bind(sop, value.text, type(sop).__name__), value.column)
    header = [
        "# Converted from a tracr RASP program by rasp-sim (docs/tracr.md): tokens are",
        f"# {_short(sorted(writer.vocab, key=sort_key))}, lengths 1..{max_seq_len}. "
        "Opaque Python functions are tabulated over",
        "# the values that can reach them; tracr's None is held by a stand-in value.",
        "",
    ]
    return Translation("\n".join(header + writer.lines) + "\n", dict(writer.names),
                       value.text, tuple(writer.notes))


def _short(values: list) -> str:
    shown = ", ".join(map(literal, values[:12]))
    return f"[{shown}{', ...' if len(values) > 12 else ''}]"


def _where(f: Callable[..., Any]) -> str:
    """Where a Python function was defined, for messages and comments: '<lambda> at
    tracr/rasp/rasp.py:189', its file relative to the import path that holds it (or the
    current folder), so that the text is the same on every machine."""
    code = getattr(f, "__code__", None)
    if code is None:
        return getattr(f, "__name__", type(f).__name__)
    return f"{code.co_name} at {_shown_path(code.co_filename)}:{code.co_firstlineno}"


def _shown_path(file: str) -> str:
    path = Path(file)
    if not path.is_absolute():
        return file
    roots = [Path(p).resolve() for p in (os.getcwd(), *sys.path) if p]
    relative = [path.relative_to(root) for root in roots if path.is_relative_to(root)]
    return str(min(relative, key=lambda r: len(r.parts))) if relative else path.name


class _Writer:
    def __init__(self, vocab: Sequence[Any], max_seq_len: int):
        if isinstance(max_seq_len, bool) or not isinstance(max_seq_len, int) or max_seq_len < 1:
            raise ConversionError(f"max_seq_len must be a positive int, not {max_seq_len!r}")
        if max_seq_len > MAX_COLUMN_VALUES:  # before `indices` builds a set that large
            raise ConversionError(f"max_seq_len {max_seq_len:,}: indices would take more than "
                                  f"{MAX_COLUMN_VALUES:,} values, too many to tabulate")
        self.vocab = frozenset(atom(v, "tokens", "the vocabulary") for v in vocab)
        if not self.vocab:
            raise ConversionError("the vocabulary is empty")
        self.max_len = max_seq_len
        self.lines: list[str] = []
        self.names: dict[str, str] = {}
        self.taken: set[str] = set(_RESERVED)
        self.notes: list[str] = []
        self.tokens = 0
        self.memo: dict[int, _Value] = {}
        self.selectors: dict[int, str] = {}
        self.relations: dict[int, tuple[Relation, list[str]]] = {}

    # ---------------------------------------------------------------- naming and text
    def bind(self, expr: rasp.RASPExpr, text: str, comment: str) -> str:
        """A statement `name = text;` for `expr`, named after its tracr label."""
        label = expr.label
        name = re.sub(r"\W", "_", label, flags=re.ASCII) or "s"
        if name[0].isdigit():
            name = "s_" + name
        if name in self.taken or keyword.iskeyword(name):
            name += "_"
        base, suffix = name, 1
        while name in self.taken:
            suffix += 1
            name = f"{base}{suffix}"
        self.taken.add(name)
        self.names[label] = name
        self.lines.append(f"# {label}: {comment}")
        self._statement(label, f"{name} = {text};")
        return name

    def _statement(self, label: str, line: str) -> None:
        """Add `line`, refusing here (with the s-op's label) what the parser's size limits
        (rasp_sim.base.source_limits) would refuse later without it."""
        tokens = count_tokens(line)[0]
        self.tokens += tokens
        if tokens > MAX_STATEMENT_TOKENS:
            raise ConversionError(f"{label}: its table needs a statement of {tokens:,} tokens, "
                                  f"more than a RASP statement may hold ({MAX_STATEMENT_TOKENS:,},"
                                  " rasp_sim.base.source_limits.MAX_STATEMENT_TOKENS): the values "
                                  "that can reach it are too many to tabulate")
        if self.tokens > MAX_PROGRAM_TOKENS:
            raise ConversionError(f"{label}: the program's tables pass {MAX_PROGRAM_TOKENS:,} "
                                  "tokens, more than a RASP program may hold "
                                  "(rasp_sim.base.source_limits.MAX_PROGRAM_TOKENS)")
        self.lines.append(line)

    def helper(self, owner: str, part: str, text: str) -> str:
        name, suffix = f"_{owner}_{part}", 1
        while name in self.taken:
            suffix += 1
            name = f"_{owner}_{part}{suffix}"
        self.taken.add(name)
        self._statement(owner, f"{name} = {text};")
        return name

    # ------------------------------------------------------------------------- s-ops
    def sop(self, expr: rasp.SOp) -> _Value:
        # iterative children-first walk: tracr programs can be deep
        order = [e for e in ancestors((expr,), children=_tracr_children)
                 if isinstance(e, rasp.SOp)]
        for node in order:
            if id(node) not in self.memo:
                self.memo[id(node)] = self._convert(node)
        return self.memo[id(expr)]

    def _convert(self, expr: rasp.SOp) -> _Value:
        label = expr.label
        encoding = rasp.get_encoding(expr).value
        if isinstance(expr, rasp.TokensType):
            return _Value("tokens_asis", column("tokens", self.vocab))
        if isinstance(expr, rasp.IndicesType):
            return _Value("indices", column("indices", range(self.max_len)))
        if isinstance(expr, rasp.LengthType):
            return _Value("length", column("length", range(1, self.max_len + 1)))
        if isinstance(expr, rasp.Full):
            if expr.fill is None:
                raise ConversionError(f"{label}: Full(None) has no value at any position")
            fill = atom(expr.fill, label, "Full")
            return _Value(literal(fill), column(label, [fill]), True, fill)
        if isinstance(expr, rasp.ConstantSOp):
            values = [atom(v, label, "ConstantSOp") for v in expr.value]
            table = ", ".join(map(literal, values))
            return _Value(self.bind(expr, f"[{table}][indices]", "ConstantSOp"),
                          column(label, values))
        if isinstance(expr, rasp.LinearSequenceMap) and self._numeric(expr.fst, expr.snd):
            return self._linear(expr, encoding)
        if isinstance(expr, rasp.Map):
            return self._map(expr, [expr.inner], expr.f, encoding)
        if isinstance(expr, rasp.SequenceMap):
            return self._map(expr, [expr.fst, expr.snd], expr.f, encoding)
        if isinstance(expr, rasp.SelectorWidth):
            name = self.bind(expr, f"selector_width({self.selector(expr.selector)})",
                             "SelectorWidth")
            return _Value(name, column(label, range(self.max_len + 1)))
        if isinstance(expr, rasp.Aggregate):
            return self._aggregate(expr, encoding)
        raise ConversionError(f"{label}: rasp-sim does not know the tracr s-op "
                              f"{type(expr).__name__}")

    def _numeric(self, *exprs: rasp.SOp) -> bool:
        return all(self.memo[id(e)].column.is_numeric for e in exprs)

    def _linear(self, expr: rasp.LinearSequenceMap, encoding: str) -> _Value:
        fst, snd = self.memo[id(expr.fst)], self.memo[id(expr.snd)]
        if fst.column.nulls or snd.column.nulls:  # arithmetic on a stand-in is a number,
            # not tracr's None: a table maps it
            return self._map(expr, [expr.fst, expr.snd], expr.f, encoding)
        if fst.constant and snd.constant:
            value = atom(expr.f(fst.fill, snd.fill), expr.label, "LinearSequenceMap")
            return _Value(literal(value), column(expr.label, [value]), True, value)
        out = column(expr.label, {expr.f(x, y) for x in fst.column.real for y in snd.column.real})
        text = _linear_text(expr.fst_fac, fst.text, expr.snd_fac, snd.text)
        return _Value(self.bind(expr, text, f"LinearSequenceMap ({encoding})"), out)

    def _map(self, expr: rasp.SOp, inputs: list[rasp.SOp], f: Callable[..., Any],
             encoding: str) -> _Value:
        """A Map or SequenceMap as a lookup table over the values of its varying inputs
        (a constant input is passed to the function as it is)."""
        label, where = expr.label, _where(f)
        args = [self.memo[id(e)] for e in inputs]
        varying = [a for a in args if not a.constant]
        table: dict[tuple, Any] = {}  # the varying inputs' values -> the value
        null_keys: list[tuple] = []
        failures: list[str] = []
        for combo in itertools.product(*(sorted(a.column.values, key=sort_key)
                                         for a in varying)):
            given = iter(combo)
            call = tuple(a.fill if a.constant else a.column.tracr_value(next(given))
                         for a in args)
            if any(v in a.column.nulls for v, a in zip(combo, varying)):
                null_keys.append(combo)  # tracr gives None without calling f
                continue
            try:
                result = f(*call)
            except Exception as error:  # noqa: BLE001: the user's function may raise anything
                failures.append(f"{_show(call)} ({type(error).__name__}: {error})")
                continue
            if result is None:
                null_keys.append(combo)
            else:
                table[combo] = result
        if failures:  # tracr's evaluate raises where these meet; so does the table
            self.notes.append(f"{label}: its function ({where}) raises on "
                              f"{len(failures)} of its inputs' value combinations, left out "
                              f"of its table (an input that reaches one fails, as in tracr): "
                              f"{failures[0]}")
        table, objects = _as_atoms(table, label, where)
        real = frozenset(table.values())
        nulls = {stand_in(real, all(not isinstance(v, str) for v in real))} if null_keys else set()
        out = column(label, real, nulls, objects)
        table.update((combo, next(iter(nulls))) for combo in null_keys)
        if not varying:
            if not real or objects is not None:
                raise ConversionError(f"{label}: its function ({where}) has no value on the "
                                      f"constants {_show(tuple(a.fill for a in args))}")
            (value,) = real
            return _Value(literal(value), out, True, value)
        comment = f"{type(expr).__name__} ({encoding}), {where}"
        if len(varying) == 1:
            text = lookup_text(varying[0].text, {k[0]: v for k, v in table.items()})
            return _Value(self.bind(expr, text, comment), out)
        codes = [{v: i for i, v in enumerate(sorted(a.column.values, key=sort_key))}
                 for a in varying]
        owner = re.sub(r"\W", "_", label, flags=re.ASCII)
        pair = self.helper(owner, "pair", f"({lookup_text(varying[0].text, codes[0])} * "
                                          f"{len(codes[1])}) + "
                                          f"{lookup_text(varying[1].text, codes[1])}")
        text = lookup_text(pair, {codes[0][k[0]] * len(codes[1]) + codes[1][k[1]]: v
                                  for k, v in table.items()})
        return _Value(self.bind(expr, text, comment), out)

    def _aggregate(self, expr: rasp.Aggregate, encoding: str) -> _Value:
        label = expr.label
        source = self.memo[id(expr.sop)]
        selector = self.selector(expr.selector)
        real = set(source.column.real)
        coded = source.column.objects is not None
        if coded and expr.default is not None:
            raise ConversionError(f"{label}: aggregates tuples with a default, {expr.default!r}")
        # tracr averages 2 or more selected numbers; tuples it cannot average (it raises)
        numeric = source.column.is_numeric and not coded
        if numeric and source.column.real and not self._selects_one(expr.selector):
            real |= means(source.column.real, self.max_len, label)
        values = source.text
        if numeric and any(isinstance(v, bool) for v in source.column.real):
            # tracr averages bools as 0/1; rasp-sim refuses to average bools, so the
            # values are counted: one selected True gives 1 (== True) instead of True
            values = f"indicator({values})" if not source.constant else literal(int(source.fill))
            real = {int(v) if isinstance(v, bool) else v for v in real}
        if expr.default is not None:
            default = atom(expr.default, label, "its default")
            real.add(default)
            out = column(label, real, source.column.nulls)
        else:
            nulls = source.column.nulls
            default = (next(iter(nulls)) if nulls
                       else stand_in(frozenset(real), source.column.is_numeric))
            out = column(label, real, nulls | {default}, source.column.objects)
        if out.real & out.nulls:
            raise ConversionError(f"{label}: its values include {sorted(out.real & out.nulls)}, "
                                  "the stand-in its input uses for tracr's None")
        text = f"aggregate({selector}, {values}, {literal(default)})"
        return _Value(self.bind(expr, text, f"Aggregate ({encoding})"), out)

    def _selects_one(self, expr: rasp.Selector) -> bool:
        """Whether `expr` selects at most one key position per query, so its Aggregates
        never average: a Select whose keys differ at every position and whose predicate
        holds for at most one key value per query, or an `and` with one."""
        if isinstance(expr, rasp.SelectorAnd):
            return self._selects_one(expr.fst) or self._selects_one(expr.snd)
        if not (isinstance(expr, rasp.Select) and self._injective(expr.keys)):
            return False
        keys, queries = self.memo[id(expr.keys)].column, self.memo[id(expr.queries)].column
        table = self._relation(expr)[0]
        return all(sum(table[k, q] for k in keys.values) <= 1 for q in queries.values)

    def _injective(self, expr: rasp.SOp) -> bool:
        """Whether `expr` takes a different value at every position of an input (where
        tracr's value is not None): indices; the rank of an injective s-op among its own
        values (`SelectorWidth(Select(x, x, <))`, tracr's sort); or a map of an injective
        s-op that is one-to-one in it, either for each value of inputs that are the same
        at every position (`length - indices - 1`) or over all its inputs' values
        (`tokens + 0.001 * indices`)."""
        if isinstance(expr, rasp.IndicesType):
            return True
        if isinstance(expr, rasp.SelectorWidth):
            selector = expr.selector
            return (isinstance(selector, rasp.Select) and selector.keys is selector.queries
                    and isinstance(selector.predicate, rasp.Comparison)
                    and selector.predicate.name in ("LT", "LEQ", "GT", "GEQ")
                    and self._injective(selector.keys))
        if not isinstance(expr, (rasp.Map, rasp.SequenceMap)):
            return False
        inputs = [expr.inner] if isinstance(expr, rasp.Map) else [expr.fst, expr.snd]
        if not any(self._injective(e) for e in inputs):
            return False
        columns = [self.memo[id(e)].column for e in inputs]
        uniform = [self._uniform(e) for e in inputs]
        # one-to-one in the varying inputs together, for each value of the uniform ones
        for fixed in itertools.product(*(sorted(c.real, key=sort_key) if u else [None]
                                         for c, u in zip(columns, uniform))):
            seen: set = set()
            for varying in itertools.product(*(sorted(c.real, key=sort_key) if not u
                                               else [None] for c, u in zip(columns, uniform))):
                args = [f if u else v for f, v, u in zip(fixed, varying, uniform)]
                try:
                    result = expr.f(*[c.tracr_value(a) for c, a in zip(columns, args)])
                except Exception:  # noqa: BLE001: that value fails the input in tracr too
                    continue
                if result is None or result in seen:
                    return False
                seen.add(result)
        return True

    def _uniform(self, expr: rasp.SOp) -> bool:
        """Whether `expr` has one value at every position of an input: a constant, length,
        the width of a selector that selects every key, or a map of those."""
        if isinstance(expr, (rasp.Full, rasp.LengthType)):
            return True
        if isinstance(expr, rasp.SelectorWidth):
            selector = expr.selector
            return (isinstance(selector, rasp.Select)
                    and isinstance(selector.predicate, rasp.Comparison)
                    and selector.predicate.name == "TRUE")
        if isinstance(expr, rasp.Map):
            return self._uniform(expr.inner)
        if isinstance(expr, rasp.SequenceMap):
            return self._uniform(expr.fst) and self._uniform(expr.snd)
        return False

    # --------------------------------------------------------------------- selectors
    def selector(self, expr: rasp.Selector) -> str:
        """The name of a statement binding `expr` as a rasp-sim selector."""
        if id(expr) in self.selectors:
            return self.selectors[id(expr)]
        if isinstance(expr, rasp.Select):
            text = self._select(expr)
        elif isinstance(expr, (rasp.SelectorAnd, rasp.SelectorOr)):
            word = "and" if isinstance(expr, rasp.SelectorAnd) else "or"
            text = f"({self.selector(expr.fst)}) {word} ({self.selector(expr.snd)})"
        elif isinstance(expr, rasp.SelectorNot):
            text = f"not ({self.selector(expr.inner)})"
        else:
            raise ConversionError(f"{expr.label}: rasp-sim does not know the tracr selector "
                                  f"{type(expr).__name__}")
        name = self.bind(expr, text, type(expr).__name__)
        self.selectors[id(expr)] = name
        return name

    def _relation(self, expr: rasp.Select) -> tuple[Relation, list[str]]:
        """The select's predicate on every pair of its sides' values, computed once (the
        select's text and its Aggregates' single-key test both read it)."""
        if id(expr) not in self.relations:
            self.relations[id(expr)] = relation(expr.predicate,
                                                self.memo[id(expr.keys)].column,
                                                self.memo[id(expr.queries)].column)
        return self.relations[id(expr)]

    def _select(self, expr: rasp.Select) -> str:
        keys, queries = self.memo[id(expr.keys)], self.memo[id(expr.queries)]
        predicate = expr.predicate
        if isinstance(predicate, rasp.Comparison):
            if predicate.name == "TRUE":
                return "select(1, 1, ==)"
            if predicate.name == "FALSE":
                return "select(1, 0, ==)"
            return f"select({keys.text}, {queries.text}, {COMPARISONS[predicate.name]})"
        table, failures = self._relation(expr)
        if failures:
            self.notes.append(f"{expr.label}: its predicate ({_where(predicate)}) raises on "
                              f"{len(failures)} (key, query) pairs of values, read as not "
                              f"selected (tracr's evaluate raises where they meet): "
                              f"{failures[0]}")
        return select_text(table, keys.column, queries.column, keys.text, queries.text,
                           expr.label)


def _tracr_children(expr: Any) -> Any:
    """A tracr expression's children (a property there), for graph.ancestors, which walks
    any graph children first given this."""
    return expr.children


def _linear_text(a: Any, x: str, b: Any, y: str) -> str:
    """`a * x + b * y` as RASP text. With unit factors it is `x + y`, `x - y` or `y - x`,
    equal in IEEE arithmetic (1 * x is x, x + -1 * y is x - y) and lowered by the compiler
    as one linear map without a table; other factors keep the products."""
    units = {(1, 1): f"{x} + {y}", (1, -1): f"{x} - {y}", (-1, 1): f"{y} - {x}"}
    if type(a) is int and type(b) is int and (a, b) in units:
        return units[a, b]
    return f"({literal(a)} * {x}) + ({literal(b)} * {y})"


def _as_atoms(table: dict[tuple, Any], label: str,
              where: str) -> tuple[dict[tuple, Any], tuple | None]:
    """The table's values as atoms; where some are hashable non-atoms (tuples), all are
    coded as positions in a tuple of the distinct values (returned with the table)."""
    try:
        return {k: atom(v, label, f"its function ({where}) on {_show(k)}")
                for k, v in table.items()}, None
    except ConversionError:
        if not all(isinstance(v, tuple) for v in table.values()):
            raise
    objects = tuple(sorted(set(table.values()), key=repr))
    codes = {v: i for i, v in enumerate(objects)}
    return {k: codes[v] for k, v in table.items()}, objects


def _show(values: tuple) -> str:
    return ", ".join(map(repr, values))
