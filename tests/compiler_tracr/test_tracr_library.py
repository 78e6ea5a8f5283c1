"""The classic library (programs/classic.rasp, through examples/compile/) compiles and
validates exhaustively: the rows of docs/compiler.md's compile table."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("tracr")

TABLE = Path(__file__).resolve().parents[2] / "examples" / "compile" / "table.tsv"
# (file, name, vocab, max_len): every row of docs/compiler.md's compile table.
CLASSIC = [(f, n, v, int(m)) for f, n, v, m in
           (line.split("\t") for line in TABLE.read_text().splitlines()
            if line and not line.startswith("#"))]


@pytest.mark.slow
@pytest.mark.parametrize("file, name, vocab, max_len", CLASSIC)
def test_classic_program_compiles_and_validates_exhaustively(driver, library, file, name,
                                                             vocab, max_len):
    root = library(file, name)
    result = driver.compile_program(root, driver.parse_vocab(vocab.split(","),
                                                             driver.tokens_kind(root)), max_len)
    assert result.report.mode == "exhaustive"
    assert result.report.ok, result.report.disagreement.describe()
    assert result.report.undefined == 0


def test_table_covers_the_whole_classic_library():
    # Every function of programs/classic.rasp (except the helper balance_state) has a row.
    from rasp_sim.programs import __file__ as programs_init
    source = (Path(programs_init).parent / "classic.rasp").read_text()
    functions = set(re.findall(r"^def (\w+)\(", source, re.M)) - {"balance_state"}
    wrappers = "".join((TABLE.parent / f).read_text() for f in {f for f, *_ in CLASSIC})
    assert functions and functions <= set(re.findall(r"= (\w+)\(", wrappers))


@pytest.mark.slow
@pytest.mark.parametrize("name, vocab, max_len", [("hist2", "abc", 4), ("scaled", "ab", 6)])
def test_test_specific_programs_compile_and_validate(driver, local, name, vocab, max_len):
    result = driver.compile_program(local("selectors.rasp", name), list(vocab), max_len)
    assert result.report.mode == "exhaustive" and result.report.ok


def test_sort_of_integers_compiles(driver, library):
    root = library("sort.rasp", "sorted")
    result = driver.compile_program(root, [0, 1, 2], 3, tracr_oracle=False)
    assert result.report.ok
    from rasp_sim.compiler.tracr_backend import run_weights
    # numerical (mean head): exact up to softmax leakage e^-100 per key
    assert run_weights(result.weights, [[2, 0, 1]])[0] == pytest.approx([0, 1, 2], abs=1e-12)


def test_large_domains_are_sampled(driver, library):
    # 10 tokens, length <= 5: 111,110 inputs > 10^5, so a seeded sample of the given size,
    # plus the structured inputs (test_tracr_validation_coverage.py).
    result = driver.compile_program(library("histogram.rasp", "hist"), list("abcdefghij"), 5,
                                    samples=300, tracr_oracle=False)
    report = result.report
    assert report.ok and report.mode == "sampled" and report.coverage.random == 300
    assert report.compared == 300 + report.coverage.structured + report.coverage.edge_case
    assert result.weights.metadata["tracr_compile"]["validation"]["mode"] == "sampled"


STDLIB_USES = ["hf", "cnt", "ctn", "mx", "avg", "lfl", "sh", "mli", "mfi", "sff", "sni", "srt"]


@pytest.mark.slow
@pytest.mark.parametrize("name", STDLIB_USES)
def test_standard_library_compiles_and_validates(driver, local, name):
    result = driver.compile_program(local("stdlib_uses.rasp", name), [0, 1, 2], 4)
    assert result.report.ok, result.report.disagreement.describe()
