"""Maps of several s-ops on merged values: decided where their operands meet (joint.py).

A mean of `x * 0.1` is 0.28333333333333327 or 0.28333333333333344 by summation order,
one grid point of the compiled model. `m * (indices + 1) == 1.7000000000000006` is one
lookup table over (m, indices) that sends the two to False and True. Before, such a
disagreement of a map of several s-ops was left to validation (the product of value sets
pairs values that never meet, so refusing it would refuse Dyck): on vocab 0..7, max-len 6
(299,592 inputs, sampled validation) the model was written as validated, and
`verify --exhaustive` found it wrong on [6, 7, 1, 1, 1, 1]. Now the compile evaluates
the operands on every input and refuses where a disagreeing pair meets; above
`joint.JOINT_LIMIT` inputs it refuses unless --exhaustive proves the model.
"""
from __future__ import annotations

import re

import pytest

pytest.importorskip("tracr")

from rasp_sim.compiler.tracr_backend import joint, validate  # noqa: E402
from rasp_sim.compiler.tracr_backend.checks import Unsupported  # noqa: E402
from rasp_sim.compiler.weights import load  # noqa: E402
from rasp_sim.evaluation.evaluate import evaluate_batch  # noqa: E402

from cli_helpers import run_cli  # noqa: E402

REPRODUCER = ("m = aggregate(full_s, tokens_int * 0.1);\n"
              "y = m * (indices + 1) == 1.7000000000000006;\n")
NUMBER = r"-?\d+\.\d+(?:e-?\d+)?"
# A smaller one: 0.4000000000000001 x 3 <= 1.2 is False, 0.39999999999999997 x 3 is True
SMALL = ("m = aggregate(full_s, tokens_int * 0.1);\n"
         "y = m * (indices + 1) <= 1.2;\n")


def test_the_issue_reproducer_is_refused_naming_an_input_where_the_pair_meets(driver,
                                                                               program):
    root = program(REPRODUCER, "y")
    with pytest.raises(Unsupported, match="its value depends on float rounding") as error:
        driver.compile_program(root, list(range(8)), 6, tracr_oracle=False)
    refusal = error.value
    assert refusal.span is not None and (refusal.span.line, refusal.span.column) == (2, 5)
    # the program's operand value and the stored one that carries it: near-equal, mapped
    # differently
    program_m, stored_m = map(float, re.findall(NUMBER, refusal.reason)[:2])
    assert program_m != stored_m and abs(program_m - stored_m) <= 1e-9
    assert (program_m * 6 == 1.7000000000000006) != (stored_m * 6 == 1.7000000000000006)
    # the input it names really has that value of m at that position
    found = re.search(r"at position (\d) of the input (\[[\d, ]+\])", refusal.reason)
    assert found, refusal.reason
    position, tokens = int(found.group(1)), eval(found.group(2))
    m = program(REPRODUCER, "m")
    assert float(evaluate_batch([m], [tokens])[m][0][position]) == program_m


# A prefix mean times its width (Dyck's depth is a difference of two): the value sets
# pair m's near-equal floats with positions where they never occur, and the table maps
# them differently there; where they do occur, alike.
PREFIX = ("m = aggregate(select(indices, indices, <=), tokens_int * 0.3);\n"
          "y = m * (indices + 1) == 0.9;\n")


def test_a_pair_that_never_meets_compiles(driver, program):
    result = driver.compile_program(program(PREFIX, "y"), [0, 1, 2], 4, tracr_oracle=False)
    assert result.compiled.translation.value_sets.undecided, "the check had work to do"
    assert result.report.ok and result.report.mode == "exhaustive"
    assert not result.compiled.proof_required


def test_dyck2_is_decided_and_compiles(library):
    # its validation is the compile table's (docs/compiler.md) (a slow test): here only that it is decided
    from rasp_sim.compiler.tracr_backend.pipeline import compile_graph

    compiled = compile_graph(library("dyck.rasp", "dyck2_state"), list("(){}"), 6)
    assert compiled.translation.value_sets.undecided and not compiled.proof_required


def test_the_same_map_where_no_disagreeing_pair_occurs_compiles(driver, program):
    # At max-len 3 the only length with a third position is 3: m x 3 never reaches the
    # pair 1.7 / 1.7000000000000006, which needs six tokens
    result = driver.compile_program(program(REPRODUCER, "y"), list(range(8)), 3,
                                    tracr_oracle=False)
    assert result.report.ok and result.report.mode == "exhaustive"


def test_above_the_limit_it_is_refused_pointing_at_exhaustive(driver, program, monkeypatch):
    monkeypatch.setattr(joint, "JOINT_LIMIT", 100)  # the domain has 258 inputs
    with pytest.raises(Unsupported, match="--exhaustive") as error:
        driver.compile_program(program(SMALL, "y"), list(range(6)), 3, tracr_oracle=False)
    assert "258 inputs, above the 100" in error.value.reason
    assert error.value.span.line == 2


def test_with_a_whole_domain_proof_it_compiles_and_records_what_needs_it(tmp_path, capsys,
                                                                         monkeypatch):
    monkeypatch.setattr(joint, "JOINT_LIMIT", 100)  # the domain has 120 inputs
    source = tmp_path / "p.rasp"
    source.write_text(PREFIX)
    model = tmp_path / "p.npz"
    args = ("compile", str(source), "--name", "y", "--vocab", "0,1,2", "--max-len", "4",
            "-o", str(model))
    code, _, err = run_cli(capsys, *args)
    assert code == 1 and "--exhaustive" in err and not model.exists()
    code, out, err = run_cli(capsys, *args, "--exhaustive", "--workers", "1")
    assert code == 0, err
    assert "proven on all 120 inputs" in out
    record = load(model).metadata["tracr_compile"]
    assert record["proof"]["ok"] and record["validated"]
    assert record["proof_required"] == [f"SequenceMap 'y' at {source}:2:5"]
    # a sampled verify says that the recorded proof, not its sample, shows the model exact
    monkeypatch.setattr(validate, "EXHAUSTIVE_LIMIT", 50)
    code, out, err = run_cli(capsys, "verify", str(model), str(source), "--name", "y")
    assert code == 0, err
    assert "sampled on" in out and "proven on every input: 120 inputs" in out
    assert (f"note: SequenceMap 'y' at {source}:2:5 compiled on the strength of a "
            "whole-domain proof") in out
    assert "the recorded proof above is what shows the model exact" in out


def test_the_python_api_proves_it_too_and_keeps_chunks_only_where_asked(tmp_path,
                                                                         monkeypatch):
    import rasp_sim

    monkeypatch.setattr(joint, "JOINT_LIMIT", 100)  # the domain has 120 inputs
    program = rasp_sim.parse(PREFIX)
    with pytest.raises(rasp_sim.CompileError, match="--exhaustive"):
        rasp_sim.compile(program, "y", vocab=[0, 1, 2], max_len=4)
    folder = tmp_path / "chunks"
    model = rasp_sim.compile(program, "y", vocab=[0, 1, 2], max_len=4, exhaustive=True,
                             workers=1, proof_dir=folder)
    assert model.validated and model.proof is not None
    assert model.proof["ok"] and model.proof["inputs"] == 120
    assert model.info["proof_required"] == ["SequenceMap 'y' at <string>:2:5"]
    assert not folder.exists()  # the records go once the proof is in the model
    assert model.run([[2, 1, 0, 2]]) == program.run([[2, 1, 0, 2]], "y")


@pytest.mark.parametrize("text, vocab, max_len, limit, caught_by", [
    # validation (exhaustive here) already finds the wrong inputs
    pytest.param(SMALL, "0,1,2,3,4,5", 3, 100, "disagrees with the program", id="small"),
    # sampled validation (seed 0) passes this model; only the whole-domain proof, which
    # --exhaustive now requires for it, finds the inputs where it is wrong (299,592
    # inputs compared: about a minute)
    pytest.param(REPRODUCER, "0,1,2,3,4,5,6,7", 6, 100_000, "(exhaustive proof)",
                 id="issue-reproducer", marks=pytest.mark.slow),
])
def test_a_whole_domain_proof_refuses_a_model_the_pair_makes_wrong(
        tmp_path, capsys, monkeypatch, text, vocab, max_len, limit, caught_by):
    monkeypatch.setattr(joint, "JOINT_LIMIT", limit)
    source = tmp_path / "p.rasp"
    source.write_text(text)
    model = tmp_path / "p.npz"
    code, _, err = run_cli(capsys, "compile", str(source), "--name", "y", "--vocab", vocab,
                           "--max-len", str(max_len), "-o", str(model), "--exhaustive",
                           "--workers", "1")
    assert code == 1 and not model.exists()
    assert "disagrees with the program" in err and caught_by in err
