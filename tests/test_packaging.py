"""The installed package holds every source folder (pyproject lists them by hand)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Source folders: each installs under its own name (see pyproject.toml).
FOLDERS = {name: name for name in ("rasp_sim", "compiler", "programs", "experiments")}


def source_packages() -> list[str]:
    names = []
    for folder, package in FOLDERS.items():
        for directory in sorted((ROOT / folder).rglob("*")):
            if not directory.is_dir() or directory.name == "__pycache__":
                continue
            if not any(directory.glob("*.py")) and not any(directory.glob("*.rasp")):
                continue
            relative = directory.relative_to(ROOT / folder).parts
            names.append(".".join((package, *relative)))
    return names


@pytest.mark.parametrize("package", source_packages())
def test_every_source_folder_is_installed(package):
    assert importlib.util.find_spec(package) is not None, (
        f"{package} is not installed: add it to `packages` in pyproject.toml")


def test_grammar_and_libraries_are_installed():
    import importlib.resources

    assert importlib.resources.files("rasp_sim").joinpath("grammar.lark").is_file()
    assert importlib.resources.files("rasp_sim").joinpath("stdlib.rasp").is_file()
    for name in ("classic.rasp", "linalg.rasp", "attention.rasp", "numerics.rasp"):
        assert importlib.resources.files("programs").joinpath(name).is_file()
    assert importlib.resources.files("programs").joinpath(
        "strict", "numerics.rasp").is_file()
