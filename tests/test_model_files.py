"""The files a model may name (rasp_sim/compiled/model_files.py): .rasp files in its own folder or
the bundled library, regular and bounded; anything else is refused by name with a reason,
before it is opened where the name already says enough."""
from __future__ import annotations

import importlib.resources
import os
import stat
from pathlib import Path

import pytest

from rasp_sim.base.errors import RaspError
from rasp_sim.compiled.model_files import ModelFiles, Refused
from rasp_sim.base.program_files import MAX_PROGRAM_BYTES


@pytest.fixture
def layout(tmp_path: Path) -> tuple[ModelFiles, Path]:
    """A model folder holding its program (and a subfolder), next to a folder of secrets
    the model must not reach."""
    folder = tmp_path / "model"
    (folder / "sub").mkdir(parents=True)
    (folder / "program.rasp").write_text("y = tokens;\nz = indices;\n")
    (folder / "sub" / "part.rasp").write_text("w = tokens;\n")
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "passwd").write_text("root:x:0:0:SECRET\n")
    (secrets / "secret.rasp").write_text("SECRET = 1;\n")
    return ModelFiles.of(folder / "model.npz"), secrets


def _shown(files: ModelFiles, at: str) -> str | None:
    line = files.source_line(at)
    assert line is not None
    return line.text


def _refusal(files: ModelFiles, at: str) -> Refused:
    line = files.source_line(at)
    assert line is not None and line.text is None and line.refused is not None
    return line.refused


def test_lines_of_the_models_own_files_are_shown_relative_to_its_folder(layout, tmp_path,
                                                                          monkeypatch):
    files, _ = layout
    monkeypatch.chdir(tmp_path)  # not the model's folder: names resolve against that
    assert _shown(files, "program.rasp:2:5") == "z = indices;"
    assert _shown(files, "sub/part.rasp:1:1") == "w = tokens;"
    assert _shown(files, f"{files.folder / 'program.rasp'}:1:1") == "y = tokens;"
    assert files.source_line("not a location") is None


def test_the_library_and_the_standard_library_are_shown():
    files = ModelFiles.of("/nonexistent/model.npz")
    library = Path(str(importlib.resources.files("rasp_sim.programs")))
    first = (library / "classic.rasp").read_text().splitlines()[0].strip()
    assert _shown(files, f"{library / 'classic.rasp'}:1:1") == first
    stdlib = importlib.resources.files("rasp_sim.language").joinpath("stdlib.rasp").read_text()
    assert _shown(files, "<stdlib>:1:1") == stdlib.splitlines()[0].strip()


@pytest.mark.parametrize("name", ["{secrets}/passwd", "{secrets}/secret.rasp",
                                  "../secrets/secret.rasp", "sub/../../secrets/secret.rasp"])
def test_a_file_outside_the_models_folder_is_refused_by_name(layout, name):
    files, secrets = layout
    refusal = _refusal(files, name.format(secrets=secrets) + ":1:1")
    assert refusal.short == "outside the model's folder"
    assert str(refusal).endswith(f"is outside the model's folder {files.folder} and the "
                                 "bundled library")


def test_a_link_inside_to_a_file_outside_is_refused(layout):
    files, secrets = layout
    (files.folder / "link.rasp").symlink_to(secrets / "secret.rasp")
    assert _refusal(files, "link.rasp:1:1").short == "outside the model's folder"


def test_a_fifo_is_refused_without_blocking(layout):
    files, _ = layout
    os.mkfifo(files.folder / "pipe.rasp")
    (files.folder / "linked.rasp").symlink_to(files.folder / "pipe.rasp")
    for name in ("pipe.rasp", "linked.rasp", "sub"):
        refusal = _refusal(files, f"{name}:1:1")
        assert refusal.short in ("not a regular file", "not a .rasp file"), name
    assert str(_refusal(files, "pipe.rasp:1:1")) == (
        f"{files.folder / 'pipe.rasp'} is not a regular file (a FIFO, socket, device or "
        "folder)")


def test_a_device_is_refused(layout):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root (CI runs as root)")
    files, _ = layout
    os.mknod(files.folder / "zero.rasp", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    assert _refusal(files, "zero.rasp:1:1").short == "not a regular file"


def test_a_file_above_the_program_bound_is_refused_unread(layout):
    files, _ = layout
    with open(files.folder / "big.rasp", "wb") as big:  # sparse: never read
        big.truncate(MAX_PROGRAM_BYTES + 1)
    refusal = _refusal(files, "big.rasp:1:1")
    assert refusal.short == "too large" and f"{MAX_PROGRAM_BYTES:,} bytes" in str(refusal)


def test_other_refusals_say_why(layout):
    files, _ = layout
    (files.folder / "notes.txt").write_text("text\n")
    (files.folder / "latin.rasp").write_bytes(b"caf\xe9 = 1;\n")
    assert _refusal(files, "missing.rasp:1:1").short == "no such file"
    assert _refusal(files, "notes.txt:1:1").short == "not a .rasp file"
    assert _refusal(files, "latin.rasp:1:1").short == "not UTF-8"
    assert _refusal(files, "program.rasp:9:1").short == "no line 9"
    assert sorted(files.refused()) == ["latin.rasp", "missing.rasp", "notes.txt"]


def test_a_program_runs_from_the_models_folder_only(layout):
    files, secrets = layout
    assert files.run_program("program.rasp").run([["a", "b"]], "y") == [["a", "b"]]
    with pytest.raises(Refused, match="outside the model's folder"):
        files.run_program(str(secrets / "secret.rasp"))


def test_a_programs_loads_stay_in_the_models_folder(layout):
    """`load` in a program the model names is confined as --sandbox confines it: the
    current folder is not searched, a path out of the folder is refused."""
    files, secrets = layout
    (files.folder / "loads.rasp").write_text('load "../secrets/secret";\ny = tokens;\n')
    with pytest.raises(RaspError, match="--sandbox refuses"):
        files.run_program("loads.rasp")


def test_a_line_number_of_5000_digits_is_no_location(layout):
    files, _ = layout
    assert files.source_line("program.rasp:" + "9" * 5000 + ":1") is None
