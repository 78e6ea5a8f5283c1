"""Shared helpers of the tracr backend tests: programs from source text, compile + validate."""
from __future__ import annotations

from pathlib import Path

import pytest

# The classic library (programs/classic.rasp) through the user-facing compile wrappers;
# tests/compiler_tracr/programs holds only test-specific programs.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "compile"
PROGRAMS = Path(__file__).parent / "programs"


def node_of(source: str, name: str, file: str = "<test>"):
    """Run RASP `source` and return the node bound to `name`."""
    from rasp_sim.language.interpreter import Interpreter

    interpreter = Interpreter()
    interpreter.run_source(source, file)
    return interpreter.lookup(name)


def file_node(folder: Path, file: str, name: str):
    return node_of((folder / file).read_text(), name, str(folder / file))


@pytest.fixture(scope="session")
def driver():
    pytest.importorskip("tracr")
    from rasp_sim.compiler.tracr_backend import driver as module

    return module


@pytest.fixture(scope="session")
def program():
    """program(source, name) -> the node `name` after running `source`."""
    return node_of


@pytest.fixture(scope="session")
def library():
    """library(file, name) -> the node `name` of examples/compile/<file> (classic library)."""
    return lambda file, name: file_node(EXAMPLES, file, name)


@pytest.fixture(scope="session")
def local():
    """local(file, name) -> the node `name` of tests/compiler_tracr/programs/<file>."""
    return lambda file, name: file_node(PROGRAMS, file, name)
