"""`load` (docs/language.md): scopes, privacy, exports, search path, printing."""
from __future__ import annotations

from pathlib import Path

import pytest

from rasp_sim.language import interpreter as interpreter_module
from rasp_sim.language.repl_session import ReplSession
from rasp_sim.base.errors import RaspError, RaspLoadError, RaspNameError

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
    interpreter = interpreter_module.Interpreter()
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


def test_repl_load_prints_bindings_and_public_names_but_no_other_expression(in_tmp: Path) -> None:
    """The original prints what reaches the loader: bindings and bare public names
    (`tokens;` shows, `3+4;`, `_p;` and `out;` do not), and `show example`; an
    application or a draw in a loaded file prints nothing (it still draws)."""
    write(in_tmp, "exprs", 'x = indices;\ntokens;\n3+4;\n_p = 1;\n_p;\nout;\nx("ab");\n'
          'draw(x, "ab");\nshow example\n')
    drawn = []
    interpreter = ReplSession(output=(lines := []).append).interpreter
    interpreter.draw_hook = lambda node, example: drawn.append(example)
    interpreter.run_source('load "exprs";', "<repl>")
    assert lines == ["     s-op: x", "     s-op: tokens",
                     '\ts-op example: "hello"', '\tselector example: "hello"']
    assert drawn == ["ab"]


def test_a_nested_load_prints_its_loaders_results_first(in_tmp: Path) -> None:
    """One list of pending results serves all loads in progress (as the original): the
    inner load prints the outer file's results so far, then its own, filtered together
    (the outer `b = 0` gives way to the inner `b = 3`); the outer file's later results
    follow when it ends."""
    write(in_tmp, "inner", "a = 1;\nb = 2;\nb = 3;\n")
    write(in_tmp, "outer", 'b = 0;\nfirst = 1;\nload "inner";\nlast = 5;\n')
    assert run('load "outer";', repl=True).lines == [
        "    value: first =  1", "    value: a =  1", "    value: b =  3", "    value: last =  5"]


def test_an_error_in_a_nested_load_keeps_the_order(in_tmp: Path) -> None:
    write(in_tmp, "inner", "b = 2;\nq = nope;\nc = 4;\n")
    write(in_tmp, "outer", 'a = 1;\nload "inner";\nd = 5;\n')
    lines = run('load "outer";', repl=True).lines
    assert lines[:3] == ["    value: a =  1", "    value: b =  2", "\t\t!!ignoring input:"]
    assert "Undefined variable: nope" in lines[3]
    assert lines[-2:] == ["    value: c =  4", "    value: d =  5"]


def test_run_mode_loads_silently(in_tmp: Path) -> None:
    write(in_tmp, "quiet", "a = 1; a;")
    assert run('load "quiet";').lines == []


# ---------------------------------------------------------------------------- cycles


def test_a_file_that_loads_itself_is_a_load_cycle(in_tmp: Path) -> None:
    write(in_tmp, "self", 'x = 1;\nload "self";\n')
    interpreter = interpreter_module.Interpreter()
    with pytest.raises(RaspLoadError) as info:
        interpreter.run_file("self.rasp")
    assert info.value.format().splitlines() == [
        "self.rasp:2:1: load error: load cycle: self.rasp -> self.rasp",
        '    load "self";', "    ^^^^^^^^^^^^"]


def test_a_cycle_through_two_files_is_located_at_the_load_that_closes_it(in_tmp: Path) -> None:
    write(in_tmp, "a", 'load "b";\n')
    write(in_tmp, "b", 'x = 1;\nload "a";\n')
    with pytest.raises(RaspLoadError) as info:
        run('load "a";')
    assert info.value.message == "load cycle: a.rasp -> b.rasp -> a.rasp"
    assert (info.value.span.file, info.value.span.line) == ("b.rasp", 2)
    # The REPL reports it and the session goes on.
    lines = run('load "a";', repl=True).lines
    assert any("load cycle: a.rasp -> b.rasp -> a.rasp" in line for line in lines)


def test_a_symlink_to_a_loading_file_is_the_same_file(in_tmp: Path) -> None:
    write(in_tmp, "a", 'load "alias";\n')
    (in_tmp / "alias.rasp").symlink_to(in_tmp / "a.rasp")
    with pytest.raises(RaspLoadError) as info:
        run('load "a";')
    assert info.value.message == "load cycle: a.rasp -> alias.rasp"


def test_a_diamond_reruns_the_shared_file_as_the_original(in_tmp: Path) -> None:
    """top loads left and right, which both load base: not a cycle. The original runs
    base twice (every load runs its file); the REPL shows its binding each time."""
    write(in_tmp, "base", "shared = 7;\n")
    write(in_tmp, "left", 'load "base";\nl = shared;\n')
    write(in_tmp, "right", 'load "base";\nr = shared + 1;\n')
    interpreter = run('load "left";\nload "right";', repl=True)
    assert (interpreter.lookup("l"), interpreter.lookup("r")) == (7, 8)
    assert interpreter.lines.count("    value: shared =  7") == 2


# ---------------------------------------------------------------------------- --sandbox

SECRET = "root:x:0:0:the secret line"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A program folder `prog` (with a subfolder) next to files outside it; the current
    folder is elsewhere."""
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    write(tmp_path, "outside", "o = 1;\n")
    write(tmp_path / "prog", "helper", "h = 2;\n")
    write(tmp_path / "prog" / "sub", "inner", 'load "../helper";\ni = h + 1;\n')
    return tmp_path / "prog"


def sandboxed(project: Path, text: str) -> interpreter_module.Interpreter:
    """Run `text` as the program `project/main.rasp` under --sandbox."""
    main = write(project, "main", text)
    interpreter = interpreter_module.Interpreter(sandbox=project)
    interpreter.run_file(main)
    return interpreter


def test_sandbox_allows_the_program_folder_its_subfolders_and_the_library(project: Path) -> None:
    interpreter = sandboxed(project, 'load "helper";\nload "sub/inner";\nload "classic";\n'
                            "x = i;\n")
    assert interpreter.lookup("x") == 3
    assert interpreter.lookup("reverse") is not None  # from the bundled classic.rasp


@pytest.mark.parametrize("name", ["../outside", "sub/../../outside", "ABSOLUTE"])
def test_sandbox_refuses_paths_that_escape(project: Path, name: str) -> None:
    if name == "ABSOLUTE":
        name = str(project.parent / "outside")
    with pytest.raises(RaspLoadError) as info:
        sandboxed(project, f'x = 1;\nload "{name}";\n')
    message = info.value.format().splitlines()[0]
    assert message.startswith(f"{project / 'main.rasp'}:2:1: load error: --sandbox refuses "
                              f"to load {name!r}: ")
    assert f"is outside {project.resolve()} or " in message
    assert f"(resolves to {(project.parent / 'outside.rasp').resolve()})" in message
    # Without the sandbox the same program loads the file.
    interpreter = interpreter_module.Interpreter()
    interpreter.run_file(project / "main.rasp")
    assert interpreter.lookup("o") == 1


def test_sandbox_refuses_a_symlink_out_and_never_shows_the_file(project: Path) -> None:
    (project / "pw.rasp").symlink_to(project.parent / "secret.txt")
    # Without the sandbox, the syntax error quotes the other file's line: the leak.
    with pytest.raises(RaspError) as info:
        interpreter_module.Interpreter().run_file(
            write(project, "main", 'load "pw";\n'))
    assert SECRET in info.value.format()
    with pytest.raises(RaspLoadError) as info:
        sandboxed(project, 'load "pw";\n')
    assert "--sandbox refuses to load 'pw': " in info.value.message
    assert "is outside" in info.value.message and SECRET not in info.value.format()


def test_sandbox_refuses_a_symlink_inside_to_a_file_that_is_not_rasp(project: Path) -> None:
    (project / "data.txt").write_text(SECRET + "\n")
    (project / "data.rasp").symlink_to(project / "data.txt")
    with pytest.raises(RaspLoadError) as info:
        sandboxed(project, 'load "data";\n')
    assert info.value.message == (
        f"--sandbox refuses to load 'data': {project / 'data.rasp'} resolves to "
        f"{(project / 'data.txt').resolve()}, which is not a .rasp file")
    assert SECRET not in info.value.format()


def test_sandbox_does_not_search_the_current_folder(project: Path) -> None:
    write(Path.cwd(), "cwd_only", "c = 1;\n")
    assert run('load "cwd_only"; x = c;').lookup("x") == 1  # the original's search
    with pytest.raises(RaspLoadError, match="could not find file: cwd_only.rasp"):
        sandboxed(project, 'load "cwd_only";\n')
