"""The REPL's `draw(x);` writes a picture per draw into a folder, as the original writes
`comp_flows/<name>(<input>)`, and prints where."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rasp_sim.core import graph
from rasp_sim.cli.repl import session
from rasp_sim.cli.repl_draw import picture_name, picture_writer
from rasp_sim.language.repl_session import ReplSession


def _run(lines: list[str], folder: Path, form: str = "svg") -> str:
    repl = ReplSession()
    out = io.StringIO()
    repl.interpreter.draw_hook = picture_writer(folder, form, False, out)
    feed = iter(lines)
    session(repl, lambda prompt: next(feed, None), out)
    return out.getvalue()


def test_each_draw_writes_a_picture_and_says_where(tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    text = _run(["flip = select(indices, length - indices - 1, ==);",
                 "rev = aggregate(flip, tokens);", "draw(rev);", 'draw(rev, "abc");'], folder)
    first, second = folder / 'rev("hello").svg', folder / 'rev("abc").svg'
    assert f"drew {first}\n" in text and f"drew {second}\n" in text
    svg = ET.parse(second)
    texts = "".join("".join(e.itertext()) for e in svg.iter("{http://www.w3.org/2000/svg}text"))
    assert "['c', 'b', 'a']" in texts and "length" in texts  # the value, the library box
    assert sorted(p.name for p in folder.iterdir()) == sorted([first.name, second.name])


@pytest.mark.parametrize("form,magic", [("png", b"\x89PNG"), ("pdf", b"%PDF")])
def test_draw_writes_the_chosen_format(tmp_path: Path, form: str, magic: bytes) -> None:
    _run(["x = tokens == \"l\";", "draw(x);"], tmp_path, form)
    (picture,) = tmp_path.iterdir()
    assert picture.name == f'x("hello").{form}' and picture.read_bytes().startswith(magic)


def test_a_folder_that_cannot_be_made_is_a_reported_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    text = _run(["x = tokens == \"l\";", "draw(x);"], blocker / "sub")
    assert "cannot draw into" in text and "Traceback" not in text


def test_picture_names_are_safe_file_names() -> None:
    node = graph.Map("not", (graph.Tokens("bool"),), name="a/b")
    assert picture_name(node, "x:y") == 'a_b("x_y")'
    assert picture_name(node, [1, 2]) == "a_b([1, 2])"
    assert len(picture_name(node, "z" * 500)) == 80
