"""`rasp-sim compile`, `verify` and `run --weights`, in process, with their error cases."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tracr")

from rasp_sim.cli import main  # noqa: E402
from rasp_sim.compiler import weights as weight_format  # noqa: E402

# The classic library's wrappers, as a user compiles them.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compile"
REVERSE = str(EXAMPLES / "reverse.rasp")
HISTOGRAM = str(EXAMPLES / "histogram.rasp")


@pytest.fixture(scope="module")
def reverse_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("models") / "reverse.npz"
    assert main(["compile", REVERSE, "--name", "reversed", "--vocab", "a,b,c", "--max-len",
                 "4", "-o", str(path), "--check-tracr"]) == 0
    return path


def test_compile_writes_validated_weights_with_everything_to_use_them(reverse_model):
    model = weight_format.load(reverse_model)
    record = model.metadata["tracr_compile"]
    assert model.metadata["validated"] is True and record["validated"] is True
    assert record["validation"]["mode"] == "exhaustive"
    assert record["validation"]["compared"] == 3 + 9 + 27 + 81
    assert record["vocab"] == ["a", "b", "c"] and record["max_len"] == 4
    assert record["tracr_oracle"] is True  # --check-tracr
    assert model.token_embed is not None and model.pos_embed.shape[0] == 5
    assert model.unembed.shape == (model.width, len(model.output_encoder.values))
    assert len(model.residual_labels) == model.width
    assert model.input_encoder.bos == "compiler_bos"


def test_run_weights_and_verify(reverse_model, capsys):
    assert main(["run", "--weights", str(reverse_model), "--input", "abc", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["output"] == ["c", "b", "a"]
    assert main(["verify", str(reverse_model), REVERSE, "--name", "reversed"]) == 0
    assert "agrees with reversed" in capsys.readouterr().out


def test_verify_against_another_program_names_the_first_disagreement(reverse_model, capsys):
    assert main(["verify", str(reverse_model), HISTOGRAM, "--name", "hist"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("verify failed: the model disagrees with the program on input "
                          "['a'] at position 0")
    assert "the interpreter gives 1" in err and "gives 'a'" in err
    assert "(verify checked every input)" in err and "written" not in err  # its own words


@pytest.mark.parametrize("text, message", [
    ("abd", "position 2: token 'd' is not in the model's vocabulary ['a', 'b', 'c']"),
    ("abcab", "input 0: length 5 is above the model's max-len 4"),
])
def test_run_rejects_inputs_outside_the_domain(reverse_model, capsys, text, message):
    assert main(["run", "--weights", str(reverse_model), "--input", text]) == 1
    assert message in capsys.readouterr().err


def test_broken_weight_files(reverse_model, tmp_path, capsys):
    data = reverse_model.read_bytes()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    model = weight_format.load(reverse_model)
    foreign = tmp_path / "foreign.npz"
    weight_format.save(model.replace(metadata={}), foreign)
    altered = tmp_path / "altered.npz"
    with np.load(reverse_model) as arrays:
        contents = {k: arrays[k] for k in arrays.files}
    contents["unembed"] = contents["unembed"][:, ::-1].copy()  # a plausible, wrong model
    np.savez(altered, **contents)
    future = tmp_path / "future.npz"
    with np.load(reverse_model) as arrays:
        contents = {k: arrays[k] for k in arrays.files}
    header = json.loads(contents["__header__"].tobytes())
    header["version"] = 99
    contents["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(future, **contents)
    for path, message in [(truncated, "corrupt or truncated"), (garbage, "corrupt or not a weights file"),
                          (foreign, "not written by `rasp-sim compile`"),
                          (future, "format version 99 is not supported"),
                          (altered, "altered or corrupt: the weights' hash does not match")]:
        assert main(["run", "--weights", str(path), "--input", "ab"]) == 1
        assert message in capsys.readouterr().err


def test_a_disagreeing_model_is_not_written_unless_forced(monkeypatch, tmp_path, capsys):
    from rasp_sim.compiler.tracr_backend import driver

    real = driver.to_weights

    def swapped_outputs(compiled, metadata):  # a wrong model: two output columns swapped
        model = real(compiled, metadata)
        return model.replace(unembed=model.unembed[:, [1, 0] + list(range(2, model.out_dim))])

    monkeypatch.setattr(driver, "to_weights", swapped_outputs)
    target = tmp_path / "wrong.npz"
    argv = ["compile", REVERSE, "--name", "reversed", "--vocab", "a,b", "--max-len", "3",
            "-o", str(target)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "the compiled model disagrees with the program on input" in err
    assert "at position 0" in err and "nothing written" in err
    assert not target.exists()
    assert main(argv + ["--force"]) == 1  # written, but the model is still wrong
    captured = capsys.readouterr()
    assert "written UNVALIDATED" in captured.err
    summary = captured.out.splitlines()[1]
    assert summary.startswith("UNVALIDATED") and "validated exhaustive" not in captured.out
    model = weight_format.load(target)
    assert model.metadata["validated"] is False
    assert model.metadata["tracr_compile"]["forced"] is True
    # run and verify refuse it unless --allow-unvalidated (then with a warning)
    for command in (["run", "--weights", str(target), "--input", "ab"],
                    ["verify", str(target), REVERSE, "--name", "reversed"]):
        assert main(command) == 1
        err = capsys.readouterr().err
        assert err.startswith("weights error:") and "is not validated" in err
    # the swapped columns turn 'a' into 0: the model's own (wrong) output, with a warning
    assert main(["run", "--weights", str(target), "--input", "aa", "--allow-unvalidated",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert "NOT validated" in captured.err and json.loads(captured.out)["output"] == [0, 0]
    assert main(["verify", str(target), REVERSE, "--name", "reversed",
                 "--allow-unvalidated"]) == 1
    assert "verify failed" in capsys.readouterr().err  # verify still finds it wrong
    assert main(argv + ["--force", "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert summary["validated"] is False and summary["output"] == str(target)


def test_compile_without_check_tracr_skips_the_oracle(tmp_path, capsys):
    target = tmp_path / "hist.npz"
    assert main(["compile", HISTOGRAM, "--name", "hist", "--vocab", "a,b", "--max-len", "3",
                 "-o", str(target), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["validated"] is True and summary["tracr_oracle"] is False
    assert weight_format.load(target).metadata["tracr_compile"]["tracr_oracle"] is False


def test_importing_the_driver_does_not_import_jax(tmp_path):
    from heavy_imports import heavy_modules_after

    loaded = heavy_modules_after("from rasp_sim.compiler.tracr_backend import driver", tmp_path)
    assert "jax" not in loaded and "haiku" not in loaded


@pytest.mark.parametrize("spelling", [["--vocab", "-1,0,1"], ["--vocab=-1,0,1"]])
def test_negative_vocabulary_in_both_spellings(tmp_path, capsys, spelling):
    source = tmp_path / "neg.rasp"
    source.write_text("tokens = tokens_int;\nneg = aggregate(select(indices, indices, ==), "
                      "0 - tokens);\n")
    target = tmp_path / "neg.npz"
    assert main(["compile", str(source), "--name", "neg", *spelling, "--max-len", "2",
                 "-o", str(target)]) == 0
    assert weight_format.load(target).metadata["tracr_compile"]["vocab"] == [-1, 0, 1]
    capsys.readouterr()
    assert main(["run", "--weights", str(target), "--input", "[1, -1, 0]"]) == 1  # max-len 2
    assert main(["run", "--weights", str(target), "--input", "[1, -1]", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["output"] == [-1, 1]


def test_a_dash_value_that_is_an_option_is_not_swallowed(capsys):
    """`--vocab --max-len 3`: --max-len is an option, so --vocab has no value (usage)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["compile", HISTOGRAM, "--name", "hist", "--vocab", "--max-len", "3"])
    assert exit_info.value.code == 2
    assert "--vocab: expected one argument" in capsys.readouterr().err


def test_compile_and_run_safetensors(tmp_path, capsys):
    target = tmp_path / "hist.safetensors"
    assert main(["compile", HISTOGRAM, "--name", "hist", "--vocab", "a,b", "--max-len", "3",
                 "-o", str(target)]) == 0
    assert target.read_bytes()[8:9] == b"{"  # safetensors: u64 header length, JSON header
    capsys.readouterr()
    assert main(["run", "--weights", str(target), "--input", "aba", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == [2, 1, 2]
    assert main(["verify", str(target), HISTOGRAM, "--name", "hist"]) == 0


def test_compile_refusal_prints_location(tmp_path, capsys):
    source = tmp_path / "bad.rasp"
    source.write_text('x = 1;\ns = sum(select(indices, indices, <=), tokens);\n')
    assert main(["compile", str(source), "--name", "s", "--vocab", "a,b", "--max-len", "3",
                 "-o", str(tmp_path / "s.npz")]) == 1
    err = capsys.readouterr().err
    assert f"{source}:2:" in err and "cannot compile: sum-aggregate 's'" in err


def test_compile_a_selector_is_an_error(tmp_path, capsys):
    source = tmp_path / "sel.rasp"
    source.write_text("s = select(indices, indices, ==);\n")
    assert main(["compile", str(source), "--name", "s", "--vocab", "a", "--max-len", "2"]) == 1
    assert "is a selector; only s-ops can be compiled" in capsys.readouterr().err


def test_compile_with_an_empty_vocabulary(capsys):
    assert main(["compile", HISTOGRAM, "--name", "hist", "--vocab", "", "--max-len", "3"]) == 1
    assert "vocabulary: is empty" in capsys.readouterr().err


def test_compile_to_an_unwritable_path(tmp_path, capsys):
    target = tmp_path / "missing" / "dir" / "m.npz"
    assert main(["compile", HISTOGRAM, "--name", "hist", "--vocab", "a", "--max-len", "2",
                 "-o", str(target)]) == 1
    err = capsys.readouterr().err  # refused before compiling, naming the missing folder
    assert f"cannot write: {target}: the folder {target.parent} does not exist" in err
    assert "validated" not in err


def test_forward_passes_are_sized_to_the_memory_limit(reverse_model):
    from rasp_sim.compiler.tracr_backend.runtime import rows_per_pass, run_weights
    from rasp_sim.base.errors import RaspResourceError

    model = weight_format.load(reverse_model)
    inputs = [list(word) for word in ("abca", "cab", "b", "ccba", "acb", "ab")]
    one_pass = run_weights(model, inputs)
    per_row = 8 * 5 * 3 * model.width  # a lower bound of one 4-token input's activations
    assert rows_per_pass(model, 5, 10**9) > 1000
    assert rows_per_pass(model, 5, 40 * per_row) < 40  # several passes of few inputs
    assert run_weights(model, inputs, memory_limit=40 * per_row) == one_pass
    with pytest.raises(RaspResourceError, match=r"one input of 4 tokens needs about [\d,]+ bytes "
                       r"\(width \d+\), above the memory limit of 1,000 bytes; raise it"):
        run_weights(model, inputs, memory_limit=1000)


def test_compile_names_the_last_assigned_s_op_by_default(tmp_path, capsys, monkeypatch):
    source = tmp_path / "two.rasp"
    source.write_text("x = tokens_int;\nfirst = x + 1;\nsecond = x * 2;\n")
    monkeypatch.chdir(tmp_path)
    assert main(["compile", str(source), "--vocab", "1,2", "--max-len", "2"]) == 0
    assert capsys.readouterr().out.startswith("second: ")
    model = weight_format.load(tmp_path / "second.npz")  # NAME.npz, as with --name
    assert model.metadata["tracr_compile"]["name"] == "second"


def _sampled_model(tmp_path, seed: str) -> tuple[str, Path]:
    """A model whose domain (10 tokens, lengths 1..5: 111,110 inputs) is sampled."""
    source = tmp_path / "inc.rasp"
    source.write_text("x = tokens_int;\ny = x + 1;\n")
    target = tmp_path / "inc.npz"
    assert main(["compile", str(source), "--vocab", "0,1,2,3,4,5,6,7,8,9", "--max-len", "5",
                 "--samples", "300", "--seed", seed, "-o", str(target)]) == 0
    return str(source), target


def test_verify_draws_a_sample_independent_of_the_compiles(tmp_path, capsys):
    source, target = _sampled_model(tmp_path, "3")
    assert weight_format.load(target).metadata["tracr_compile"]["validation"]["seed"] == 3
    capsys.readouterr()
    assert main(["verify", str(target), source, "--name", "y", "--samples", "300"]) == 0
    assert "sampled on" in (out := capsys.readouterr().out)
    assert "(seed 4, independent of the compile's sample, seed 3)" in out
    assert main(["verify", str(target), source, "--name", "y", "--samples", "300",
                 "--seed", "3"]) == 0
    assert "(seed 3: the compile's own sample, so nothing new is checked)" in \
        capsys.readouterr().out
    assert main(["verify", str(target), source, "--name", "y", "--samples", "300",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["seed"] == 4 and report["compile_seed"] == 3 and report["ok"] is True


def test_verify_failure_names_its_sample(tmp_path, capsys):
    _, target = _sampled_model(tmp_path, "0")
    other = tmp_path / "dec.rasp"
    other.write_text("x = tokens_int;\ny = x - 1;\n")
    capsys.readouterr()
    assert main(["verify", str(target), str(other), "--name", "y", "--samples", "300"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("verify failed: the model disagrees with the program on input")
    assert err.rstrip().endswith("(verify checked a sample, seed 1)")


def test_a_domain_mostly_outside_the_program_gets_a_warning(tmp_path, capsys):
    source = tmp_path / "div.rasp"
    source.write_text("x = tokens_int;\ny = aggregate(full_s, 10 / x);\n")
    assert main(["compile", str(source), "--vocab", "0,1,2,3", "--max-len", "5",
                 "-o", str(tmp_path / "div.npz")]) == 0
    err = capsys.readouterr().err
    assert "warning: 1001 of the 1364 inputs checked (73%) are outside the program's " \
           "domain" in err
    assert "--min-len" in err and "--vocab" in err
    assert main(["compile", str(source), "--vocab", "1,2,3", "--max-len", "5",
                 "-o", str(tmp_path / "div.npz")]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("kind, hinted", [("tokens_float", True), ("tokens_int", False)])
def test_a_refused_float_program_is_pointed_to_numeric_tokens(tmp_path, capsys, kind, hinted):
    source = tmp_path / "s.rasp"
    source.write_text(f"x = {kind};\ns = aggregate(select(indices, indices, <=), x, \"-\");\n")
    assert main(["compile", str(source), "--vocab", "1,2", "--max-len", "3",
                 "-o", str(tmp_path / "s.npz")]) == 1
    err = capsys.readouterr().err
    assert "cannot compile: aggregate 's'" in err
    assert ("hint: the program reads tokens_float; --numeric-tokens compiles it" in err) \
        == hinted
