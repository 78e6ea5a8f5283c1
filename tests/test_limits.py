"""Atom-level resource limits: refused before the work starts, with location."""
from __future__ import annotations

from fractions import Fraction

import pytest

from rasp_sim.base.errors import RaspResourceError
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.base.limits import MAX_COLLECTION_LENGTH, MAX_FRACTION_BITS


def run(text: str) -> Interpreter:
    interpreter = Interpreter()
    interpreter.run_source(text, "limits.rasp")
    return interpreter


def test_huge_range_is_refused_with_location():
    with pytest.raises(RaspResourceError) as info:
        run("x = 1;\ny = range(10 ^ 9);\n")
    assert "range would have 1,000,000,000 elements" in info.value.message
    assert (info.value.span.line, info.value.span.column) == (2, 5)


def test_range_at_the_limit_is_allowed():
    # (its 400 MB are above the default memory limit's share: see test_atom_budget.py)
    interpreter = Interpreter(memory_limit=8 * 2**30)
    interpreter.run_source(f"y = range({MAX_COLLECTION_LENGTH});\n", "limits.rasp")
    assert len(interpreter.lookup("y")) == MAX_COLLECTION_LENGTH


@pytest.mark.parametrize("expression, fragment", [
    ('"ab" * (10 ^ 10)', "* on a string or list would have 20,000,000,000 elements"),
    ("[1, 2] + range(10) * 0", None),  # a small list op stays legal
    ("7 ^ (10 ^ 9)", "7 ^ 1000000000 would have more than 1,000,000 bits"),
    ("(2 ^ 900000) * (2 ^ 900000)", "would have more than 1,000,000 bits"),
])
def test_huge_atoms_are_refused_before_they_are_built(expression, fragment):
    text = f"x = {expression};\n"
    if fragment is None:
        run(text)
        return
    with pytest.raises(RaspResourceError) as info:
        run(text)
    assert fragment in info.value.message
    assert info.value.span.line == 1


def test_exact_mode_checks_rational_powers():
    interpreter = Interpreter(exact=True)
    with pytest.raises(RaspResourceError):
        interpreter.run_source("x = (3 / 2) ^ (10 ^ 8);\n", "limits.rasp")
    interpreter.run_source("y = (3 / 2) ^ 3;\n", "limits.rasp")
    assert str(interpreter.lookup("y")) == "27/8"


def test_sequences_in_maps_obey_the_same_limit():
    from rasp_sim.evaluation.evaluate import evaluate

    interpreter = run('s = tokens_int * 3;\nt = (tokens_int + 10) ^ (10 ^ 7);\n')
    assert evaluate([interpreter.lookup("s")], [[1, 2]])[0][0] == [3, 6]
    with pytest.raises(RaspResourceError):
        evaluate([interpreter.lookup("t")], [[1, 2]])


def _chain(first: str, step: str, count: int = 40) -> str:
    return "\n".join([first] + [step] * count) + "\n"


def _first_refused_line(first: Fraction, step, limit: int) -> int:
    """The line of the first step whose operands' sizes add up beyond the limit (the
    bound the check uses for products and sums): an oracle computed with Fractions."""
    x = first
    for line in range(2, 100):
        size = max(x.numerator.bit_length(), x.denominator.bit_length())
        if 2 * size > limit:
            return line
        x = step(x)
    raise AssertionError("never refused")


@pytest.mark.parametrize("step_text, step", [
    ("x = x * x;", lambda x: x * x),
    ("x = x + 1 / x;", lambda x: x + 1 / x),
])
def test_exact_mode_bounds_growing_rationals(step_text, step):
    interpreter = Interpreter(exact=True)
    with pytest.raises(RaspResourceError) as info:
        interpreter.run_source(_chain("x = 1 / 3;", step_text), "chain.rasp")
    assert "would have a numerator or denominator of up to" in info.value.message
    assert f"above the limit of {MAX_FRACTION_BITS:,} (rasp_sim.base.limits.MAX_FRACTION_BITS)" in info.value.message
    line = _first_refused_line(Fraction(1, 3), step, MAX_FRACTION_BITS)
    assert (info.value.span.file, info.value.span.line) == ("chain.rasp", line)


def test_exact_mode_bounds_rationals_in_sops_per_input():
    from rasp_sim.evaluation.evaluate import evaluate

    interpreter = Interpreter(exact=True)
    interpreter.run_source(_chain("y = tokens_int / 3;", "y = y * y;"), "chain.rasp")
    with pytest.raises(RaspResourceError) as info:
        evaluate([interpreter.lookup("y")], [[1], [2, 5]], exact=True)
    message = info.value.message
    assert "(rasp_sim.base.limits.MAX_FRACTION_BITS), on input 0 ([1])" in message
    line = _first_refused_line(Fraction(1, 3), lambda x: x * x, MAX_FRACTION_BITS)
    assert info.value.span.line == line


def test_float_mode_is_untouched_by_the_rational_bound():
    from rasp_sim.evaluation.evaluate import evaluate

    interpreter = Interpreter()
    interpreter.run_source(_chain("y = tokens_int / 3;", "y = y * y;"), "chain.rasp")
    assert evaluate([interpreter.lookup("y")], [[2, 5]])[0][0] == [0.0, float("inf")]
    interpreter.run_source(_chain("x = 1 / 3;", "x = x * x;"), "atoms.rasp")
    assert interpreter.lookup("x") == 0.0


@pytest.mark.parametrize("expression, fragment", [
    ("(1 / 3) ^ 100000", "(1/3) ^ 100000 would have a numerator or denominator of up to 158,496 bits"),
    ("(1 / 3) ^ -100000", "(1/3) ^ -100000 would have a numerator or denominator of up to 158,496 bits"),
    ("3 ^ -(10 ^ 6)", "3 ^ -1000000 would have a numerator or denominator of up to 1,584,962 bits"),
    ("4 ^ ((10 ^ 9 + 1) / 2)", "4 ^ (1000000001/2) would have a numerator or denominator of up to 1,000,000,001 bits"),
])
def test_exact_mode_bounds_rational_powers(expression, fragment):
    interpreter = Interpreter(exact=True)
    with pytest.raises(RaspResourceError) as info:
        interpreter.run_source(f"x = {expression};\n", "powers.rasp")
    assert fragment in info.value.message


def test_exact_mode_small_rational_powers_are_computed():
    interpreter = Interpreter(exact=True)
    interpreter.run_source("a = (4 / 9) ^ (3 / 2);\nb = (2 / 3) ^ -3;\nc = (1 / 3) ^ 1000;\n", "p.rasp")
    assert interpreter.lookup("a") == Fraction(8, 27)
    assert interpreter.lookup("b") == Fraction(27, 8)
    assert interpreter.lookup("c") == Fraction(1, 3**1000)


def test_an_exact_mean_of_rationals_is_bounded_before_adding():
    # Two rationals of 60,000-bit distinct denominators are each within the limit; their
    # sum's denominator can reach 120,000 bits (the product), so the mean is refused at
    # the aggregate before it is computed. Equal denominators keep it well within.
    from rasp_sim.evaluation.evaluate import evaluate

    interpreter = Interpreter(exact=True)
    interpreter.run_source("s = select(indices, indices, <=);\n"
                           "m = aggregate(s, tokens_float);\n", "mean.rasp")
    big = 2**60_000
    distinct = [Fraction(1, big + 1), Fraction(1, big + 3)]
    with pytest.raises(RaspResourceError) as info:
        evaluate([interpreter.lookup("m")], [distinct], exact=True)
    assert info.value.span.line == 2
    assert ("the exact mean of 2 rationals (2 distinct denominators) could have a numerator "
            "or denominator of up to 120,") in info.value.message
    assert f"above the limit of {MAX_FRACTION_BITS:,}" in info.value.message
    shared = [Fraction(1, big + 1), Fraction(3, big + 1)]
    (means,) = evaluate([interpreter.lookup("m")], [shared], exact=True)[0]
    assert list(means) == [shared[0], sum(shared) / 2]  # query 1 averages keys 0 and 1
