"""The BOS invariant (blocks.py): no block writes at the BOS position, so the BOS key of
every head matches no predicate. Two kinds of block broke it and gave silent miscompiles
that only some inputs show: maps of a numerical s-op (discretising MLPs) and heads whose
default is carried by the BOS key."""
from __future__ import annotations

import itertools

import pytest

pytest.importorskip("tracr")

from rasp_sim.compiler.tracr_backend.runtime import run_weights  # noqa: E402
from rasp_sim.compiler.tracr_backend.validate import interpret  # noqa: E402

# A mean converted to categorical, then used as a select key: at BOS the discretising MLP
# wrote the one-hot of the grid value nearest 0, so queries with q == 0 matched BOS.
MEAN_AS_KEY = """
x = tokens_int;
m = aggregate(select(indices, indices, <=), x);
q = selector_width(select(x, 9, ==)) - 4;
y = selector_width(select(m, q, ==));
"""


def _agree_on(root, weights, inputs):
    expected = interpret(root, inputs)
    got = run_weights(weights, inputs)
    wrong = [(i, e, g) for i, e, g in zip(inputs, expected, got) if e != g]
    assert not wrong, f"{len(wrong)} inputs disagree, e.g. {wrong[:3]}"


def test_mean_used_as_select_key_compiles_right_above_the_exhaustive_limit(driver, program):
    root = program(MEAN_AS_KEY, "y")
    vocab = list(range(10))
    result = driver.compile_program(root, vocab, 6, tracr_oracle=False)
    assert result.report.mode == "sampled" and result.report.ok  # 1,111,110 inputs
    # The inputs that reach q >= 0 have at least four 9s: every such input of lengths 5
    # and 6 (46 of length 5 were wrong before the fix; [0,9,9,9,9] gave [0,0,0,0,0]).
    inputs = [list(row) for n in (5, 6) for row in itertools.product(vocab, repeat=n)
              if row.count(9) >= 4]
    assert [1, 1, 1, 1, 1] == run_weights(result.weights, [[0, 9, 9, 9, 9]])[0]
    _agree_on(root, result.weights, inputs)


def test_width_of_comparisons_of_a_float_mean(driver, program):
    # The same cause made this lowerable program fail validation.
    root = program("x = tokens_float; m = aggregate(select(indices, indices, <=), x);"
                   "y = selector_width(select(m, m, <));", "y")
    result = driver.compile_program(root, [0.5, 1.0, 2.0], 4, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"


@pytest.mark.parametrize("default", ['"a"', '"c"', "0"])
def test_categorical_default_used_as_select_key(driver, program, default):
    # shift with a filler: at BOS the head wrote the filler's one-hot, so queries equal to
    # the filler matched the BOS key (with 1.5 x coldness) instead of the real keys.
    root = program(f"a = aggregate(select(indices, indices - 1, ==), tokens, {default});"
                   "y = aggregate(select(a, tokens, ==), indices, 0);", "y")
    result = driver.compile_program(root, ["a", "b", "c"], 4, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"


def test_numerical_default_used_as_value_and_query(driver, program):
    # A nonzero numerical default written at BOS would leak into a later mean as a value.
    root = program("x = tokens_int; s = aggregate(select(indices, indices - 1, ==), x, 7);"
                   "t = aggregate(select(indices, indices, <), s, 0);"
                   "y = aggregate(select(s, x, ==), x, 5);", "y")
    result = driver.compile_program(root, [0, 7, 8], 4, tracr_oracle=False)
    assert result.report.ok
    root_t = program("x = tokens_int; s = aggregate(select(indices, indices - 1, ==), x, 7);"
                     "t = aggregate(select(indices, indices, <), s, 0);", "t")
    result_t = driver.compile_program(root_t, [0, 7, 8], 4, tracr_oracle=False)
    assert result_t.report.ok


def test_the_oracle_agrees_on_the_fixed_blocks(driver, program):
    # tracr's own assembler reads the same craft blocks (gate and scrubbing MLP included).
    root = program(MEAN_AS_KEY, "y")
    result = driver.compile_program(root, list(range(4)), 4)
    assert result.report.ok


def test_two_selector_widths_in_one_layer_keep_bos_clean(driver, program):
    # tracr names every selector width's BOS-cleaning unit alike: two in one layer shared
    # it and left -1 at BOS in both outputs, so `select(v1, length, !=)` matched BOS on
    # [0] (width 1 instead of 0). Found by the random-program test.
    root = program("v1 = selector_width(select(indices, indices, ==));"
                   "y = selector_width(select(v1, length, !=));", "y")
    result = driver.compile_program(root, [0, 1], 3)
    assert result.report.ok and result.report.mode == "exhaustive"


@pytest.mark.parametrize("source, name, scrubbed", [
    # a default read by maps only stays at BOS: an MLP carries it to its own BOS output,
    # which the unembedding drops (a shift then a map is one layer, as in tracr)
    ('s = aggregate(select(indices, indices - 1, ==), tokens, "-"); y = s == tokens;', "y",
     False),
    # read by a head (as keys, or through a map as values): scrubbed
    ('s = aggregate(select(indices, indices - 1, ==), tokens, "-");'
     "y = selector_width(select(s, tokens, ==));", "y", True),
    ('s = aggregate(select(indices, indices - 1, ==), tokens, "-"); m = s == "a";'
     "y = aggregate(select(indices, indices, <=), indicator(m), 0);", "y", True),
])
def test_a_default_is_scrubbed_at_bos_only_where_a_head_reads_it(driver, program, source, name,
                                                                 scrubbed):
    root = program(source, name)
    result = driver.compile_program(root, ["a", "b", "-"], 4, tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"
    blocks = result.weights.metadata["tracr_compile"]["blocks"]
    # the scrub is an MLP right after the head, recorded as part of the head's aggregate
    assert any(kind == "mlp" and any(e["op"].startswith("Aggregate 's") for e in ops)
               for kind, ops in zip(_kinds(result.weights), blocks)) == scrubbed


def _kinds(weights) -> list[str]:
    from rasp_sim.compiler.weights import AttentionBlock

    return ["attention" if isinstance(b, AttentionBlock) else "mlp" for b in weights.layers]
