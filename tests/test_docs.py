"""The user documentation stays true: links resolve, no internal notes are cited, and the
commands and programs shown in the README, docs/cli.md, docs/language.md and
docs/constructions.md are the ones that run (docs/universal.md shows timings, which vary,
so its outputs are not compared). The README stays a front door (short, linking only to
docs pages), every docs page is in the site's navigation (mkdocs.yml), and the API
reference (docs/api.md) documents every public name. The site's strict build itself runs
in CI (.ci/run), not here: it needs the `docs` extra.

In the checked pages:
- a ```console block: every `$ rasp-sim run|analyse ...` line is run in-process, from the
  repository root, and must print exactly the lines that follow it (stdout, then stderr);
  it must exit 1 if those lines show an error (`file:line:col: ... error: ...`), else 0;
- a ```rasp block whose first line is `# file: PATH`: the rest of the block must be the
  text of PATH.
"""
from __future__ import annotations

import importlib
import re
import shlex
from pathlib import Path

import pytest

import rasp_sim
from rasp_sim.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
CHECKED = [ROOT / "README.md", *(ROOT / "docs" / name for name in (
    "cli.md", "language.md", "constructions.md"))]
# The README is the front door; the reference lives in docs/ (lark's and tracr's READMEs
# are under 300 lines too).
MAX_README_LINES = 300

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
    assert {"language.md", "constructions.md", "universal.md", "compiler.md", "cli.md",
            "api.md", "architecture.md", "benchmarks.md", "experiments.md"} <= names


def test_the_readme_is_a_front_door() -> None:
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) < MAX_README_LINES
    outside = [link for link in relative_links(readme)
               if not re.fullmatch(r"docs/[\w.-]+\.md(#[\w-]+)?", link)]
    assert not outside, f"the README links to more than docs pages: {outside}"
    linked = {link.split("#", 1)[0] for link in relative_links(readme)}
    unlinked = [page.name for page in DOCS if f"docs/{page.name}" not in linked]
    assert not unlinked, f"the README's Documentation section misses {unlinked}"


def nav_pages() -> set[str]:
    """The pages mkdocs.yml's navigation lists (`Title: page.md` lines)."""
    text = (ROOT / "mkdocs.yml").read_text()
    nav = text.split("\nnav:\n", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r":\s+(\S+\.md)\s*$", nav, re.MULTILINE))


def test_every_docs_page_is_in_the_site_navigation() -> None:
    pages = nav_pages()
    orphans = [page.name for page in DOCS if page.name not in pages]
    assert not orphans, f"mkdocs.yml's nav misses {orphans}"
    missing = [page for page in pages if not (ROOT / "docs" / page).is_file()]
    assert not missing, f"mkdocs.yml's nav names missing pages: {missing}"


def api_identifiers() -> list[str]:
    """The objects docs/api.md documents (mkdocstrings' `::: dotted.path` lines)."""
    return re.findall(r"^::: ([\w.]+)$", (ROOT / "docs" / "api.md").read_text(), re.MULTILINE)


def resolve(dotted: str) -> object:
    """The object a dotted path names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(dotted)


def test_the_api_reference_documents_every_public_name() -> None:
    documented = [resolve(identifier) for identifier in api_identifiers()]
    undocumented = [name for name in rasp_sim.__all__
                    if not any(getattr(rasp_sim, name) is obj for obj in documented)]
    assert not undocumented, f"docs/api.md has no entry for {undocumented}"
    assert any(obj is importlib.import_module("rasp_sim.testing") for obj in documented)


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
