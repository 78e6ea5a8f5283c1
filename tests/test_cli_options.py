"""Options defined once (rasp_sim/cli/options.py), and an option that does not apply to
the chosen mode refused as a usage error (exit 2) instead of being ignored."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from fractions import Fraction

import pytest

from cli_helpers import run_cli, write
from rasp_sim.cli import COMMANDS, build_parser, main
from rasp_sim.cli.run import NOT_FOR_WEIGHTS
from rasp_sim.base.text import short_repr

FLAG_VALUES = {"exact": [], "strict": [], "sandbox": [], "name": ["y"], "example": ["abc"],
               "strict_statements": []}


@pytest.mark.parametrize("dest", sorted(NOT_FOR_WEIGHTS))
def test_run_weights_refuses_the_options_of_a_program(capsys, tmp_path, dest):
    flag = "--" + dest.replace("_", "-")
    # The model does not exist: the usage error comes before anything is read.
    code, out, err = run_cli(capsys, "run", "--weights", str(tmp_path / "m.npz"),
                             "--input", "ab", flag, *FLAG_VALUES[dest])
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == (f"rasp-sim run: error: {flag} does not apply to --weights "
                                    f"({NOT_FOR_WEIGHTS[dest]})")


def test_the_weights_exact_message_says_why(capsys):
    code, _, err = run_cli(capsys, "run", "--weights", "m.npz", "--input", "ab", "--exact")
    assert code == 2
    assert ("rasp-sim run: error: --exact does not apply to --weights (a compiled model "
            "computes in float64)") in err


def test_run_of_a_program_refuses_allow_unvalidated(capsys, tmp_path):
    program = write(tmp_path, "y = indices;\n")
    code, out, err = run_cli(capsys, "run", program, "--input", "ab", "--allow-unvalidated")
    assert code == 2 and out == ""
    assert ("--allow-unvalidated does not apply to a program FILE (it is for a compiled "
            "model's file)") in err


def test_draw_computes_its_labels_in_exact_arithmetic(capsys, tmp_path):
    program = write(tmp_path, "x = indices + 0.1;\n")
    target = tmp_path / "x.dot"
    for exact, tenth in ((True, Fraction("0.1")), (False, 0.1)):
        code, _, err = run_cli(capsys, "draw", program, "-o", str(target), "--input", "ab",
                               *(["--exact"] if exact else []))
        assert code == 0, err
        label = short_repr([0 + tenth, 1 + tenth], 40)
        assert f"x\\nindices + {tenth}\\n{label}" in target.read_text()


def test_draw_without_input_refuses_exact(capsys, tmp_path):
    program = write(tmp_path, "x = indices + 0.1;\n")
    code, _, err = run_cli(capsys, "draw", program, "-o", str(tmp_path / "x.dot"), "--exact")
    assert code == 2 and not (tmp_path / "x.dot").exists()
    assert ("rasp-sim draw: error: --exact does not apply to a drawing without --input (only "
            "the values on --input depend on it)") in err


@pytest.mark.parametrize("command", ["analyse", "draw"])
def test_analyse_and_draw_take_name_as_run_does(capsys, tmp_path, command):
    program = write(tmp_path, "y = tokens;\nz = indices + 1;\n")
    extra = ["-o", str(tmp_path / "g.dot")] if command == "draw" else ["--json"]
    results = [run_cli(capsys, command, program, *spelling, *extra)
               for spelling in (["--name", "y"], ["y"], [])]
    assert [code for code, _, _ in results] == [0, 0, 0]
    if command == "analyse":
        names = [json.loads(out)["name"] for _, out, _ in results]
        assert names == ["y", "y", "z"]  # without a name: the last one assigned
    code, out, err = run_cli(capsys, command, program, "y", "--name", "y", *extra)
    assert code == 2 and out == ""
    assert f"rasp-sim {command}: error: give the name once: NAME or --name NAME, not both" in err
    # the usage shown is the command's, as for argparse's own errors
    assert err.startswith(f"usage: rasp-sim {command} ")


def _options(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {flag: action.help for action in parser._actions for flag in action.option_strings}


def test_each_shared_option_means_the_same_in_every_command():
    """One definition per option: a flag on several commands has one help text (the
    options whose help names the command's own object are parameterised on purpose)."""
    seen: dict[str, dict[str, str]] = {}
    for command in COMMANDS:
        (subparsers,) = [a for a in build_parser(command.name)._actions
                         if isinstance(a, argparse._SubParsersAction)]
        real = subparsers.choices[command.name]
        nested = [a for a in real._actions if isinstance(a, argparse._SubParsersAction)]
        parsers = [real] + [p for a in nested for p in a.choices.values()]
        for parser in parsers:
            for flag, help_text in _options(parser).items():
                seen.setdefault(flag, {})[parser.prog] = help_text
    for flag in ("--exact", "--strict", "--sandbox", "--allow-unvalidated"):
        assert len(seen[flag]) >= 2, flag
        assert len(set(seen[flag].values())) == 1, (flag, seen[flag])
    assert {"rasp-sim draw", "rasp-sim run", "rasp-sim repl"} <= set(seen["--exact"])
    assert {"rasp-sim analyse", "rasp-sim draw"} <= set(seen["--name"])


def test_building_any_command_parser_stays_light(tmp_path):
    """Parsers (and so the options module) import no heavy dependency: those load inside
    the handlers that need them."""
    code = ("import sys; from rasp_sim.cli import COMMANDS, build_parser\n"
            "for c in COMMANDS: build_parser(c.name)\n"
            "print([m for m in ('jax', 'haiku', 'tracr', 'networkx') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("command", [
    ["draw", "{dir}/p.rasp", "--name", "x", "-o", "{dir}/./p.rasp"],
    ["compile", "{dir}/p.rasp", "--name", "x", "--vocab", "1,2", "--max-len", "2",
     "-o", "{dir}/p.rasp"],
    ["universal", "build", "--like", "{dir}/p.rasp", "-o", "{dir}/p.rasp"],
    ["universal", "embed", "{dir}/t.npz", "--ut", "{dir}/p.rasp", "-o", "{dir}/p.rasp"],
])
def test_an_output_that_is_an_input_is_refused_before_work(tmp_path, capsys, command):
    source = tmp_path / "p.rasp"
    source.write_text("x = tokens_int + 1;\n")
    argv = [part.format(dir=tmp_path) for part in command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"error: -o {argv[-1]}: is the input file " in err
    assert "writing it would destroy the input; choose another output path" in err
    assert source.read_text() == "x = tokens_int + 1;\n"


@pytest.mark.parametrize("command", [
    ["universal", "build", "--heads", "1", "--layers", "1", "--dim", "4", "--random"],
    ["universal", "target", "--heads", "1", "--layers", "1", "--dim", "4", "--seed"],
])
def test_a_seed_too_large_for_the_weights_header_is_refused_before_writing(tmp_path, capsys,
                                                                          command):
    """2^70 was written into a file that rasp-sim could not read back."""
    with pytest.raises(SystemExit) as info:
        main([*command, str(2**70), "-o", str(tmp_path / "m.npz")])
    assert info.value.code == 2
    assert (f"invalid value '{2**70}': expected a seed, an integer >= 0 of at most "
            "4,294,967,295" in capsys.readouterr().err)
    assert not (tmp_path / "m.npz").exists()
    assert main([*command, str(2**32 - 1), "-o", str(tmp_path / "m.npz")]) == 0
    from rasp_sim.compiler import load_weights

    assert load_weights(tmp_path / "m.npz").layers  # the largest seed reads back
