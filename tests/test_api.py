"""The public Python API (rasp_sim/__init__.py, docs/python.md): its contract beyond the
page's examples, its errors, and that importing it stays light."""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import rasp_sim
from heavy_imports import heavy_modules_after
from rasp_sim.testing import Layout, assert_matches, concat, matrix, token_sequences

PROGRAM = """
tokens = tokens_int;
doubled = tokens * 2;
half = tokens / 2;
big = tokens > 1;
before = select(indices, indices, <);
same = selector_width(select(tokens, tokens, ==));
"""


@pytest.fixture(scope="module")
def program() -> rasp_sim.Program:
    return rasp_sim.parse(PROGRAM, file="p.rasp")


def test_every_public_name_resolves():
    for name in rasp_sim.__all__:
        assert getattr(rasp_sim, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'missing'"):
        getattr(rasp_sim, "missing")


def test_importing_the_api_imports_neither_jax_nor_tracr(tmp_path):
    assert heavy_modules_after("import rasp_sim; rasp_sim.parse('x = tokens;').run(['ab'])",
                               tmp_path) == []


def test_compiling_imports_tracr_but_not_jax(tmp_path):
    pytest.importorskip("tracr")
    loaded = heavy_modules_after("import rasp_sim; rasp_sim.compile(rasp_sim.parse('x = "
                                 "tokens;'), vocab='ab', max_len=2)", tmp_path)
    assert loaded == ["tracr"]


def test_names_are_the_programs_own_s_ops_and_selectors(program):
    assert program.names == ("tokens", "doubled", "half", "big", "before", "same")
    assert "length" in program and "length" not in program.names  # the library's
    assert "nothing" not in program


def test_run_types_its_values(program):
    assert program.run([[1, 2, 3]], "doubled") == [[2, 4, 6]]
    assert program.run([[1, 2]], "half") == [[0.5, 1.0]]
    assert program.run([[1, 2]], "big") == [[False, True]]
    assert program.run([[3, 3, 1]]) == [[2, 2, 1]]  # the last name assigned


def test_run_batch_gives_typed_arrays(program):
    batch = np.array([[1, 2, 3], [3, 3, 3]])
    assert program.run_batch(batch, "doubled").dtype == np.int64
    assert program.run_batch(batch, "half").dtype == np.float64
    assert program.run_batch(batch, "big").dtype == np.bool_
    selector = program.run_batch(batch, "before")
    assert selector.shape == (2, 3, 3) and selector.dtype == np.bool_
    assert program.run_batch([[1, 2]], "doubled").tolist() == [[2, 4]]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.lists(
    st.lists(st.integers(-5, 5), min_size=n, max_size=n), min_size=1, max_size=5)))
def test_run_batch_equals_run(rows):
    program = rasp_sim.parse(PROGRAM)
    for name in program.names:
        assert program.run_batch(np.array(rows), name).tolist() == program.run(rows, name)


@pytest.mark.parametrize("call, error, message", [
    (lambda p: p.run("hello"), rasp_sim.RaspTypeError, "takes a list of inputs"),
    (lambda p: p.run([[1]], "missing"), rasp_sim.RaspNameError, "defines no name 'missing'"),
    (lambda p: p["missing"], rasp_sim.RaspNameError, "defines no name 'missing'"),
    (lambda p: p.run_batch(np.zeros(3), "doubled"), rasp_sim.RaspTypeError, "2-D batch"),
    (lambda p: p.run([["x"]], "doubled"), rasp_sim.RaspRuntimeError, "tokens_int"),
    (lambda p: p.run(None), rasp_sim.RaspTypeError, "run takes a list of inputs .* not NoneType"),
    (lambda p: p.run([5]), rasp_sim.RaspTypeError, "run: input 0 is not a sequence .*: int 5"),
    (lambda p: p.run_batch(np.zeros((0, 3))), rasp_sim.RaspTypeError, "the batch is empty"),
    (lambda p: rasp_sim.parse(b"x = tokens;"), rasp_sim.RaspTypeError,
     "parse: text must be a str, not bytes"),
])
def test_bad_calls_raise_the_projects_errors(program, call, error, message):
    with pytest.raises(error, match=message):
        call(program)


def test_a_syntax_error_is_located():
    with pytest.raises(rasp_sim.RaspSyntaxError) as caught:
        rasp_sim.parse("x = (tokens;", file="bad.rasp")
    assert caught.value.headline().startswith("bad.rasp:1:")


def test_load_refuses_a_missing_file(tmp_path):
    with pytest.raises(rasp_sim.RaspError, match="missing.rasp"):
        rasp_sim.load(tmp_path / "missing.rasp")


# ------------------------------------------------------------------ compiled models

@pytest.fixture(scope="module")
def sort_model() -> rasp_sim.Model:
    pytest.importorskip("tracr")
    return rasp_sim.compile(rasp_sim.load("examples/sort.rasp"), vocab=[1, 2, 3], max_len=4)


def test_compile_refuses_what_it_cannot_compile(program):
    pytest.importorskip("tracr")
    with pytest.raises(rasp_sim.CompileError, match="'before' is a selector"):
        rasp_sim.compile(program, "before", vocab=[1, 2], max_len=3)
    with pytest.raises(rasp_sim.CompileError, match="exactly one of vocab"):
        rasp_sim.compile(program, "doubled", max_len=3)
    with pytest.raises(rasp_sim.CompileError, match="not a valid token for tokens_int"):
        rasp_sim.compile(program, "doubled", vocab=["a"], max_len=3)


def test_an_int_program_compiled_to_a_numerical_output_gives_ints(sort_model):
    assert sort_model.info["output_type"] == "int"
    out = sort_model.run([[3, 1, 2], [2, 2]])
    assert out == [[1, 2, 3], [2, 2]]
    assert all(type(v) is int for row in out for v in row)


def test_an_output_far_from_the_programs_int_is_an_error(sort_model):
    broken = rasp_sim.Model(sort_model.weights.replace(unembed=sort_model.weights.unembed * 1.5))
    with pytest.raises(rasp_sim.RaspRuntimeError, match="not the integer its program gives"):
        broken.run([[3, 1, 2]])


def test_the_cli_prints_ints_for_an_int_program(sort_model, tmp_path, capsys):
    from rasp_sim.cli import main

    path = tmp_path / "sort.npz"
    sort_model.save(path)
    assert main(["run", "--weights", str(path), "--input", "[3, 1, 2]"]) == 0
    assert capsys.readouterr().out.strip().endswith("= [1, 2, 3] (ints)")


def test_layers_hold_every_block_with_its_operations(sort_model):
    layers = sort_model.layers
    assert len(layers) == len(sort_model.weights.layers)
    width = len(sort_model.residual_labels)
    assert width == sort_model.weights.width
    for block in layers:
        assert block.operations, block
        if block.kind == "mlp":
            assert block.arrays["w1"].shape[0] == width and block.arrays["w2"].shape[1] == width
        else:
            assert all(block.arrays[f"heads.{h}.w_q"].shape[0] == width
                       for h in range(len(sort_model.weights.layers[block.index].heads)))
    assert any(op.at and "stdlib" in op.at for block in layers for op in block.operations)


def test_load_model_checks_the_file(tmp_path, sort_model):
    with pytest.raises(rasp_sim.WeightsError, match="no such file"):
        rasp_sim.load_model(tmp_path / "none.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(rasp_sim.WeightsError):
        rasp_sim.load_model(tmp_path / "junk.npz")
    for suffix in (".npz", ".safetensors"):
        sort_model.save(tmp_path / f"m{suffix}")
        assert rasp_sim.load_model(tmp_path / f"m{suffix}").run([[2, 1]]) == [[1, 2]]


def test_model_run_refuses_bad_inputs(sort_model):
    with pytest.raises(rasp_sim.RaspTypeError, match="not in the model's vocabulary"):
        sort_model.run([[7]])
    with pytest.raises(rasp_sim.RaspTypeError, match="above the model's max-len"):
        sort_model.run([[1, 1, 1, 1, 1]])


# ------------------------------------------------------------------ notebook renderings

def _svg_root(text: str) -> ElementTree.Element:
    root = ElementTree.fromstring(text)
    assert root.tag.endswith("svg")
    return root


def test_programs_and_s_ops_render_as_svg(program):
    _svg_root(program._repr_svg_())
    _svg_root(program["doubled"]._repr_svg_())


def test_a_selector_value_renders_as_its_grid(program):
    (value,) = program.run([[1, 2, 3]], "before")
    assert value == [[False, False, False], [True, False, False], [True, True, False]]
    rects = [r for r in _svg_root(value._repr_svg_()).iter() if r.tag.endswith("rect")]
    assert len(rects) == 9
    filled = [r for r in rects if r.get("fill") != "#ffffff"]
    assert len(filled) == 3


# ------------------------------------------------------------------ rasp_sim.testing

def test_assert_matches_reports_the_first_mismatch(program):
    with pytest.raises(AssertionError, match=r"on input \[1, 2\] at position 1: the program "
                       r"\(float64\) gives 4, the reference 5"):
        assert_matches(program, lambda x: [2, 5], [[1, 2]], name="doubled")
    with pytest.raises(AssertionError, match="gives 2 values, the reference 1"):
        assert_matches(program, lambda x: [2], [[1, 2]], name="doubled")
    with pytest.raises(AssertionError, match="position 1: .* gives True, the reference 1"):
        assert_matches(program, lambda x: [False, 1], [[1, 2]], name="big")  # bool is no int
    with pytest.raises(rasp_sim.RaspTypeError, match="parse or load it with exact=True"):
        assert_matches(program, lambda x: x, [[1]], exact=True)


def test_assert_matches_tolerance_is_the_stated_one(program):
    assert_matches(program, lambda x: [0.5 + 1e-10], [[1]], name="half")
    with pytest.raises(AssertionError, match="tolerance"):
        assert_matches(program, lambda x: [0.5 + 1e-8], [[1]], name="half")


@settings(max_examples=20, deadline=None)
@given(concat(matrix(2, 3), matrix(1, 2, elements=st.integers(-3, 3)), length=10))
def test_layouts_are_row_major_and_padded(x):
    a, b = x.parts
    assert isinstance(x, Layout) and len(x) == 10
    assert x[:6] == a.ravel().tolist() and x[6:8] == b.ravel().tolist() and x[8:] == [0, 0]


@given(token_sequences("ab", min_len=2, max_len=3))
def test_token_sequences_stay_in_the_domain(x):
    assert 2 <= len(x) <= 3 and set(x) <= {"a", "b"}


@pytest.mark.parametrize("options, message", [
    ({"max_len": 0}, "compile: max_len must be at least 1, got 0"),
    ({"max_len": "3"}, "compile: max_len must be an int, not str '3'"),
    ({"max_len": 3, "samples": -5}, "compile: samples must be at least 1, got -5"),
    ({"max_len": 3, "seed": -1}, "compile: seed must be at least 0, got -1"),
    ({"max_len": 3, "exhaustive": True, "workers": 0},
     "compile: workers must be at least 1, got 0"),
    ({"max_len": 3, "vocab": [[1]]}, "a vocab entry is list \\[1\\]: a token is a str"),
    ({"max_len": 3, "vocab": 7}, "vocab must be a str or a list of tokens, not int 7"),
    ({"max_len": 3, "vocab": None, "numeric_tokens": True, "token_range": (5, 1)},
     "token_range must be two finite numbers with lo <= hi, got \\(5.0, 1.0\\)"),
    ({"max_len": 3, "vocab": None, "numeric_tokens": True, "token_range": "ab"},
     "token_range must be two numbers"),
])
def test_compile_checks_its_arguments_before_work(options, message):
    program = rasp_sim.parse("x = tokens_float * 2;")
    with pytest.raises(rasp_sim.RaspTypeError, match=message):
        rasp_sim.compile(program, **{"vocab": "ab", **options})


@pytest.mark.parametrize("options, message", [
    ({"vocab": None, "numeric_tokens": True, "exhaustive": True},
     "exhaustive=True: a numeric_tokens model reads real numbers"),
    ({"proof_dir": "p"}, "proof_dir, workers and scheduler are for an exhaustive proof"),
    ({"workers": 2}, "proof_dir, workers and scheduler are for an exhaustive proof"),
])
def test_proof_options_need_an_exhaustive_proof_of_tokens(options, message):
    pytest.importorskip("tracr")
    program = rasp_sim.parse("x = tokens_float * 2;")
    with pytest.raises(rasp_sim.CompileError, match=message):
        rasp_sim.compile(program, **{"vocab": "ab", "max_len": 2, **options})


def test_compile_takes_a_program():
    with pytest.raises(rasp_sim.RaspTypeError, match="compile takes a Program .* not a str"):
        rasp_sim.compile("x = tokens;", vocab="ab", max_len=2)
