"""Program text beyond the parser's limits (rasp_sim.base.source_limits) is refused with a
located resource error after work bounded by the limits, not by the text; the REPL
bounds its lines. The shapes are those of issue 22's probes, which each ran past a minute
before the limits: deep nesting, long unary chains, many lines, one huge expression."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rasp_sim.cli.repl import MAX_LINE_CHARS
from rasp_sim.base.errors import RaspResourceError
from rasp_sim.language.parser import IncrementalCheck, parse
from rasp_sim.base.source_limits import (
    MAX_NESTING_DEPTH, MAX_STATEMENT_TOKENS, MAX_STATEMENTS,
)

HUGE = [
    ("x = " + "(" * 1_000_000 + "1" + ")" * 1_000_000 + ";", "MAX_PROGRAM_TOKENS", (1, 100_003)),
    ("x = " + "-" * 2_000_000 + "1;", "MAX_PROGRAM_TOKENS", (1, 100_003)),
    ("x = 1;\n" * 1_200_000, "MAX_PROGRAM_TOKENS", (25_001, 1)),
    ("x = 1" + " + 1" * 2_000_000 + ";", "MAX_PROGRAM_TOKENS", (1, 200_001)),
]


@pytest.mark.parametrize("text, limit, place", HUGE, ids=["nest", "unary", "lines", "terms"])
def test_huge_programs_are_refused_at_the_token_past_the_limit(text, limit, place):
    with pytest.raises(RaspResourceError) as caught:
        parse(text, "big.rasp")
    assert f"rasp_sim.base.source_limits.{limit}" in caught.value.message
    assert (caught.value.span.line, caught.value.span.column) == place
    assert caught.value.headline().startswith(f"big.rasp:{place[0]}:{place[1]}: resource limit:")


def test_nesting_past_the_limit_is_refused_at_the_first_bracket_too_deep():
    parse("x = " + "(" * MAX_NESTING_DEPTH + "1" + ")" * MAX_NESTING_DEPTH + ";")
    deeper = MAX_NESTING_DEPTH + 1
    with pytest.raises(RaspResourceError) as caught:
        parse("x = " + "[" * deeper + "1" + "]" * deeper + ";")
    assert f"nested more than {MAX_NESTING_DEPTH} deep" in caught.value.message
    assert caught.value.span.column == 4 + deeper


def test_a_statement_past_the_size_limit_is_refused_where_it_passes_it():
    # `x = 1 + 1 ... ;`: tokens x, =, then 1 and `+ 1` pairs
    pairs = MAX_STATEMENT_TOKENS // 2
    with pytest.raises(RaspResourceError) as caught:
        parse("y = 2;\nx = 1" + " + 1" * pairs + ";")
    assert f"more than {MAX_STATEMENT_TOKENS:,} tokens" in caught.value.message
    assert caught.value.span.line == 2
    parse("y = 2;\nx = 1" + " + 1" * (pairs - 2) + ";")  # just under it


def test_statement_count_is_bounded():
    with pytest.raises(RaspResourceError) as caught:
        parse("1;" * (MAX_STATEMENTS + 1))
    assert f"more than {MAX_STATEMENTS:,} statements" in caught.value.message


def test_the_repl_check_stops_at_the_limit_and_lets_parse_report_it():
    check = IncrementalCheck()
    assert check.add_line("x = " + "(" * (MAX_NESTING_DEPTH + 1)) is False  # complete
    with pytest.raises(RaspResourceError):
        parse("x = " + "(" * (MAX_NESTING_DEPTH + 1))


def _repl(stdin, timeout=30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rasp_sim", "repl"], stdin=stdin,
                          capture_output=True, text=True, timeout=timeout)


def test_repl_on_an_endless_line_ends_with_an_error():
    with open("/dev/zero", "rb") as zero:
        done = _repl(zero)
    assert done.returncode == 1
    assert (f"<stdin>:1:{MAX_LINE_CHARS + 1}: resource limit: a line of more than "
            f"{MAX_LINE_CHARS:,} characters") in done.stderr
    assert "Traceback" not in done.stderr


def test_repl_line_at_the_limit_is_read():
    line = "x = 1;" + " " * (MAX_LINE_CHARS - 6) + "\nx;\n"
    done = subprocess.run([sys.executable, "-m", "rasp_sim", "repl"], input=line,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "1" in done.stdout
