"""The user documentation stays true: links resolve, no internal notes are cited, and the
commands and programs shown in docs/language.md and docs/constructions.md are the ones
that run (docs/universal.md shows timings, which vary, so its outputs are not compared).

In the checked pages:
- a ```console block: every `$ rasp-sim run|analyse ...` line is run in-process, from the
  repository root, and must print exactly the lines that follow it (stdout, then stderr);
  it must exit 1 if those lines show an error (`file:line:col: ... error: ...`), else 0;
- a ```rasp block whose first line is `# file: PATH`: the rest of the block must be the
  text of PATH.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rasp_sim.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
CHECKED = [ROOT / "docs" / "language.md", ROOT / "docs" / "constructions.md"]

# [text](target) outside code: the target up to the first space or ')'.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
ERROR_LINE = re.compile(r"^\S+:\d+:\d+: [a-z ]*error: ", re.MULTILINE)
CHECKED_COMMANDS = ("run", "analyse")


def without_code(text: str) -> str:
    return FENCE.sub("", text)


def relative_links(page: Path) -> list[str]:
    links = LINK.findall(without_code(page.read_text()))
    return [link for link in links if not re.match(r"[a-z]+:", link) and not link.startswith("#")]


def test_the_docs_exist() -> None:
    names = {page.name for page in DOCS}
    assert {"language.md", "constructions.md", "universal.md", "compiler.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_point_at_files(page: Path) -> None:
    missing = [link for link in relative_links(page)
               if not (page.parent / link.split("#", 1)[0]).exists()]
    assert not missing, f"{page.name} links to missing files: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_internal_notes_are_cited(page: Path) -> None:
    text = page.read_text()
    for phrase in ("shared/", "design notes"):
        assert phrase not in text.lower(), f"{page.name} mentions {phrase!r}"


def blocks(language: str) -> list[str]:
    return [body for page in CHECKED for lang, body in FENCE.findall(page.read_text())
            if lang == language]


def console_commands() -> list[tuple[str, str]]:
    """(command, expected output) for every `$ rasp-sim` line of the console blocks."""
    found = []
    for body in blocks("console"):
        for chunk in re.split(r"^\$ ", body, flags=re.MULTILINE)[1:]:
            command, _, output = chunk.partition("\n")
            found.append((command, output.rstrip("\n")))
    return found


def test_docs_have_checked_commands() -> None:
    commands = [command for command, _ in console_commands()]
    assert len(commands) >= 20
    for command in commands:
        assert shlex.split(command)[:2] in (["rasp-sim", c] for c in CHECKED_COMMANDS), command


@pytest.mark.parametrize("command, expected", console_commands(), ids=lambda v: v[:60])
def test_doc_commands_print_what_is_shown(command: str, expected: str, capsys,
                                                   monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    code = main(shlex.split(command)[1:])
    captured = capsys.readouterr()
    printed = (captured.out + captured.err).rstrip("\n")
    lines = [line.rstrip() for line in printed.splitlines()]
    assert lines == [line.rstrip() for line in expected.splitlines()]
    assert code == (1 if ERROR_LINE.search(expected) else 0)


def rasp_files() -> list[tuple[str, str]]:
    found = []
    for body in blocks("rasp"):
        first, _, rest = body.partition("\n")
        if first.startswith("# file: "):
            found.append((first.removeprefix("# file: ").strip(), rest))
    return found


def test_docs_show_their_example_files() -> None:
    assert len(rasp_files()) >= 3


@pytest.mark.parametrize("path, shown", rasp_files(), ids=lambda v: str(v)[:40])
def test_doc_programs_are_the_files(path: str, shown: str) -> None:
    assert (ROOT / path).read_text() == shown
