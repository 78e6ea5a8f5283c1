"""The Python API's error contract (docs/python.md "Errors"; issue 34): every public entry
point checks its arguments at the boundary, and a wrong one is a RaspError naming the
argument, never a bare TypeError, ValueError or MemoryError from inside, a silent
acceptance, or a hang.

The property test calls each entry point with one argument replaced by a hostile value
(None, huge and negative ints, NaN and inf, bytes, NUL, dicts, objects, complex numbers,
nested lists, a FIFO, absurd sizes) and the others valid, under an alarm."""
from __future__ import annotations

import math
import os
import signal
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import rasp_sim
from rasp_sim import testing
from rasp_sim.base.limits import MAX_INT_BITS

REVERSE = "examples/reverse.rasp"
CALL_SECONDS = 30  # the slowest valid call (a compile) takes about a second


# ------------------------------------------------------------------ the entry points


@dataclass(frozen=True)
class Entry:
    """A public callable and valid keyword arguments for it."""

    name: str
    call: Callable[..., Any]
    valid: dict[str, Any]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@pytest.fixture(scope="module")
def fifo(folder: Path) -> str:
    """A FIFO in the test's own folder, named like a model file."""
    path = folder / "fifo.npz"
    os.mkfifo(path)
    return str(path)


@pytest.fixture(scope="module")
def program() -> rasp_sim.Program:
    return rasp_sim.load(REVERSE)


@pytest.fixture(scope="module")
def model(program: rasp_sim.Program) -> rasp_sim.Model:
    pytest.importorskip("tracr")
    return rasp_sim.compile(program, "reverse", vocab="ab", max_len=2)


@pytest.fixture(scope="module")
def model_file(model: rasp_sim.Model, folder: Path) -> str:
    path = folder / "reverse.npz"
    model.save(path)
    return str(path)


def _entries(program: rasp_sim.Program, model: rasp_sim.Model, model_file: str,
             folder: Path) -> list[Entry]:
    """Every public function and method of the API (rasp_sim.__all__, Program, Model,
    Trace, rasp_sim.testing; the tracr front end), without torch's."""
    from tracr.compiler import lib

    from rasp_sim.tracr_frontend import to_rasp

    trace = model.trace("ab")
    reverse = {"program": program, "name": "reverse"}
    return [
        Entry("parse", rasp_sim.parse, {"text": "x = tokens;", "file": None, "exact": False,
                                        "strict": False, "sandbox": None}),
        Entry("load", rasp_sim.load, {"path": REVERSE, "exact": False, "strict": False,
                                      "sandbox": False}),
        Entry("compile", rasp_sim.compile, {
            **reverse, "vocab": "ab", "max_len": 2, "min_len": None, "numeric_tokens": False,
            "token_range": (-1000.0, 1000.0), "causal": False, "samples": None, "seed": 0,
            "force": False, "exhaustive": False, "proof_dir": None, "workers": None,
            "scheduler": None}),
        Entry("load_model", rasp_sim.load_model, {"path": model_file,
                                                  "allow_unvalidated": False,
                                                  "memory_limit": 2**30}),
        Entry("compress", rasp_sim.compress, {
            "model": model, "width": 2, "program": program, "seed": 0, "steps": 0,
            "orthogonal": False, "workers": None, "scheduler": None}),
        Entry("to_rasp", to_rasp,
              {"sop": lib.make_length(), "vocab": {"a", "b"}, "max_seq_len": 2}),
        Entry("from_tracr", rasp_sim.from_tracr,
              {"sop": lib.make_length(), "vocab": {"a", "b"}, "max_seq_len": 2}),
        Entry("compile_tracr", rasp_sim.compile_tracr, {
            "program": lib.make_length(), "vocab": {"a", "b"}, "max_seq_len": 2,
            "causal": False, "compiler_bos": "BOS", "compiler_pad": None,
            "mlp_exactness": 100, "samples": None, "seed": 0, "force": False}),
        Entry("Program.run", program.run, {"inputs": ["ab"], "name": "reverse",
                                           "memory_limit": 2**30}),
        Entry("Program.run_batch", program.run_batch, {"batch": [["a", "b"]],
                                                       "name": "reverse",
                                                       "memory_limit": 2**30}),
        Entry("Program.evaluate", program.evaluate, {"inputs": ["ab"], "name": "reverse",
                                                     "memory_limit": 2**30}),
        Entry("Program.evaluate_nodes", program.evaluate_nodes,
              {"nodes": [program["reverse"]], "inputs": ["ab"], "memory_limit": 2**30}),
        Entry("Program.evaluate_groups", lambda **kw: list(program.evaluate_groups(**kw)),
              {"inputs": ["ab"], "name": "reverse", "memory_limit": 2**30,
               "first_index": 0}),
        Entry("Program.analyse", program.analyse, {"name": "reverse"}),
        Entry("Program.node", program.node, {"name": "reverse"}),
        Entry("Program[name]", lambda name: program[name], {"name": "reverse"}),
        Entry("Model.run", model.run, {"inputs": ["ab"], "memory_limit": 2**30}),
        Entry("Model.trace", model.trace, {"sequence": "ab"}),
        Entry("Model.save", model.save, {"path": str(folder / "saved.npz")}),
        Entry("Trace.sop_values", trace.sop_values, {"label": "tokens", "after": None}),
        Entry("testing.token_sequences", testing.token_sequences,
              {"vocab": "ab", "min_len": 1, "max_len": 3}),
        Entry("testing.matrix", testing.matrix, {"n": 2, "d": 2, "elements": None}),
        Entry("testing.concat", lambda a, b, **kw: testing.concat(a, b, **kw),
              {"a": testing.matrix(1, 2), "b": testing.matrix(2, 1), "length": 6,
               "pad": 0}),
        Entry("testing.assert_matches", testing.assert_matches, {
            "subject": program, "reference": lambda x: list(x)[::-1], "inputs": ["ab"],
            "name": "reverse", "rtol": 1e-9, "atol": 1e-9, "exact": False}),
    ]


def _torch_entries(model: rasp_sim.Model) -> list[Entry]:
    return [Entry("Model.to_torch", model.to_torch, {"dtype": None, "device": None}),
            Entry("Model.to_transformer_lens", model.to_transformer_lens,
                  {"dtype": None, "device": None})]


def _hostile(fifo: str) -> list[Any]:
    """Values of every type that no argument of the API takes as given (True is left out:
    it is a valid flag, and exhaustive=True would start a Dask cluster)."""
    return [None, -1, 0, 10**12, 2**(MAX_INT_BITS + 1), -2**70, math.nan, math.inf,
            -math.inf, 1e308, 1j, b"ab", "", "a\0b", "\ud800", "x", "not/a/file.rasp", {},
            {"a": 1}, object(), [], [[1, [2]]], [{"a": 1}], [[object()]], [[1j]],
            [[2**(MAX_INT_BITS + 1)]], [math.nan], Fraction(1, 3), np.float64(math.nan),
            np.array([[1j]]), np.array(5), np.zeros((1, 1, 1)), [["a"], ["a", "b"]], [[]],
            [""], ["\0"], range(10**12), fifo, Path(fifo), st.none(), print]


def _hostile_values(fifo: str) -> st.SearchStrategy[Any]:
    """The fixed hostile values and generated ones of every plain type (small ints: a
    valid max_len of 200 would compile for minutes, which is work, not a hang)."""
    atoms = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(),
                      st.text(max_size=4), st.binary(max_size=4), st.complex_numbers())
    return st.one_of(st.sampled_from(_hostile(fifo)), atoms,
                     st.lists(atoms, max_size=3), st.lists(st.lists(atoms, max_size=3),
                                                           max_size=2),
                     st.dictionaries(st.text(max_size=2), atoms, max_size=2))


def repr_short(value: Any) -> str:
    """A test id: a huge number by its type, not its 300,000 digits; a bare object by its
    type, not its address (pytest-xdist's workers must collect the same ids)."""
    plain = isinstance(value, (int, Fraction)) or type(value) is object
    return type(value).__name__ if plain else repr(value)


class Hung(BaseException):
    """Raised by the alarm: a BaseException, so that no `except Exception` swallows it."""


@pytest.fixture()
def alarm() -> Iterator[None]:
    def ring(signum: int, frame: Any) -> None:
        raise Hung(f"a call ran for more than {CALL_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, ring)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _call_hostile(entry: Entry, argument: str, value: Any) -> None:
    """entry with `argument` set to `value`: it returns, or raises a RaspError (or, from
    assert_matches, the AssertionError that is its answer when the program and the
    reference disagree: tokens [False] are the strings 'False' to the program)."""
    signal.alarm(CALL_SECONDS)
    try:
        entry.call(**{**entry.valid, argument: value})
    except rasp_sim.RaspError:
        pass
    except AssertionError as mismatch:
        if entry.name != "testing.assert_matches" or not str(mismatch).startswith("on input"):
            raise
    finally:
        signal.alarm(0)


@pytest.fixture(scope="module")
def entries(program: rasp_sim.Program, model: rasp_sim.Model, model_file: str,
            folder: Path) -> list[Entry]:
    return _entries(program, model, model_file, folder)


def _property_test(examples: int) -> Callable[..., None]:
    """The property, checked on `examples` drawn calls: an entry point, one of its
    arguments and a hostile value for it."""
    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(data=st.data())
    def test(entries: list[Entry], fifo: str, alarm: None, data: st.DataObject) -> None:
        entry = data.draw(st.sampled_from(entries), label="entry")
        argument = data.draw(st.sampled_from(sorted(entry.valid)), label="argument")
        _call_hostile(entry, argument, data.draw(_hostile_values(fifo), label="value"))
    return test


test_hostile_arguments_raise_only_rasp_errors = _property_test(80)
test_many_hostile_arguments_raise_only_rasp_errors = pytest.mark.slow(_property_test(3000))


@pytest.mark.slow
def test_every_hostile_argument_of_every_entry(entries, fifo, alarm):
    """Each argument of each entry point with each hostile value."""
    assert _sweep(entries, fifo) == []


def _sweep(entries: list[Entry], fifo: str) -> list[str]:
    """Every call of `entries` with one hostile argument that raised something other than
    a RaspError, or hung: all of them, not only the first."""
    escaped = []
    for entry in entries:
        for argument in sorted(entry.valid):
            for value in _hostile(fifo):
                try:
                    _call_hostile(entry, argument, value)
                except (Exception, Hung) as error:  # noqa: BLE001 (each is a finding)
                    escaped.append(f"{entry.name}({argument}={repr_short(value)[:40]}): "
                                   f"{type(error).__name__}: {str(error)[:200]}")
    return escaped


@pytest.mark.interp
def test_torch_exports_take_only_rasp_errors(model, fifo, alarm):
    pytest.importorskip("transformer_lens")
    assert _sweep(_torch_entries(model), fifo) == []


# ------------------------------------------------------------------ each check, named


@pytest.mark.parametrize("value", [None, 5, b"reverse.rasp", "a\0b", ""])
def test_a_path_that_is_no_path_is_refused_by_name(value, model):
    for call, argument in [(lambda: rasp_sim.load(value), "load: path"),
                           (lambda: rasp_sim.load_model(value), "load_model: path"),
                           (lambda: model.save(value), "save: path"),
                           (lambda: rasp_sim.parse("x = tokens;", sandbox=value or 5),
                            "parse: sandbox")]:
        with pytest.raises(rasp_sim.RaspTypeError, match=argument):
            call()


def test_memory_limit_is_a_number_of_bytes(program, model, model_file):
    for call in (lambda: program.run(["ab"], memory_limit="1GB"),
                 lambda: model.run(["ab"], memory_limit="1GB"),
                 lambda: rasp_sim.load_model(model_file, memory_limit="1GB")):
        with pytest.raises(rasp_sim.RaspTypeError, match="memory_limit must be an int"):
            call()
    with pytest.raises(rasp_sim.RaspTypeError, match="memory_limit must be at most"):
        program.run(["ab"], memory_limit=2**64)


def test_sop_values_after_names_a_block(model):
    trace = model.trace("ab")
    last = len(model.layers) - 1
    assert trace.sop_values("tokens", after=last) == trace.sop_values("tokens")
    for after in (len(model.layers), 99, -1):
        with pytest.raises(rasp_sim.RaspTypeError, match="sop_values: after must be"):
            trace.sop_values("tokens", after=after)


@pytest.mark.parametrize("options, message", [
    ({"samples": 10**12}, "samples: .* at most 1,000,000"),
    ({"seed": 2**32}, "seed: .* at most 4,294,967,295"),
    ({"seed": 2**(MAX_INT_BITS + 1)}, "seed: a 1,000,002-bit integer is too large"),
    ({"exhaustive": True, "workers": 2**31}, "workers: .* at most 2,147,483,647"),
    ({"exhaustive": True, "scheduler": "bogus"}, "scheduler must be a Dask scheduler"),
    ({"exhaustive": True, "scheduler": 8786}, "scheduler must be a Dask scheduler"),
    ({"causal": "no"}, "causal must be True or False"),
    ({"proof_dir": b"p", "exhaustive": True}, "proof_dir must be a path"),
    ({"vocab": ["a", {}]}, "a vocab entry is dict"),
    ({"vocab": [1, math.nan]}, "a vocab entry is nan: token values must be finite"),
    ({"vocab": [1, -math.inf]}, "a vocab entry is -inf"),
    ({"vocab": [1, 1j]}, "a vocab entry is complex"),
    ({"vocab": [2**(MAX_INT_BITS + 1)]}, "a vocab entry has 1,000,002 bits, above the limit"),
    ({"vocab": range(10**12)}, "vocab has 1,000,000,000,000 tokens"),
    ({"name": 5}, "name must be a str"),
])
def test_compile_refuses_before_work(program, options, message):
    with pytest.raises(rasp_sim.RaspTypeError, match=f"compile: {message}"):
        rasp_sim.compile(program, **{"name": "reverse", "vocab": "ab", "max_len": 2,
                                     **options})


@pytest.mark.parametrize("token", [{}, object(), 1j, {"a": 1}, None, [1], b"a",
                                   2**(MAX_INT_BITS + 1), Fraction(1, 2**(MAX_INT_BITS + 1)),
                                   np.complex128(1j)], ids=repr_short)
def test_an_input_token_that_is_no_atom_is_refused(program, model, token):
    for call in (lambda: program.run([["a", token]]), lambda: model.run([["a", token]]),
                 lambda: model.trace(["a", token])):
        with pytest.raises(rasp_sim.RaspTypeError, match="input 0 element 1"):
            call()


def test_an_array_input_is_checked_by_its_dtype(program):
    with pytest.raises(rasp_sim.RaspTypeError, match="run_batch: inputs: an array of complex128"):
        program.run_batch(np.array([[1j, 2j]]))
    with pytest.raises(rasp_sim.RaspTypeError, match="input 0 element 0 is dict"):
        program.run([np.array([{}], dtype=object)])
    assert program.run([np.array(["a", "b"])]) == [["b", "a"]]


def test_flags_are_bools(model_file):
    with pytest.raises(rasp_sim.RaspTypeError, match="parse: exact must be True or False"):
        rasp_sim.parse("x = tokens;", exact="no")
    with pytest.raises(rasp_sim.RaspTypeError, match="load: sandbox must be True or False"):
        rasp_sim.load(REVERSE, sandbox="examples")
    with pytest.raises(rasp_sim.RaspTypeError, match="allow_unvalidated must be True"):
        rasp_sim.load_model(model_file, allow_unvalidated={})


def test_save_writes_only_the_formats_its_suffix_names(model, tmp_path):
    with pytest.raises(rasp_sim.RaspTypeError, match=r"\.npz or \.safetensors"):
        model.save(tmp_path / "x.txt")
    assert not (tmp_path / "x.txt").exists()
    model.save(tmp_path / "x.NPZ")
    assert rasp_sim.load_model(tmp_path / "x.NPZ").run(["ab"]) == [["b", "a"]]


def test_assert_matches_refuses_a_str_of_inputs(program):
    """A str would be tested character by character, each a one-token input, on which any
    reverse is right: the wrong reference would pass."""
    def wrong(x: Any) -> list:
        return list(x)

    with pytest.raises(rasp_sim.RaspTypeError, match="takes a list of inputs"):
        testing.assert_matches(program, wrong, "abc", name="reverse")
    with pytest.raises(AssertionError):
        testing.assert_matches(program, wrong, ["abc"], name="reverse")
    testing.assert_matches(program, wrong, (x for x in ["a", "b"]), name="reverse")


@pytest.mark.parametrize("call, message", [
    (lambda p: testing.assert_matches(p, None, ["ab"]), "reference must be a function"),
    (lambda p: testing.assert_matches(p, len, ["ab"], name="reverse"), "returned int 2"),
    (lambda p: testing.assert_matches("p", len, ["ab"]), "subject must be a Program"),
    (lambda p: testing.assert_matches(p, list, ["ab"], rtol=math.nan), "rtol must be a finite"),
    (lambda p: testing.assert_matches(p, list, ["ab"], atol=-1), "atol must be a finite"),
    (lambda p: testing.matrix(0, 3), "matrix: n must be at least 1, got 0"),
    (lambda p: testing.matrix(10**4, 10**4), "matrix: n x d = 100,000,000 entries"),
    (lambda p: testing.matrix(2, 2, elements=[1, 2]), "elements must be a hypothesis strategy"),
    (lambda p: testing.token_sequences("ab", min_len=3, max_len=2), "max_len must be at least 3"),
    (lambda p: testing.token_sequences([], max_len=2), "vocab is empty"),
    (lambda p: testing.token_sequences([math.inf]), "a vocab entry is inf"),
    (lambda p: testing.concat(testing.matrix(1, 1), "x"), "layout 1 must be a hypothesis"),
    (lambda p: testing.concat(testing.matrix(1, 1), pad={}), "pad is dict"),
])
def test_testing_refuses_with_rasp_errors(program, call, message):
    with pytest.raises(rasp_sim.RaspTypeError, match=message):
        call(program)


@settings(max_examples=5, deadline=None)
@given(st.data())
def test_concat_refuses_a_length_too_short_when_drawn(data):
    with pytest.raises(rasp_sim.RaspTypeError, match="length 3 is shorter than the 4"):
        data.draw(testing.concat(testing.matrix(2, 2), length=3))


def test_tracr_vocab_values_are_finite_atoms():
    pytest.importorskip("tracr")
    from tracr.compiler import lib

    for vocab, message in (({1, math.nan}, "vocab entry is nan"), ({1, 1j}, "is complex"),
                           ({"a": 1}, "must be a str or a list of tokens, not dict")):
        with pytest.raises(rasp_sim.RaspTypeError, match=f"from_tracr: .*{message}"):
            rasp_sim.from_tracr(lib.make_length(), vocab, 2)
    with pytest.raises(rasp_sim.RaspTypeError, match="max_seq_len is a 1,000,002-bit"):
        rasp_sim.from_tracr(lib.make_length(), {"a"}, 2**(MAX_INT_BITS + 1))
    with pytest.raises(rasp_sim.RaspTypeError, match="compile_tracr: causal must be True"):
        rasp_sim.compile_tracr(lib.make_length(), {"a"}, 2, causal="yes")


@pytest.mark.interp
@pytest.mark.parametrize("options, message", [
    ({"dtype": "float32"}, "dtype must be a floating torch dtype"),
    ({"dtype": 5}, "dtype must be a floating torch dtype"),
    ({"device": "gpu"}, "device must be 'cpu', 'cuda'"),
    ({"device": 0}, "device must be 'cpu', 'cuda'"),
    ({"device": "cpu:x"}, "device must be 'cpu', 'cuda'"),
])
def test_torch_dtype_and_device_are_checked_before_torch(model, options, message):
    """Checked before torch is imported: torch raises its own TypeError or RuntimeError."""
    for method in ("to_torch", "to_transformer_lens"):
        with pytest.raises(rasp_sim.RaspTypeError, match=f"{method}: {message}"):
            getattr(model, method)(**options)


@pytest.mark.interp
def test_torch_dtype_must_be_floating_and_the_device_present(model):
    torch = pytest.importorskip("torch")
    with pytest.raises(rasp_sim.RaspTypeError, match="to_torch: dtype must be a floating"):
        model.to_torch(dtype=torch.int64)
    present = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(rasp_sim.RaspTypeError, match="this machine has no such device"):
        model.to_torch(device=f"cuda:{present}")
    assert model.to_torch(dtype=torch.float32, device=torch.device("cpu")).dtype == torch.float32


def test_a_message_shows_a_huge_int_by_its_size(program):
    """Its 300,000 digits would take a second to print, and as long again in a list."""
    huge = 2**(MAX_INT_BITS + 1)
    for inputs in (huge, [[[huge]]]):
        with pytest.raises(rasp_sim.RaspTypeError, match="<1,000,002-bit int>"):
            program.run(inputs)
