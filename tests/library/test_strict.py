"""The library's portable path: under --strict (no extensions) it loads
programs/strict/numerics.rasp, uses the full-precision literal for e and count x mean
for sums, parses without any extension syntax, and still matches NumPy."""
from __future__ import annotations

import shutil
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from rasp_sim.core import graph
from rasp_sim.language import library
from rasp_sim.language.interpreter import Interpreter

from lib_refs import assert_close, attention_ref, draw_matrix, layout, run1, softmax_rows

EXTENSION_OPS = {"exp", "log", "sqrt", "abs", "assert"}


def extension_uses(node: graph.Node) -> set[str]:
    used = set()
    for n in graph.ancestors(node):
        if isinstance(n, graph.Map) and n.op in EXTENSION_OPS:
            used.add(n.op)
        if isinstance(n, graph.Aggregate) and n.reduction == "sum":
            used.add("sum")
    return used


U = "attention(tokens_float, 3, 2, 2, 2, 1 / (2 ^ 0.5))"
ENC = 'encoder(tokens_float, 2, 2, 2, 2, 1, 3, 1, "post")'


def test_extended_mode_uses_exp_and_sum():
    assert {"exp", "sum"} <= extension_uses(library.build(U))
    assert "sqrt" in extension_uses(library.build(ENC))


@pytest.mark.parametrize("expr", [U, ENC, "softmax(tokens_float, 2, 2)", "inverse(tokens_float, 3)"])
def test_strict_mode_uses_no_extension(expr):
    assert extension_uses(library.build(expr, strict=True)) == set()


def test_strict_u_matches_numpy():
    x, wq, wk, wv = (draw_matrix("normal", s, i) for i, s in enumerate([(3, 2), (2, 2), (2, 2), (2, 2)]))
    inp = layout(x, wq, wk, wv, length=20)
    out = run1(U, inp, strict=True)
    # pow(e_float, x) differs from exp(x) by at most 5.3e-17|x| + 1 ulp (CONSTRUCTIONS 5.3)
    assert_close(out[:6], attention_ref(x, wq, wk, wv, 1 / np.sqrt(2)).ravel())


def test_strict_softmax_literal_e():
    s = draw_matrix("uniform", (3, 4), 5)
    assert_close(run1("softmax(tokens_float, 3, 4)", layout(s), strict=True), softmax_rows(s).ravel())


def test_library_copied_beside_a_program_runs_strict(tmp_path, monkeypatch):
    # what running under the original RASP needs: the files in the working directory,
    # with the portable numerics in place of the extended one
    source = Path(str(files("rasp_sim.programs")))
    for path in source.glob("*.rasp"):
        shutil.copy(path, tmp_path / path.name)
    shutil.copy(source / "strict" / "numerics.rasp", tmp_path / "numerics.rasp")
    monkeypatch.chdir(tmp_path)
    it = Interpreter(strict=True)
    it.run_source('load "classic";\nload "attention";\ny = matmul(tokens_float, 2, 2, 2);\n')
    from rasp_sim.evaluation.evaluate import evaluate
    assert evaluate([it.lookup("y")], [[1, 2, 3, 4, 5, 6, 7, 8]])[0][0][:4] == [19, 22, 43, 50]


@pytest.mark.parametrize("expr", [U, ENC, "matmul(tokens_float, 3, 2, 4)", "det(tokens_float, 3)"])
def test_strict_mode_costs_the_same(expr):
    # count x mean is one head exactly like the sum extension; pow is a map like exp
    assert library.cost(expr, strict=True) == library.cost(expr)
