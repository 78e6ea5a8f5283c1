"""Selects whose sides are different lookups of one coded s-op read that s-op once: an `or`
of one select per row of a relation (how rasp-sim writes a tracr Python predicate,
rasp_sim/tracr_frontend/selects.py) compiles to one head over it, not over the tuple of
all the lookups (whose value set is the product of theirs: 2^27 for 27 rows)."""
from __future__ import annotations

import itertools

import pytest

pytest.importorskip("tracr")


def _relation_program(rows: int) -> str:
    """code = token * 3 + index over tokens 0..2 and 3 positions (9 codes); the selector
    is k[0] == q[0] and k[1] <= q[1] on (token, index) pairs, as an `or` of row selects."""
    pairs = list(itertools.product(range(3), range(3)))
    code = "code = (tokens_int * 3) + indices;"
    parts = []
    for q, (qt, qi) in enumerate(pairs[:rows]):
        keys = [int(kt == qt and ki <= qi) for kt, ki in pairs]
        queries = [1 if other == q else 2 for other in range(len(pairs))]
        parts.append(f"select({keys}[code], {queries}[code], >=)")
    return code + "\nsel = " + " or ".join(f"({p})" for p in parts) + ";\n" \
        "w = selector_width(sel);"


def test_an_or_of_row_selects_over_one_coded_sop_is_one_head(driver, program):
    root = program(_relation_program(9), "w")
    result = driver.compile_program(root, [0, 1, 2], 3, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"
    record = result.weights.metadata["tracr_compile"]
    assert record["layers"] <= 2 and record["heads"] == 1


def test_a_static_selector_that_selects_one_key_gives_a_categorical_head(driver, program):
    """`select(length - indices - 1, indices, ==)` reads no token and selects one key per
    query at every length: its aggregate of numbers is categorical (tracr's own reverse),
    so a map of it needs no discretising MLP in between."""
    root = program("opp = length - indices - 1;"
                   "rev = aggregate(select(opp, indices, ==), tokens_int);"
                   "y = rev * 2 + 1;", "y")
    result = driver.compile_program(root, [0, 1, 2, 5], 4, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"
    labels = result.weights.residual_labels
    assert any(label.startswith("rev") and ":" in label for label in labels), labels
    operations = [e["op"] for layer in result.weights.metadata["tracr_compile"]["blocks"]
                  for e in layer]
    assert not any(op.startswith("Map 'rev") for op in operations), operations


@pytest.mark.parametrize("keys, categorical", [
    ("rank", True),  # the rank of distinct keys: a sort's gather selects one key
    ("tokens_int", False),  # repeated tokens: several keys may be equal to a query
    ("tokens_int + indices", False),  # not one-to-one: 1 + 0 == 0 + 1
])
def test_equality_with_distinct_keys_gives_a_categorical_head(driver, program, keys,
                                                              categorical):
    root = program("unique = tokens_int + indices / 10;"
                   "rank = selector_width(select(unique, unique, <));"
                   f"s = aggregate(select({keys}, indices, ==), tokens_int);"
                   "y = s * 2 + 1;", "y")
    result = driver.compile_program(root, [0, 1, 2], 4, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"
    labels = result.weights.residual_labels
    assert any(label.startswith("s_") and ":" in label for label in labels) == categorical
