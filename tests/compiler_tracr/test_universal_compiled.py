"""Compiled RASP programs in a fixed universal transformer (`universal build --like`,
`universal embed/verify MODEL.npz`): attention-only models round-trip exactly on every
input of their domain; models with MLPs are refused naming the block and the operation."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from rasp_sim.cli import main

from .conftest import node_of

pytest.importorskip("tracr")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "universal"

# The programs: one head each, no MLP (a map of the values folds into the head's
# value table; the output head keeps its BOS write, which the decoding drops).
ATTENTION_ONLY = {
    "shift": ('shift_ = aggregate(select(indices, indices - 1, ==), tokens, "-");', "a,b,c"),
    "previous_token": ("prev = aggregate(select(indices, indices - 1, ==), tokens_int, 0);",
                       "0,1,2"),
    "prefix_mean": ("mean = aggregate(select(indices, indices, <=), tokens_int);", "0,1,2"),
    "prefix_mean_of_map": ("mean = aggregate(select(indices, indices, <=), tokens_int * 2 + 1);",
                           "0,1,2"),
}


def compile_to(tmp_path: Path, driver, source: str, vocab: str, max_len: int = 4,
               causal: bool = False) -> str:
    """Compile the last name `source` assigns (written to a .rasp file, so the compile
    record names it) and return the weights' path."""
    program = tmp_path / "program.rasp"
    program.write_text(source + "\n")
    name = re.findall(r"^(\w+) =", source, re.MULTILINE)[-1]
    root = node_of(source, name, str(program))
    values = driver.parse_vocab(vocab.split(","), driver.tokens_kind(root))
    result = driver.compile_program(root, values, max_len, causal=causal, tracr_oracle=False,
                                    program=str(program), name=name)
    path = str(tmp_path / "model.npz")
    driver.write(result, path)
    return path


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("program", sorted(ATTENTION_ONLY))
def test_attention_only_programs_round_trip_on_every_input(tmp_path, capsys, driver, program,
                                                           causal):
    from rasp_sim.compiler.forward import forward
    from rasp_sim.compiler.tracr_backend.validate import domain_size
    from rasp_sim.compiler.universal.compiled import one_hot_inputs
    from rasp_sim.compiler.universal.embed import program as programmed
    from rasp_sim.compiler.weights import AttentionBlock, load

    source, vocab = ATTENTION_ONLY[program]
    model_path = compile_to(tmp_path, driver, source, vocab, causal=causal)
    model = load(model_path)
    assert len(model.layers) == 1 and isinstance(model.layers[0], AttentionBlock)
    ut, embedding = str(tmp_path / "ut.npz"), str(tmp_path / "E.npy")
    assert run_json(capsys, "universal", "build", "--like", model_path, "-o", ut)[0] == 0
    assert run_json(capsys, "universal", "embed", model_path, "--ut", ut, "-o", embedding)[0] == 0
    code, checked = run_json(capsys, "universal", "verify", model_path, "--ut", ut,
                             "--embedding", embedding)
    size = domain_size(3, 4)
    assert code == 0 and checked["passed"]
    assert checked["inputs"] == checked["agree_with_model"] == size
    assert checked["agree_with_program"] + checked["outside_program_domain"] == size
    assert checked["agree_with_program"] > 0
    # The sparse machine repeats the model's float64 operations up to summation order.
    ids = np.array([[0, 1, 2, 0, 1], [4, 2, 2, 1, 0]])
    want = forward(model, ids)
    got = forward(programmed(load(ut), np.load(embedding)), one_hot_inputs(model, ids))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * max(1.0, np.abs(want).max()))


# Several heads or layers (H >= 2 or L >= 2): every intermediate head writes its default at
# BOS, which the compile scrubs with an MLP (the BOS clean-up); the sum is a linear map, an
# MLP of ReLU pairs. fold.py moves both into the blocks that read after them.
SEVERAL = {
    "double_shift": ("""s1 = aggregate(select(indices, indices - 1, ==), tokens, "-");
s2 = aggregate(select(indices, indices - 1, ==), s1, "-");""", "a,b,c", 1, 2),
    "sum_of_two_heads": ("""before = aggregate(select(indices, indices, <), tokens_int, 5);
after = aggregate(select(indices, indices, >), tokens_int, 7);
total = before + after;""", "0,1,2", 2, 1),
    "difference_of_two_heads": ("""before = aggregate(select(indices, indices, <), tokens_int, 5);
after = aggregate(select(indices, indices, >), tokens_int, 7);
total = before - after;""", "0,1,2", 2, 1),
    "layer_of_two_heads": ("""left = aggregate(select(indices, indices - 1, ==), tokens_int, 0);
right = aggregate(select(indices, indices + 1, ==), tokens_int, 0);
matched = aggregate(select(right, left, ==), tokens_int);""", "0,1,2", 2, 2),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("program", sorted(SEVERAL))
def test_several_heads_or_layers_fold_their_mlps_and_verify_on_every_input(
        tmp_path, capsys, driver, program, causal):
    from rasp_sim.compiler.forward import forward
    from rasp_sim.compiler.tracr_backend.validate import domain_size
    from rasp_sim.compiler.universal.compiled import as_target, one_hot_inputs
    from rasp_sim.compiler.weights import MLPBlock, load

    source, vocab, heads, layers = SEVERAL[program]
    model_path = compile_to(tmp_path, driver, source, vocab, causal=causal)
    model = load(model_path)
    assert any(isinstance(block, MLPBlock) for block in model.layers)  # refused before
    ut = str(tmp_path / "ut.npz")
    code, built = run_json(capsys, "universal", "build", "--like", model_path, "-o", ut)
    assert code == 0 and (built["heads"], built["layers"]) == (heads, layers)
    code, checked = run_json(capsys, "universal", "verify", model_path, "--ut", ut)
    size = domain_size(3, 4)
    assert code == 0 and checked["passed"]
    assert checked["inputs"] == checked["agree_with_model"] == checked["agree_with_program"] == size
    # The folded target is the model at every position, BOS included.
    assert model.input_encoder is not None
    bos = model.input_encoder.tokens.index(model.input_encoder.bos)
    ids = np.array([[bos, 0, 1, 2, 0], [bos, 2, 2, 1, 1]])
    want = forward(model, ids)
    np.testing.assert_allclose(forward(as_target(model), one_hot_inputs(model, ids)), want,
                               rtol=0, atol=1e-12 * max(1.0, np.abs(want).max()))


def test_a_bos_cleanup_that_cannot_fold_is_named_as_one(tmp_path, capsys, driver):
    from rasp_sim.compiler.weights import load, save

    path = compile_to(tmp_path, driver, SEVERAL["double_shift"][0], "a,b,c")
    model = load(path)
    assert model.input_encoder is not None and model.token_embed is not None
    bos = model.input_encoder.tokens.index(model.input_encoder.bos)
    edited = model.token_embed.copy()
    edited[bos - 1] = edited[bos]  # another token now sets BOS's direction too
    save(model.replace(token_embed=edited), path)
    assert main(["universal", "build", "--like", path, "-o", str(tmp_path / "ut.npz")]) == 1
    assert re.search(
        r"universal error: layers\.1: an MLP block is outside the target class \(attention-only "
        r"transformers\); it is the BOS clean-up of Aggregate 's1\w*' at "
        + re.escape(f"{tmp_path / 'program.rasp'}:1:6") + r" \(it subtracts what that head "
        r"writes at the BOS position\), which folds into the heads only when the BOS token has "
        r"a direction of its own: no residual direction is set by the BOS token alone",
        capsys.readouterr().err)


# Two layers of means: numerical outputs, which must agree to 1e-9 (the case).
MEAN_OF_MEANS = """prefix = aggregate(select(indices, indices, <=), tokens_int);
smoothed = aggregate(select(indices, indices, <=), prefix);"""


def test_random_machine_of_a_two_layer_program_passes_verify(tmp_path, capsys, driver):
    """The compiled queries carry the logit scale 1,500 and the keys are one-hot; balanced
    (embed.balanced), the solve's residual is no longer amplified by 1,500^2."""
    from rasp_sim.compiler.tracr_backend.validate import domain_size

    model = compile_to(tmp_path, driver, MEAN_OF_MEANS, "0,1,2", max_len=6)
    ut = str(tmp_path / "ut.npz")
    assert main(["universal", "build", "--like", model, "--random", "3", "-o", ut]) == 0
    capsys.readouterr()
    code, checked = run_json(capsys, "universal", "verify", model, "--ut", ut)
    assert code == 0 and checked["passed"] and checked["kind"] == "random"
    assert checked["agree_with_model"] == checked["agree_with_program"] == domain_size(3, 6)
    assert checked["max_numeric_error"] <= checked["expected_error"] * 10 <= 1e-8


def test_random_machine_expected_to_miss_the_tolerance_is_refused_up_front(tmp_path, capsys,
                                                                           driver):
    """Seed 53 draws an M with cond(M) ~ 3e4: the expected error is above 1e-9, so embed and
    verify refuse before any input runs, and the suggested width passes."""
    model = compile_to(tmp_path, driver, SEVERAL["sum_of_two_heads"][0], "0,1,2")
    ut = str(tmp_path / "ut.npz")
    assert main(["universal", "build", "--like", model, "--random", "53", "-o", ut]) == 0
    capsys.readouterr()
    for argv in (["verify", model, "--ut", ut], ["embed", model, "--ut", ut, "-o",
                                                  str(tmp_path / "E.npy")]):
        assert main(["universal", *argv]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        found = re.search(r"universal error: accuracy: the random machine's E solves E M = T "
                          r"only to a residual of (\S+) of T's largest entry \(cond\(M\) = "
                          r"(\S+)\), and the compiled heads' scores, up to T_max\^2 = (\S+) "
                          r"\(their logit scale\), turn it into an expected output error of "
                          r"(\S+), above the 1e-09 its numbers must agree to; use the sparse "
                          r"machine \(build without --random\) or a wider random one \(--m "
                          r"(\d+), twice C", captured.err)
        assert found, captured.err
        residual, condition, square, expected = map(float, found.groups()[:4])
        assert expected == pytest.approx(residual * square, rel=0.1) and expected > 1e-9
        assert condition > 1e3
    wider = found.group(5)
    assert main(["universal", "build", "--like", model, "--random", "53", "--m", wider,
                 "-o", ut]) == 0
    capsys.readouterr()
    code, checked = run_json(capsys, "universal", "verify", model, "--ut", ut)
    assert code == 0 and checked["passed"] and checked["condition"] < 100


def test_example_script_runs_its_three_commands(tmp_path, capsys, monkeypatch):
    """examples/universal/run.sh, each `rasp-sim` line run in-process, in order."""
    from rasp_sim.compiler.tracr_backend.validate import domain_size

    script = (EXAMPLE / "run.sh").read_text()
    lines = [line for line in script.splitlines() if line.startswith("rasp-sim ")]
    assert [shlex.split(line)[1] for line in lines] == ["compile", "universal", "universal"]
    outputs = []
    for line in lines:
        line = line.replace('$(dirname "$0")', str(EXAMPLE)).replace("$out", str(tmp_path))
        assert main(shlex.split(line)[1:]) == 0
        outputs.append(capsys.readouterr().out)
    report = dict(line.split(": ", 1) for line in outputs[-1].splitlines())
    size = domain_size(3, 5)  # --vocab a,b,c --max-len 5
    assert report["inputs"] == report["agree_with_model"] == report["agree_with_program"] == str(size)
    assert report["passed"] == "True"
    assert "dim: 11" in outputs[1]  # 3 tokens + BOS + pad, positions 0..5


MLP_PROGRAM = """x = aggregate(select(indices, indices - 1, ==), tokens_int, 0);
y = x + 1;"""
# A map of two s-ops keeps its own MLP (layer 0), before the head that reads it.
MAP_FIRST = """y = tokens_int + indices;
x = aggregate(select(indices, indices - 1, ==), y, 0);"""


def test_model_with_an_mlp_is_refused_naming_block_and_operation(tmp_path, capsys, driver):
    model = compile_to(tmp_path, driver, MAP_FIRST, "0,1,2")
    ut = str(tmp_path / "ut.npz")
    where = f"{tmp_path / 'program.rasp'}:1:5"  # y's `tokens_int + indices`
    for argv in (["universal", "build", "--like", model, "-o", ut],
                 ["universal", "embed", model, "--ut", ut, "-o", str(tmp_path / "E.npy")]):
        if argv[1] == "embed":
            assert main(["universal", "build", "--heads", "1", "--layers", "2", "--dim", "11",
                         "--residual", "-o", ut]) == 0
            capsys.readouterr()
        assert main(argv) == 1
        error = capsys.readouterr().err
        assert re.search(r"universal error: layers\.0: an MLP block is outside the target "
                         r"class \(attention-only transformers\); it computes SequenceMap "
                         r"'y\w*' at "
                         + re.escape(where), error), error


@pytest.mark.parametrize("map_of_one", ["2 * a", "a + 1"])
def test_a_map_of_one_number_is_an_mlp_that_does_not_fold(tmp_path, capsys, driver,
                                                          map_of_one):
    """docs/universal.md: only the linear maps of two s-ops (above) fold; a map of one
    number is lowered through a discretising MLP, refused as such."""
    source = f"a = aggregate(select(indices, indices, <=), tokens_int);\ny = {map_of_one};"
    model = compile_to(tmp_path, driver, source, "0,1,2")
    assert main(["universal", "build", "--like", model, "-o", str(tmp_path / "ut.npz")]) == 1
    error = capsys.readouterr().err
    assert re.search(r"an MLP block is outside the target class \(attention-only "
                     r"transformers\); it computes Map 'y\w*' at ", error), error


def test_model_without_the_block_record_is_refused_with_the_index(tmp_path, capsys, driver):
    from rasp_sim.compiler.weights import load, save

    path = compile_to(tmp_path, driver, MLP_PROGRAM, "0,1,2")  # layers: head, map
    model = load(path)
    record = {k: v for k, v in model.metadata["tracr_compile"].items() if k != "blocks"}
    save(model.replace(metadata={**model.metadata, "tracr_compile": record}), path)
    assert main(["universal", "build", "--like", path, "-o", str(tmp_path / "ut.npz")]) == 1
    # only a map reads the head, so its default stays at BOS unscrubbed; the map is refused
    assert ("layers.1: an MLP block is outside the target class (attention-only "
            "transformers); the compile record does not say which RASP operation"
            in capsys.readouterr().err)


def test_compile_record_lists_each_layers_operations(tmp_path, driver):
    from rasp_sim.compiler.weights import load

    record = load(compile_to(tmp_path, driver, MLP_PROGRAM, "0,1,2")).metadata["tracr_compile"]
    x, y = (f"{tmp_path / 'program.rasp'}:{line}:5" for line in (1, 2))
    # x's head writes its default at BOS, but only a map reads x: no scrub (pipeline.py)
    assert [[(re.sub(r"_\d+'$", "'", e["op"]), e["at"]) for e in layer]
            for layer in record["blocks"]] == [[("Aggregate 'x'", x)], [("Map 'y'", y)]]


def test_domain_above_the_limit_is_refused_with_its_size(tmp_path, capsys, driver):
    from rasp_sim.compiler.tracr_backend.validate import domain_size

    model = compile_to(tmp_path, driver, ATTENTION_ONLY["shift"][0], "a,b,c")
    ut = str(tmp_path / "ut.npz")
    assert main(["universal", "build", "--like", model, "-o", ut]) == 0
    capsys.readouterr()
    size = domain_size(3, 4)
    assert main(["universal", "verify", model, "--ut", ut, "--max-inputs", str(size - 1)]) == 1
    assert (f"resource limit: the model's domain has {size} inputs (3 tokens, lengths 1..4), "
            f"above the limit of {size - 1} inputs checked one by one; raise it with "
            "--max-inputs N") in capsys.readouterr().err
    assert main(["universal", "verify", model, "--ut", ut, "--max-inputs", str(size)]) == 0


def test_wrong_embedding_reports_the_first_disagreeing_input(tmp_path, capsys, driver):
    from rasp_sim.compiler.tracr_backend.runtime import run_weights

    model = compile_to(tmp_path, driver, ATTENTION_ONLY["shift"][0], "a,b,c")
    ut, embedding = str(tmp_path / "ut.npz"), str(tmp_path / "E.npy")
    main(["universal", "build", "--like", model, "-o", ut])
    main(["universal", "embed", model, "--ut", ut, "-o", embedding])
    np.save(embedding, np.zeros_like(np.load(embedding)))  # every output decodes alike
    capsys.readouterr()
    code, checked = run_json(capsys, "universal", "verify", model, "--ut", ut, "--embedding",
                             embedding)
    assert code == 1 and not checked["passed"]
    assert checked["agree_with_model"] < checked["inputs"]
    found = re.match(r"on input (\[.*?\]) at position (\d+): the compiled model gives (.*?), "
                     r"the universal transformer gives (.*)$", checked["first_disagreement"])
    assert found, checked["first_disagreement"]
    tokens = json.loads(found.group(1).replace("'", '"'))
    expected = run_weights(model, [tokens])[0][int(found.group(2))]
    assert found.group(3) == repr(expected) and found.group(4) != found.group(3)


def test_a_program_failing_on_every_input_does_not_pass(tmp_path, capsys, driver):
    model = compile_to(tmp_path, driver, ATTENTION_ONLY["shift"][0], "a,b,c")
    other = tmp_path / "other.rasp"
    other.write_text("wrong = tokens_int + 1;\n")  # "a" is no int: fails on every input
    ut = str(tmp_path / "ut.npz")
    main(["universal", "build", "--like", model, "-o", ut])
    capsys.readouterr()
    code, checked = run_json(capsys, "universal", "verify", model, "--ut", ut, "--program",
                             str(other), "--name", "wrong")
    assert code == 1 and checked["agree_with_program"] == 0
    assert checked["failure"] == ("the program fails on all 120 inputs of the domain: it is "
                                  "not the program the model was compiled from")


def test_like_takes_the_whole_shape(tmp_path, capsys, driver):
    model = compile_to(tmp_path, driver, ATTENTION_ONLY["shift"][0], "a,b,c")
    assert main(["universal", "build", "--like", model, "--heads", "2", "--residual",
                 "-o", str(tmp_path / "ut.npz")]) == 2
    assert (f"--heads, --residual: --like {model} takes the whole shape from the model; drop "
            "the shape options") in capsys.readouterr().err
    assert main(["universal", "build", "-o", str(tmp_path / "ut.npz")]) == 2
    assert ("--heads, --layers, --dim: required (or --like MODEL, the shape of a compiled "
            "model)") in capsys.readouterr().err


def test_without_the_program_file_verify_compares_with_the_model(tmp_path, capsys, driver):
    model = compile_to(tmp_path, driver, ATTENTION_ONLY["shift"][0], "a,b,c")
    (tmp_path / "program.rasp").unlink()
    ut = str(tmp_path / "ut.npz")
    main(["universal", "build", "--like", model, "-o", ut])
    capsys.readouterr()
    code, checked = run_json(capsys, "universal", "verify", model, "--ut", ut)
    assert code == 0 and "agree_with_program" not in checked
    assert checked["program"].startswith(f"none: the compile record's program "
                                         f"{str(tmp_path / 'program.rasp')!r} is not run: "
                                         f"{tmp_path.resolve() / 'program.rasp'}: no such "
                                         "file")


def test_verify_runs_a_recorded_program_only_inside_the_models_folder(tmp_path, capsys,
                                                                      driver):
    """The compile record names the program; a forged record could name any .rasp file.
    It runs only if it resolves inside the model's folder, and verify says which ran."""
    model = compile_to(tmp_path, driver, ATTENTION_ONLY["shift"][0], "a,b,c")
    ut = str(tmp_path / "ut.npz")
    main(["universal", "build", "--like", model, "-o", ut])
    capsys.readouterr()
    code, checked = run_json(capsys, "universal", "verify", model, "--ut", ut)
    name = re.findall(r"^(\w+) =", ATTENTION_ONLY["shift"][0], re.MULTILINE)[-1]
    assert code == 0 and checked["program"] == (
        f"{name} ({tmp_path / 'program.rasp'}, from the compile record)")
    elsewhere = tmp_path / "sub"
    elsewhere.mkdir()
    (tmp_path / "model.npz").rename(elsewhere / "model.npz")
    code, checked = run_json(capsys, "universal", "verify", str(elsewhere / "model.npz"),
                             "--ut", ut)
    assert code == 0 and "agree_with_program" not in checked
    assert checked["program"].startswith("none: the compile record's program")
    code, checked = run_json(capsys, "universal", "verify", str(elsewhere / "model.npz"),
                             "--ut", ut, "--program", str(tmp_path / "program.rasp"),
                             "--name", name)
    assert code == 0 and checked["agree_with_program"]
    assert checked["program"] == f"{name} ({tmp_path / 'program.rasp'}, from --program)"
