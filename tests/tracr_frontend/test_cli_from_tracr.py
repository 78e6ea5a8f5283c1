"""`rasp-sim from-tracr`: a tracr program in a Python file or module becomes a .rasp file that
`rasp-sim run` runs with tracr's values; bad arguments and failing modules are errors
with a reason, never a traceback."""
from __future__ import annotations

import json
import os
import textwrap

import pytest

rasp = pytest.importorskip("tracr.rasp.rasp")

from rasp_sim.cli import main  # noqa: E402

PROGRAM = textwrap.dedent('''
    from tracr.rasp import rasp

    def make_program():
        shifted = rasp.Aggregate(rasp.Select(rasp.indices, rasp.indices,
                                             lambda k, q: q == k + 1), rasp.tokens)
        return rasp.SequenceMap(lambda x, y: x + y, rasp.tokens, shifted).named("sums")

    class Case7:  # an InterpBench-style case: vocabulary and length with BOS counted
        def get_program(self):
            return make_program()

        def get_vocab(self):
            return {1, 2, 3}

        def get_max_seq_len(self):
            return 5

    def broken():
        raise RuntimeError("no program today")
''')


@pytest.fixture
def module(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return path


def test_the_written_file_runs_with_tracr_values(tmp_path, module, capsys):
    out = tmp_path / "prog.rasp"
    assert main(["from-tracr", f"{module}:make_program", "--vocab", "1,2,3", "--max-len", "4",
                 "-o", str(out), "--check"]) == 0
    err = capsys.readouterr().err
    assert f"wrote {out}" in err and ": 0 disagree" in err and "every input" in err
    assert "prog.py:" in out.read_text()  # the function's file, not a machine's path
    assert main(["run", str(out), "--input", "[1, 3, 2]", "--json"]) == 0
    row = json.loads(capsys.readouterr().out.splitlines()[0])
    namespace: dict = {}
    exec(compile(PROGRAM, str(module), "exec"), namespace)  # noqa: S102: the test's own text
    want = rasp.evaluate(namespace["make_program"](), [1, 3, 2])
    assert want[0] is None and row["output"][1:] == want[1:]
    assert row["output"][0] == -1  # the stand-in of tracr's None in a numeric column


def test_an_interpbench_case_gives_vocabulary_and_length(module, capsys):
    assert main(["from-tracr", f"{module}:Case7"]) == 0
    text = capsys.readouterr().out
    assert "tokens are\n# [1, 2, 3], lengths 1..4." in text  # 5 counts BOS
    assert text.rstrip().splitlines()[-1].startswith("sums_")


@pytest.mark.parametrize("spec, message", [
    ("{module}:missing", "has no attribute 'missing'"),
    ("{module}:broken", "calling it raised RuntimeError: no program today"),
    ("nowhere.py:f", "nowhere.py: no such Python file"),
    ("no_such_module_here:f", "importing it raised ModuleNotFoundError"),
    ("{module}:PROGRAM_TEXT", "not a tracr s-op"),
])
def test_what_cannot_be_loaded_is_an_error_with_the_reason(module, capsys, spec, message):
    module.write_text(PROGRAM + "\nPROGRAM_TEXT = 'text'\n")
    assert main(["from-tracr", spec.format(module=module), "--vocab", "1",
                 "--max-len", "2"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_module_path_that_is_not_a_regular_file_is_refused(tmp_path, capsys):
    fifo = tmp_path / "prog.py"
    os.mkfifo(fifo)  # importing it would block
    assert main(["from-tracr", f"{fifo}:f", "--vocab", "1", "--max-len", "2"]) == 1
    assert f"cannot import: {fifo}: not a regular file" in capsys.readouterr().err


def test_usage_errors(module, capsys):
    assert main(["from-tracr", f"{module}:make_program"]) == 2
    assert "give --vocab and --max-len" in capsys.readouterr().err
    assert main(["from-tracr", "make_program", "--vocab", "1", "--max-len", "2"]) == 2
    assert "expected MODULE:NAME" in capsys.readouterr().err
    assert main(["from-tracr", f"{module}:make_program", "--vocab", "1", "--max-len", "2",
                 "-o", str(module)]) == 2
    assert "would destroy the input" in capsys.readouterr().err
    assert "def make_program" in module.read_text()


def test_check_fails_where_the_program_disagrees(tmp_path, capsys):
    """A function that is not a function of its input (it counts its calls) gives a table
    of its first answers, which tracr's evaluate then contradicts: exit 1, with inputs."""
    path = tmp_path / "counting.py"
    path.write_text(textwrap.dedent('''
        import itertools
        from tracr.rasp import rasp
        calls = itertools.count()
        def make():
            return rasp.Map(lambda x: next(calls), rasp.tokens)
    '''))
    assert main(["from-tracr", f"{path}:make", "--vocab", "a,b", "--max-len", "2",
                 "--check"]) == 1
    err = capsys.readouterr().err
    assert "disagree" in err and "  on [" in err
