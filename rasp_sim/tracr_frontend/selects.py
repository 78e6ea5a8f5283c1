"""A tracr Select as RASP `select(...)` expressions.

A tracr Select is `M[q][k] = predicate(keys[k], queries[q])` for a Comparison (EQ, LT,
LEQ, GT, GEQ, NEQ, TRUE, FALSE) or any Python function of (key, query). rasp-sim's
`select(keys, queries, op)` has the same orientation (docs/language.md), so a Comparison
is one `select` with the same operator. An arbitrary predicate is a finite relation over
the values the keys and queries can take (their `Column`s), and is written, in this order
of preference:

1. as one comparison, where the relation equals `key op query` on every pair;
2. as `select(keys, g(queries), ==)`, where each query selects at most one key value
   (shifts and "first position" selectors): g names that value, or one no key takes;
3. the same with the roles swapped, where each key is selected by at most one query value;
4. else as the `or` of one `select(a(keys), b(queries), >=)` per distinct row of the
   relation: a is 1 on that row's keys and 0 elsewhere, b is 1 on the queries with that row
   and 2 elsewhere, so `a >= b` holds exactly on the row's (query, key) pairs.

Every choice is checked against the relation pair by pair (`relation` below), so the
selector written is the predicate on every value that can reach it.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from .columns import Column, ConversionError, lookup_text, stand_in

# rasp-sim's select operators, as functions of (key, query): M[q][k] = keys[k] op queries[q]
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}
# tracr's Comparison names -> rasp-sim's select operators
COMPARISONS = {"EQ": "==", "NEQ": "!=", "LT": "<", "LEQ": "<=", "GT": ">", "GEQ": ">="}

Relation = dict[tuple[Any, Any], bool]  # (key, query) -> selected


def relation(predicate: Callable[[Any, Any], Any], keys: Column,
             queries: Column) -> tuple[Relation, list[str]]:
    """The predicate on every (key, query) pair of values, called on what tracr holds
    there (a stand-in as None, a coded value as its object), and the pairs of real values
    where it raises. Where it raises, tracr's evaluate raises on any input that reaches
    the pair, so any value will do there (False)."""
    table: Relation = {}
    failures: list[str] = []
    for key in keys.values:
        for query in queries.values:
            key_value, query_value = keys.tracr_value(key), queries.tracr_value(query)
            try:
                table[key, query] = bool(predicate(key_value, query_value))
            except Exception as error:  # noqa: BLE001: a user's predicate may raise anything
                table[key, query] = False
                if key not in keys.nulls and query not in queries.nulls:
                    failures.append(f"({key_value!r}, {query_value!r}) "
                                    f"({type(error).__name__}: {error})")
    return table, failures


def _matches(table: Relation, test: Callable[[Any, Any], bool]) -> bool:
    try:
        return all(bool(test(k, q)) == selected for (k, q), selected in table.items())
    except TypeError:  # e.g. "<" between a str and an int
        return False


def select_text(table: Relation, keys: Column, queries: Column, key_name: str,
                query_name: str, label: str) -> str:
    """RASP text for the selector `table` over s-ops named key_name and query_name."""
    if all(table.values()):
        return "select(1, 1, ==)"
    if not any(table.values()):
        return "select(1, 0, ==)"
    for op, test in OPERATORS.items():
        if _matches(table, test):
            return f"select({key_name}, {query_name}, {op})"
    rows = {q: frozenset(k for k in keys.values if table[k, q]) for q in queries.values}
    if all(len(row) <= 1 for row in rows.values()):  # each query selects one key value
        none = stand_in(keys.values, keys.is_numeric)  # a value no key takes
        target = {q: next(iter(row)) if row else none for q, row in rows.items()}
        return f"select({key_name}, {lookup_text(query_name, target)}, ==)"
    columns = {k: frozenset(q for q in queries.values if table[k, q]) for k in keys.values}
    if all(len(col) <= 1 for col in columns.values()):  # each key is selected by one query
        none = stand_in(queries.values, queries.is_numeric)  # a value no query takes
        source = {k: next(iter(col)) if col else none for k, col in columns.items()}
        return f"select({lookup_text(key_name, source)}, {query_name}, ==)"
    distinct = sorted({row for row in rows.values() if row}, key=lambda r: sorted(map(repr, r)))
    if len(distinct) > 64:
        raise ConversionError(f"{label}: its predicate has {len(distinct)} distinct rows; "
                              "more than 64 selects would be needed to write it")
    parts = []
    for row in distinct:
        a = {k: int(k in row) for k in keys.values}
        b = {q: 1 if rows[q] == row else 2 for q in queries.values}
        parts.append(f"select({lookup_text(key_name, a)}, {lookup_text(query_name, b)}, >=)")
    return " or ".join(f"({part})" for part in parts)
