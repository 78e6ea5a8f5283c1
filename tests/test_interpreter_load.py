"""`load` (LANGUAGE.md 6.13): scopes, privacy, exports, search path, printing."""
from __future__ import annotations

from pathlib import Path

import pytest

from rasp_sim import interpreter as interpreter_module
from rasp_sim.errors import RaspLoadError, RaspNameError

from .interp_helpers import run


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.rasp"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_public_names_are_exported_private_ones_stay(in_tmp: Path) -> None:
    write(in_tmp, "lib", "_secret = 1;\npub = _secret + 1;\ndef reveal() { return _secret; }\n")
    interpreter = run('load "lib"; a = pub; b = reveal();')
    assert interpreter.lookup("a") == 2 and interpreter.lookup("b") == 1
    with pytest.raises(RaspNameError, match="Undefined variable: _secret"):
        interpreter.lookup("_secret")


def test_loaded_file_does_not_see_the_caller(in_tmp: Path) -> None:
    write(in_tmp, "peek", "\ny = mine;\n")
    with pytest.raises(RaspNameError, match="Undefined variable: mine") as info:
        run('mine = 1; load "peek";')
    assert info.value.span.file.endswith("peek.rasp") and info.value.span.line == 2


def test_loaded_file_sees_the_library_and_tokens(in_tmp: Path) -> None:
    write(in_tmp, "uses", "n = length; t = tokens;")
    interpreter = run('load "uses";')
    assert interpreter.lookup("n") is interpreter.lookup("length")
    assert interpreter.lookup("t") is interpreter.lookup("tokens_str")


def test_exporting_a_library_name_fails_but_stays_local(in_tmp: Path) -> None:
    write(in_tmp, "shadow", "length = 3;\ny = length + 1;\n")
    with pytest.raises(RaspNameError, match="Cannot set reserved name: length"):
        run('load "shadow";')
    # In the REPL the load goes on after the error; the file's own binding is in force.
    interpreter = run('load "shadow";', repl=True)
    assert interpreter.lookup("y") == 4
    assert interpreter.lookup("length") is not None and interpreter.lookup("length") != 3
    assert any("Cannot set reserved name: length" in line for line in interpreter.lines)


def test_missing_file(in_tmp: Path) -> None:
    with pytest.raises(RaspLoadError, match="could not find file: nope.rasp") as info:
        run('x = 1;\nload "nope";')
    assert (info.value.span.line, info.value.span.column) == (2, 1)


def test_nested_loads_export_transitively(in_tmp: Path) -> None:
    write(in_tmp, "inner", "deep = 7;")
    write(in_tmp, "outer", 'load "inner";\nshallow = deep + 1;')
    interpreter = run('load "outer";')
    assert interpreter.lookup("deep") == 7 and interpreter.lookup("shallow") == 8


def test_load_relative_to_the_loading_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "pkg", "helper", "h = 5;")
    main = write(tmp_path / "pkg", "main", 'load "helper";\nx = h;')
    monkeypatch.chdir(tmp_path)  # the cwd does not hold helper.rasp
    interpreter = interpreter_module.Interpreter(output=lambda line: None)
    interpreter.run_file(main)
    assert interpreter.lookup("x") == 5


def test_load_from_the_library_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "lib" / "linalg", "ops", "two = 2;")
    monkeypatch.setattr(interpreter_module, "_library_folder", lambda: tmp_path / "lib")
    monkeypatch.chdir(tmp_path)
    assert run('load "linalg/ops"; x = two;').lookup("x") == 2


def test_cwd_wins_over_the_library_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "lib", "which", 'w = "library";')
    write(tmp_path, "which", 'w = "cwd";')
    monkeypatch.setattr(interpreter_module, "_library_folder", lambda: tmp_path / "lib")
    monkeypatch.chdir(tmp_path)
    assert run('load "which"; x = w;').lookup("x") == "cwd"


def test_set_example_persists_examples_toggle_does_not(in_tmp: Path) -> None:
    write(in_tmp, "settings", "set example [1, 2]\nexamples off\n")
    interpreter = run('load "settings";', repl=True)
    assert interpreter.sop_example == [1, 2]
    assert interpreter.settings.sop_examples and interpreter.settings.selector_examples


def test_repl_load_prints_the_last_binding_of_each_exported_name(in_tmp: Path) -> None:
    write(in_tmp, "twice", "a = 1;\n_p = 2;\na = 3;\nb = 4;\n")
    interpreter = run('load "twice";', repl=True)
    assert interpreter.lines == ["    value: a =  3", "    value: b =  4"]


def test_repl_load_with_an_error_prints_every_binding(in_tmp: Path) -> None:
    write(in_tmp, "broken", "a = 1;\nb = nope;\na = 3;\n")
    lines = run('load "broken";', repl=True).lines
    assert lines[0] == "    value: a =  1" and lines[-1] == "    value: a =  3"
    assert any("Undefined variable: nope" in line for line in lines)


def test_run_mode_loads_silently(in_tmp: Path) -> None:
    write(in_tmp, "quiet", "a = 1; a;")
    assert run('load "quiet";').lines == []
