"""Every program of tracr's own library (tracr.compiler.lib), converted by from_tracr, against
tracr's `rasp.evaluate` on every input of its domain (docs/tracr.md): wherever tracr gives
a value, rasp-sim gives an equal one, and it never fails where tracr does not."""
from __future__ import annotations

import pytest

tracr_rasp = pytest.importorskip("tracr.rasp.rasp")
from tracr.compiler import lib  # noqa: E402

from rasp_sim.tracr_frontend import from_tracr  # noqa: E402
from rasp_sim.compiler.tracr_backend.validate import domain_size  # noqa: E402
from rasp_sim.tracr_frontend.agreement import compare, domain  # noqa: E402

tokens = tracr_rasp.tokens
indices = tracr_rasp.indices


def _library(max_len: int) -> dict:
    """Each lib program with a vocabulary it is written for (name -> (s-op, vocab))."""
    return {
        "length": (lib.make_length(), {"a", "b", "c"}),
        "reverse": (lib.make_reverse(tokens), {"a", "b", "c"}),
        "pair_balance": (lib.make_pair_balance(tokens, "(", ")"), {"(", ")", "x"}),
        "shuffle_dyck": (lib.make_shuffle_dyck(["()", "{}"]), {"(", ")", "{", "}"}),
        "shuffle_dyck2": (lib.make_shuffle_dyck2(), {"(", ")", "{", "}", "x"}),
        "hist": (lib.make_hist(), {"a", "b", "c"}),
        "sort_unique": (lib.make_sort_unique(tokens, tokens), {1, 2, 3, 4}),
        "sort": (lib.make_sort(tokens, tokens, max_seq_len=max_len, min_key=1), {1, 2, 3, 4}),
        "sort_freq": (lib.make_sort_freq(max_len), {"a", "b", "c"}),
        "frac_prevs": (lib.make_frac_prevs(tokens == "a"), {"a", "b"}),
        "shift_by": (lib.shift_by(2, tokens), {"a", "b", "c"}),
        "detect_pattern": (lib.detect_pattern(tokens, "abc"), {"a", "b", "c"}),
        "count_less_freq": (lib.make_count_less_freq(2), {"a", "b", "c"}),
        "count": (lib.make_count(tokens, "a"), {"a", "b", "c"}),
        "nary_sequencemap": (lib.make_nary_sequencemap(lambda x, y, z: x * y - z, tokens,
                                                       indices, tokens), {1, 2, 3}),
    }


NAMES = sorted(_library(5))


def _check(name: str, max_len: int) -> None:
    sop, vocab = _library(max_len)[name]
    program = from_tracr(sop, vocab, max_len)
    inputs, whole = domain(vocab, 1, max_len)
    assert whole and len(inputs) == domain_size(len(vocab), max_len)
    result = compare(lambda x: tracr_rasp.evaluate(sop, x), program, inputs)
    assert result.ok, result.disagreements
    assert result.checked + result.tracr_failed == len(inputs)
    assert result.positions > 0  # something was compared


@pytest.mark.parametrize("name", NAMES)
def test_library_program_agrees_with_rasp_evaluate_on_its_whole_domain(name: str) -> None:
    _check(name, 5)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_library_program_agrees_at_length_8(name: str) -> None:
    """Whole domains up to 4^8 + ... (87,380 inputs) or 5^7 (97,655)."""
    sop, vocab = _library(8)[name]
    _check(name, 8 if len(vocab) <= 4 else 7)


def test_compare_reports_a_program_that_differs() -> None:
    """The check can fail: reverse compared with tracr's identity disagrees, and says where."""
    program = from_tracr(lib.make_reverse(tokens), {"a", "b"}, 3)
    identity = tracr_rasp.Map(lambda x: x, tokens)
    inputs, _ = domain({"a", "b"}, 1, 3)
    result = compare(lambda x: tracr_rasp.evaluate(identity, x), program, inputs)
    assert not result.ok
    palindromes = sum(1 for x in inputs if x == x[::-1])
    assert result.wrong == len(inputs) - palindromes
    tokens_in, theirs, mine = result.disagreements[0]
    assert mine == tokens_in[::-1] and theirs == tokens_in
