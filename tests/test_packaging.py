"""The installed package holds every source folder (pyproject lists them by hand), under
the one import name rasp_sim."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Source folders and the package each installs as (see pyproject.toml): compiler/ and
# programs/ are linked into rasp_sim/, so rasp_sim's walk skips them.
FOLDERS = {"rasp_sim": "rasp_sim", "compiler": "rasp_sim.compiler",
           "programs": "rasp_sim.programs"}
LINKED = {"compiler", "programs"}


def source_packages() -> list[str]:
    names = []
    for folder, package in FOLDERS.items():
        for directory in sorted((ROOT / folder).rglob("*")):
            if not directory.is_dir() or directory.name == "__pycache__":
                continue
            if not any(directory.glob("*.py")) and not any(directory.glob("*.rasp")):
                continue
            relative = directory.relative_to(ROOT / folder).parts
            if folder == "rasp_sim" and relative[0] in LINKED:
                continue
            names.append(".".join((package, *relative)))
    return names


@pytest.mark.parametrize("package", source_packages())
def test_every_source_folder_is_installed(package):
    assert importlib.util.find_spec(package) is not None, (
        f"{package} is not installed: add it to `packages` in pyproject.toml")


def test_grammar_and_libraries_are_installed():
    import importlib.resources

    assert importlib.resources.files("rasp_sim.language").joinpath("grammar.lark").is_file()
    assert importlib.resources.files("rasp_sim.language").joinpath("stdlib.rasp").is_file()
    for name in ("classic.rasp", "linalg.rasp", "attention.rasp", "numerics.rasp"):
        assert importlib.resources.files("rasp_sim.programs").joinpath(name).is_file()
    assert importlib.resources.files("rasp_sim.programs").joinpath(
        "strict", "numerics.rasp").is_file()


def test_one_top_level_import_name(tmp_path):
    """A wheel of the project installs exactly one top-level package, rasp_sim: nothing
    named `compiler`, `programs` or `experiments` lands in the user's environment."""
    import subprocess
    import sys
    import zipfile

    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("rasp_sim-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"rasp_sim"}
    for member in ("rasp_sim/compiler/weights.py", "rasp_sim/programs/classic.rasp",
                   "rasp_sim/programs/strict/numerics.rasp", "rasp_sim/experiments/train.py",
                   "rasp_sim/language/grammar.lark"):
        assert member in names
