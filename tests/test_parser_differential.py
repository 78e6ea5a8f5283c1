"""Opt-in differential check of the grammar against the original RASP's own parser.

Runs only when both are set:
    RASP_ORIGINAL         a checkout of tech-srl/RASP (docs/language.md: commit 61dde62)
    RASP_ORIGINAL_PYTHON  a Python (3.11 or 3.12) with antlr4-python3-runtime 4.9.x
The original's generated ANTLR parser runs in that Python (tests/original_parser_oracle.py);
it is never imported here. Checks, with strict mode (no extensions):
  * every random expression gets the same tree shape from both parsers;
  * random programs, and randomly mutated ones, are accepted by both or rejected by both;
  * a list of edge cases, likewise.
One known divergence is excluded: the original's grammar needs at least one statement,
so it rejects empty text, which its line-by-line reader never parses anyway (3.3).
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from ast_text import unparse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from program_strategy import expressions, mutated_programs, programs

from rasp_sim.base.errors import RaspSyntaxError
from rasp_sim.language.parser import parse, parse_expression

ORIGINAL = os.environ.get("RASP_ORIGINAL")
ORIGINAL_PYTHON = os.environ.get("RASP_ORIGINAL_PYTHON")
pytestmark = pytest.mark.skipif(
    not (ORIGINAL and ORIGINAL_PYTHON),
    reason="set RASP_ORIGINAL and RASP_ORIGINAL_PYTHON to compare with the original parser")

SETTINGS = settings(max_examples=300, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def original():
    process = subprocess.Popen(
        [ORIGINAL_PYTHON, str(Path(__file__).with_name("original_parser_oracle.py")), ORIGINAL],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(mode: str, text: str) -> dict:
        process.stdin.write(json.dumps({"mode": mode, "text": text}) + "\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    yield ask
    process.stdin.close()
    process.wait(timeout=30)


def accepts(text: str) -> bool:
    try:
        parse(text, strict=True)
    except RaspSyntaxError:
        return False
    return True


@SETTINGS
@given(st.data())
def test_expression_shapes_agree(original, data):
    text = data.draw(expressions(max_depth=4))
    theirs = original("assignment", f"x = {text};")
    assert theirs["ok"]
    assert unparse(parse_expression(text, strict=True)) == theirs["shape"]


@SETTINGS
@given(st.data())
def test_acceptance_agrees(original, data):
    text = data.draw(st.one_of(programs(repl_statements=True), mutated_programs()))
    if text.strip():
        assert accepts(text) == original("program", text)["ok"]


EDGE_CASES = [
    "x = 1if c else 2;", "x = c if 1else 2;", "x = s-op;", "x = s - op;",
    "full seq display on # c", "exit()", "exit ()", "quit",
    "def f(a) { # c\n return a; # d\n # e\n}", "def f(a) # c\n{ return a; }",
    "for x in l { # only\n}", "for x in l {}", "x = [1, # c\n2];", "x = 1 # c\n;",
    'def f() { for x in l { set example "a" } return 1; }', 'set example "a" # c',
    "x = round (2.5);", "def f(off) { return 1; }", "def aggregate (a, b) { return a; }",
    "def select(a, b) { return a; }", "x = select (a, b, ==);", "x = a != b;",
    "x = select(a, b, !=);", "x = 1.5.2;", 'x = "a\\";', "x = 'a';", "x = range();",
    "x = [1,2,];", "a, b;", "x = (1, 2);", "return 1;", "load a;", "x = len(a, b);",
    "x = [a for a in l for b in m];", "x = 1.;", "x = .5;", "x = 1e3;", "x = 1.5e3;",
    'x = "a" "b";', "x = a;;", ";", "x = a.b;", "x = aggregate(a, b, c, d);",
    "def f(a,) { return a; }", "for x, in l { y; }", "x = $;", 'x = "abc', "x = 1 ",
    "def f() { return 1; return 2; }", "def f() { x = 1; }", "x = a ** b;", "x += 1;",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_agree(original, text):
    assert text.strip()
    assert accepts(text) == original("program", text)["ok"]
