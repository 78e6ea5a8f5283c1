"""A hash-valid model whose compile record names files outside its folder, a FIFO, a
device or an oversized file: `report` quotes no line of them and says why, runs no
program outside the model's folder, and nothing blocks; `universal verify` refuses the
same programs by the same rule (rasp_sim/compiled/model_files.py). The record is forged the way
anyone can: edited, then saved, which recomputes its SHA-256."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hang_guard import deadline

import rasp_sim
from rasp_sim.cli import main
from rasp_sim.compiler.tracr_backend.runtime import COMPILE_KEY
from rasp_sim.compiled.model import Model
from rasp_sim.base.program_files import MAX_PROGRAM_BYTES

pytest.importorskip("tracr")

PROGRAM = 'shifted = aggregate(select(indices, indices - 1, ==), tokens, "-");\n'
SECRET = "root:x:0:0:SECRET"


@pytest.fixture(autouse=True)
def no_hang():
    with deadline(120, "reading a file the model names"):
        yield


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("compiled")
    (folder / "program.rasp").write_text(PROGRAM)
    assert main(["compile", str(folder / "program.rasp"), "--name", "shifted", "--vocab",
                 "a,b,c", "--max-len", "4", "-o", str(folder / "model.npz")]) == 0
    return folder / "model.npz"


def forge(compiled: Path, folder: Path, program: str, ats: list[str]) -> Path:
    """A copy of the compiled model in `folder` whose record names `program` and has an
    operation at each of `ats` in its first block (its own operations relative to its
    folder: program.rasp:1:1); saved, so its hash is valid."""
    weights = rasp_sim.load_model(compiled).weights
    record = dict(weights.metadata[COMPILE_KEY])
    absolute = str(compiled.with_name("program.rasp"))
    blocks = [[{**entry, "at": (entry["at"] or "").replace(absolute, "program.rasp")}
               for entry in block] for block in record["blocks"]]
    blocks[0] += [{"op": f"Map 'forged_{i}'", "at": at} for i, at in enumerate(ats)]
    record.update(program=program, blocks=blocks)
    folder.mkdir(exist_ok=True)
    path = folder / "model.npz"
    Model(weights.replace(metadata={**weights.metadata, COMPILE_KEY: record})).save(path)
    return path


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A model folder with a FIFO, a device (as root), an oversized file and a link out,
    next to a folder of secrets: a /etc/passwd of its own and a .rasp file."""
    folder, secrets = tmp_path / "model", tmp_path / "secrets"
    folder.mkdir()
    secrets.mkdir()
    (secrets / "passwd").write_text(SECRET + "\n")
    (secrets / "program.rasp").write_text(PROGRAM)
    os.mkfifo(folder / "pipe.rasp")
    if os.geteuid() == 0:  # mknod of a character device needs root (CI runs as root)
        os.mknod(folder / "zero.rasp", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    with open(folder / "big.rasp", "wb") as big:  # sparse: never read
        big.truncate(MAX_PROGRAM_BYTES + 1)
    (folder / "link.rasp").symlink_to(secrets / "passwd")
    return folder, secrets


def _report(model: Path, capsys) -> str:
    page = model.with_name("report.html")
    assert main(["report", str(model), "--input", "abc", "-o", str(page)]) == 0
    capsys.readouterr()
    return page.read_text()


def test_report_quotes_no_line_from_files_the_model_may_not_name(compiled, hostile, capsys):
    folder, secrets = hostile
    ats = {f"{secrets / 'passwd'}:1:1": "outside the model's folder",
           "../secrets/passwd:1:1": "outside the model's folder",
           "link.rasp:1:1": "outside the model's folder",
           "pipe.rasp:1:1": "not a regular file",
           "big.rasp:1:1": "too large"}
    if os.geteuid() == 0:
        ats["zero.rasp:1:1"] = "not a regular file"
    html = _report(forge(compiled, folder, "pipe.rasp", list(ats)), capsys)
    assert "SECRET" not in html
    for at, why in ats.items():
        assert f"{Path(at.split(':')[0]).name}:1:1  [not shown: {why}]" in html, at
    assert '<p id="unshown">Source lines not shown' in html
    assert (f"the compiled program is not run: {folder / 'pipe.rasp'} is not a regular "
            "file") in html


def test_report_runs_no_program_outside_the_models_folder(compiled, hostile, capsys):
    folder, secrets = hostile
    html = _report(forge(compiled, folder, str(secrets / "program.rasp"), []), capsys)
    assert "the compiled program is not run: " in html
    assert f"is outside the model&#x27;s folder {folder}" in html
    assert "agrees with the interpreter" not in html


def test_report_resolves_the_records_names_against_the_models_folder(compiled, tmp_path,
                                                                       capsys, monkeypatch):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "program.rasp").write_text(PROGRAM)
    model = forge(compiled, folder, "program.rasp", ["program.rasp:1:1"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    html = _report(model, capsys)
    assert "the model agrees with the interpreter" in html
    assert PROGRAM.strip() in html  # the diagram's label quotes the line
    assert 'id="unshown"' not in html


@pytest.mark.parametrize("named", ["pipe.rasp", "{secrets}/program.rasp", "link.rasp"])
def test_universal_verify_refuses_the_same_programs(compiled, hostile, capsys, named):
    import json

    folder, secrets = hostile
    model = forge(compiled, folder, named.format(secrets=secrets), [])
    ut = str(folder / "ut.npz")
    assert main(["universal", "build", "--like", str(model), "-o", ut]) == 0
    capsys.readouterr()
    code = main(["universal", "verify", str(model), "--ut", ut, "--json"])
    checked = json.loads(capsys.readouterr().out)
    assert code == 0 and "agree_with_program" not in checked
    assert checked["program"].startswith(f"none: the compile record's program "
                                         f"{named.format(secrets=secrets)!r} is not run: ")
