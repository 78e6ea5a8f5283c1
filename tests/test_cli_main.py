"""The `rasp-sim` entry point: the last-resort error handler, size options, and the
subcommand table that lets `rasp-sim run` import only its own module."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import rasp_sim.cli.run as run_module
from cli_helpers import write
from rasp_sim.cli import COMMANDS, build_parser, main
from rasp_sim.cli.options import MAX_SIZE, parse_size



# ------------------------------------------------------------ last-resort handler


@pytest.mark.parametrize("exception, message", [
    (ValueError("boom"), "rasp-sim: internal error: ValueError: boom (please report)"),
    (MemoryError(), "rasp-sim: resource limit: out of memory; lower --memory-limit (batches "
                    "are split to fit it) or give smaller inputs"),
    (RecursionError("deep"), "rasp-sim: resource limit: maximum recursion depth exceeded (a "
                             "value or program nested too deeply)"),
])
def test_unexpected_exceptions_become_one_line(capsys, monkeypatch, exception, message):
    def handler(args: argparse.Namespace) -> int:
        raise exception

    monkeypatch.setattr(run_module, "run", handler)  # what `register` installs
    assert main(["run", "x.rasp", "--input", "a"]) == 1
    assert capsys.readouterr().err == message + "\n"
    assert main(["--debug", "run", "x.rasp", "--input", "a"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and err.endswith(message + "\n")


# ------------------------------------------------------------------------- sizes


@pytest.mark.parametrize("wrap", [False, True])
def test_ctrl_c_exits_130_even_when_a_library_rewraps_it(capsys, monkeypatch, wrap):
    """Ctrl-C is `interrupted`, exit 130, also when a library caught the KeyboardInterrupt
    and raised its own error while handling it (lark does, while building its parser)."""
    def handler(args: argparse.Namespace) -> int:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            if wrap:
                raise AttributeError("half-built parser") from None
            raise

    monkeypatch.setattr(run_module, "run", handler)
    assert main(["run", "x.rasp", "--input", "a"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_ctrl_c_exits_130_when_a_library_replaces_it_by_an_unrelated_error(capsys, monkeypatch):
    """A real SIGINT whose KeyboardInterrupt a library turns into an error that no longer
    mentions it (NumPy's C extension, stopped while it imports `datetime`, raises
    ImportError "could not import module" with no context): still `interrupted`, 130."""
    def handler(args: argparse.Namespace) -> int:
        stopped = False
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            stopped = True
        if stopped:  # raised outside the except block: no __context__ leads back
            raise ImportError('PyCapsule_Import could not import module "datetime"')
        return 0

    monkeypatch.setattr(run_module, "run", handler)
    assert main(["run", "x.rasp", "--input", "a"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize("text, expected", [
    ("4GiB", 4 * 2**30), ("512MiB", 512 * 2**20), ("100000", 100_000), ("1.5kib", 1536),
    ("2e3", 2000), ("1GB", 10**9), (str(MAX_SIZE), MAX_SIZE),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text, message", [
    ("1e400", "size '1e400' is larger than any machine's memory (at most 2**63 - 1 bytes)"),
    ("1e999999999", "size '1e999999999' is larger than any machine's memory"),
    (str(MAX_SIZE + 1), f"size '{MAX_SIZE + 1}' is larger than any machine's memory"),
    ("16EiB", "invalid size '16EiB'"),
    ("nan", "invalid size 'nan': use a positive number of bytes or e.g. 512MiB, 4GiB"),
    ("inf", "invalid size 'inf'"), ("-1", "invalid size '-1'"), ("0", "invalid size '0'"),
    ("0.5", "invalid size '0.5'"), ("-1e999999999", "invalid size '-1e999999999'"),
    ("lots", "invalid size 'lots'"),
])
def test_bad_sizes_are_usage_errors(capsys, text, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "x.rasp", "--input", "a", f"--memory-limit={text}"])
    assert exit_info.value.code == 2
    assert f"argument --memory-limit: {message}" in capsys.readouterr().err


# ------------------------------------------------------------- the command table


def _listed_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest.split(" ")[0]: choice.help for choice in subparsers._choices_actions}


def test_the_command_table_says_what_the_modules_register():
    stubs = _listed_help(build_parser())
    assert list(stubs) == [c.name for c in COMMANDS]
    for command in COMMANDS:
        parser = build_parser(command.name)
        assert _listed_help(parser) == stubs, command.name  # the real parser's help too
        (subparsers,) = [a for a in parser._actions
                         if isinstance(a, argparse._SubParsersAction)]
        real = subparsers.choices[command.name]
        assert len(real._actions) > 1, command.name  # not the stub (it has only -h)
        for alias in command.aliases:
            assert subparsers.choices[alias] is real


def test_run_imports_only_its_own_subcommand(tmp_path):
    program = write(tmp_path, "y = indices;\n")
    others = sorted({c.module for c in COMMANDS} - {"rasp_sim.cli.run"})
    code = ("import sys; from rasp_sim.cli import main; "
            f"main(['run', {program!r}, '--input', 'ab']); "
            f"print([m for m in {others + ['networkx', 'tqdm']!r} if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=tmp_path)
    assert result.stdout.splitlines() == ['y("ab") = [0, 1] (ints)', "[]"]


@pytest.mark.parametrize("argv, user_setting, threads", [
    (["run", "x.rasp"], None, "1"),  # small products: one thread
    (["analyse", "x.rasp"], None, "1"),
    (["universal", "verify"], None, None),  # big matrices: OpenBLAS decides
    (["compile", "x.rasp"], None, None),
    (["run", "x.rasp"], "3", "3"),  # the user's setting wins
])
def test_blas_threads_are_limited_only_where_they_do_not_help(argv, user_setting, threads):
    # In a fresh interpreter: the limit must be set before NumPy loads, as at a real start.
    code = ("import os, sys; from rasp_sim.cli import chosen_command, "
            "one_blas_thread_unless_needed as limit; "
            f"limit(chosen_command({argv!r})); print(os.environ.get('OPENBLAS_NUM_THREADS'))")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_setting:
        env["OPENBLAS_NUM_THREADS"] = user_setting
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env=env)
    assert result.stdout.strip() == str(threads)


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert command.name in out



def test_numpy_floating_point_warnings_do_not_reach_the_user(capsys, monkeypatch):
    """Whatever a command computes, NumPy's RuntimeWarnings (overflow, invalid values) are
    not printed: non-finite forwards are errors naming their block, and RASP's floats
    follow Python (inf and nan are values)."""
    import numpy as np

    def overflowing(args):
        with np.errstate(all="warn"):
            print(np.float64(1e308) * 10)
        return 0

    import warnings

    monkeypatch.setattr(run_module, "run", overflowing)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")  # what Python would show the user
        assert main(["run", "p.rasp", "--input", "a"]) == 0
    assert capsys.readouterr().out.strip() == "inf"
    assert not [w for w in shown if issubclass(w.category, RuntimeWarning)]
