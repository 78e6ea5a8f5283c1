"""One budget per program run for atom-level values (issue 34): lists built by many
statements, each within the per-value limits, together draw on one allowance in elements
and bytes tied to --memory-limit, and are refused at the statement that crosses it."""
from __future__ import annotations

import pytest
from cli_helpers import run_cli, write

from rasp_sim.base.errors import RaspResourceError
from rasp_sim.language.interpreter import Interpreter
from rasp_sim.base.limits import ATOM_MEMORY_SHARE, LIST_ELEMENT_BYTES, MAX_PROGRAM_ELEMENTS
from rasp_sim.language.parser import parse
from rasp_sim.language.repl_session import Session

RANGE = 10_000  # elements of each range: 400 KB estimated
# A memory limit whose share holds two such ranges but not three.
TWO_RANGES = int(2.5 * RANGE * LIST_ELEMENT_BYTES) * ATOM_MEMORY_SHARE


def _ranges(count: int, length: int = RANGE) -> str:
    return "".join(f"r{i} = range({length});\n" for i in range(count))


def test_many_ranges_are_refused_at_the_statement_that_crosses_the_budget(capsys, tmp_path):
    # issue 34: 30 statements `r_i = range(10000000);` took 11.8 GB, scaled down
    path = write(tmp_path, _ranges(30) + "y = tokens_int + len(r2);\n")
    code, out, err = run_cli(capsys, "run", path, "--input", "[1, 2]",
                             "--memory-limit", str(TWO_RANGES))
    assert code == 1 and out == ""
    assert f"{path}:3:6: resource limit: this range of {RANGE:,} elements" in err
    assert "their budget (1/16 of the memory limit" in err
    assert "0.8 MiB already built; raise it with --memory-limit" in err
    assert f"{path}:2:6" not in err  # the statements within the budget ran


def test_a_larger_memory_limit_raises_the_budget(capsys, tmp_path):
    path = write(tmp_path, _ranges(3) + "y = tokens_int + len(r2);\n")
    code, out, err = run_cli(capsys, "run", path, "--input", "[1, 2]",
                             "--memory-limit", str(2 * TWO_RANGES))
    assert (code, err) == (0, "")
    assert out == f"y([1, 2]) = [{1 + RANGE}, {2 + RANGE}] (ints)\n"


def test_ten_ranges_below_the_per_value_limit_are_refused_together():
    # issue 34: 10 statements of `range(999999)`, scaled down; the budget holds 6.5
    memory_limit = int(6.5 * 1000 * LIST_ELEMENT_BYTES) * ATOM_MEMORY_SHARE
    with pytest.raises(RaspResourceError) as caught:
        Interpreter(memory_limit=memory_limit).run_source(_ranges(10, 1000), "ten.rasp")
    assert caught.value.span.line == 7
    assert "this range of 1,000 elements" in caught.value.message


def test_the_element_budget_counts_strings_too():
    half = MAX_PROGRAM_ELEMENTS // 2
    text = f's = "a" * {half};\nt = "b" * {half};\nu = "c";\nv = u * 2;'
    with pytest.raises(RaspResourceError) as caught:
        Interpreter().run_source(text, "strings.rasp")
    assert caught.value.span.line == 4
    assert f"past {MAX_PROGRAM_ELEMENTS:,} elements" in caught.value.message


@pytest.mark.parametrize("text", ["x = [1, 2, 3];", "x = {1: 2, 3: 4};",
                                  "x = [i for i in range(3)];", "x = zip(r0, r0);",
                                  "x = r0 + r0;"])
def test_literals_comprehensions_zip_and_concatenation_draw_on_it(text):
    # a budget of exactly two ranges: any further element crosses it
    interpreter = Interpreter(memory_limit=2 * RANGE * LIST_ELEMENT_BYTES * ATOM_MEMORY_SHARE)
    with pytest.raises(RaspResourceError) as caught:
        interpreter.run_source(_ranges(2) + text, "kinds.rasp")
    assert caught.value.span.line == 3


def test_each_statement_at_the_repl_prompt_has_the_whole_budget():
    session = Session(memory_limit=TWO_RANGES, output=lambda line: None)
    # a program of these four statements is refused at the third; the REPL runs each alone
    for statement in parse(_ranges(4), "<repl>").statements:
        session.execute(statement)
    assert len(session.lookup("r3")) == RANGE
