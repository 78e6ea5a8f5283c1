"""`rasp-sim report`: the page holds every figure of the trace, loads nothing from outside,
and renders in a real browser (headless Chromium, Debian's `chromium` package) without
console errors."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from rasp_sim.cli import main

from .conftest import EXAMPLES

pytest.importorskip("tracr")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--enable-logging=stderr", "--v=0"]
# Records what the page did, into the DOM that --dump-dom prints: script errors, failed
# resources (error events in the capture phase), console.error calls, and each image's
# decoded size once the page has loaded.
_PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  window.__errors.push(String(e.message || (e.target && (e.target.src || e.target.href))));
}, true);
console.error = function () { window.__errors.push(Array.from(arguments).join(" ")); };
window.addEventListener("load", function () {
  var images = Array.from(document.images);
  document.body.setAttribute("data-probe", JSON.stringify({
    images: images.length,
    broken: images.filter(function (i) { return !i.complete || i.naturalWidth === 0; }).length,
    svgs: document.querySelectorAll("figure > svg").length,
    errors: window.__errors}));
});
</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("report")
    model = folder / "reverse.npz"
    # the program next to its model: a model names files only in its own folder
    shutil.copy(EXAMPLES / "reverse.rasp", folder / "reverse.rasp")
    assert main(["compile", str(folder / "reverse.rasp"), "--name", "reversed", "--vocab",
                 "a,b,c", "--max-len", "5", "-o", str(model)]) == 0
    page = folder / "report.html"
    assert main(["report", str(model), "--input", "abc", "-o", str(page)]) == 0
    return page, page.read_text()


class _Figures(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.figures: list[str] = []
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "figure":
            self.figures.append(values.get("class") or "")
        for name in ("src", "href"):
            if values.get(name):
                self.sources.append(values[name] or "")


def test_the_page_holds_every_figure_of_the_trace(report: tuple[Path, str]) -> None:
    from rasp_sim.compiled.model import load_model

    _, html = report
    parsed = _Figures()
    parsed.feed(html)
    trace = load_model(report[0].parent / "reverse.npz").trace("abc")
    kinds = parsed.figures
    assert kinds.count("diagram") == 1
    assert kinds.count("residual") == len(trace.residuals)  # the embedding and every block
    assert kinds.count("attention") == len(trace.attention) == 2
    assert kinds.count("mlp") == len(trace.mlps) == 2
    # every resource is inline: images are data: URIs, the SVG refers only to itself (#id)
    images = [s for s in parsed.sources if not s.startswith("#")]
    assert images and all(s.startswith("data:image/png;base64,") for s in images)
    assert not re.search(r"url\((?!#)|@import|<link|<script|xlink:href=\"(?!#)", html)
    # each block names its RASP operation and quotes its source line
    # (tracr numbers its labels with a process-wide counter: the suffix depends on what the
    # process compiled before)
    assert re.search(r"Aggregate (&#x27;|')reversed_\d+(&#x27;|')", html)
    assert "return aggregate(select(indices, length - indices - 1, ==), x);" in html
    assert "the model agrees with the interpreter" in html
    # the circuit: every node and edge of Model.circuit(), dead ones marked
    graph = load_model(report[0].parent / "reverse.npz").circuit()
    nodes = re.search(r'<table id="circuit-nodes">(.*?)</table>', html, re.S)
    edges = re.search(r'<table id="circuit-edges">(.*?)</table>', html, re.S)
    assert nodes and edges
    assert nodes[1].count("<tr>") == graph.number_of_nodes() + 1  # and the header
    assert edges[1].count("<tr>") == graph.number_of_edges() + 1
    assert "<td>block3.head0</td><td>unembed</td><td>unembed: reversed_" in edges[1]
    assert "blocks.2.attn.hook_result[:, :, 0]" in nodes[1]
    assert nodes[1].count("dead</td>") == sum(d for _, d in graph.nodes(data="dead"))
    assert html.count('<td class="ok">yes</td>') == 3  # c b a, position by position


def test_the_output_table_marks_a_disagreement() -> None:
    from types import SimpleNamespace

    from rasp_sim.pictures.report import Reference, output_table

    trace = SimpleNamespace(input=("a", "b"), output=["b", "a"])
    table = output_table(trace, Reference(["b", "b"]), 1e-9)  # type: ignore[arg-type]
    assert "DISAGREES" in table and table.count('class="bad">NO') == 1
    numbers = SimpleNamespace(input=(1, 2), output=[0.5, 1.0 + 1e-12])
    assert "DISAGREES" not in output_table(numbers, Reference([0.5, 1.0]), 1e-9)  # type: ignore[arg-type]


def _browse(page: Path, *flags: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([CHROMIUM, *_FLAGS, f"--user-data-dir={profile}", *flags,
                               page.as_uri()], capture_output=True, text=True, timeout=120,
                              check=False)


def _probe(page: Path, html: str) -> tuple[dict, str]:
    """What the page did in the browser (see _PROBE), and the browser's log."""
    probed = page.with_name("probed_" + page.name)
    probed.write_text(html.replace("<head>", "<head>" + _PROBE, 1))
    result = _browse(probed, "--dump-dom", "--virtual-time-budget=10000")
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'data-probe="([^"]*)"', result.stdout)
    assert found, "the page never finished loading"
    return json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&")), result.stderr


def _console_errors(log: str) -> list[str]:
    return [line for line in log.splitlines() if "CONSOLE" in line]


def _need_browser() -> None:
    if CHROMIUM is None:
        if os.environ.get("RASP_SIM_REQUIRE_BROWSER"):
            pytest.fail("chromium is not installed, and RASP_SIM_REQUIRE_BROWSER is set (CI)")
        pytest.skip("the browser test needs Debian's chromium (apt-get install chromium); "
                    ".ci/run installs it")


def test_the_page_renders_in_chromium(report: tuple[Path, str]) -> None:
    from matplotlib.image import imread

    _need_browser()
    page, html = report
    probe, log = _probe(page, html)
    parsed = _Figures()
    parsed.feed(html)
    images = [s for s in parsed.sources if s.startswith("data:")]
    assert probe == {"images": len(images), "broken": 0, "svgs": 1, "errors": []}
    assert _console_errors(log) == []
    shot = page.with_name("shot.png")
    result = _browse(page, f"--screenshot={shot}", "--window-size=1280,2400")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    assert _console_errors(result.stderr) == []
    pixels = imread(shot)[:, :, :3]
    assert (pixels < 0.95).any(axis=2).mean() > 0.05  # not blank: text and figures drawn
    assert len(np.unique((pixels * 255).astype(int).reshape(-1, 3), axis=0)) > 100  # colour


def test_the_browser_check_sees_a_broken_page(tmp_path: Path) -> None:
    """The probe is not blind: a page with a broken image and a script error fails it."""
    _need_browser()
    page = tmp_path / "broken.html"
    html = ('<!DOCTYPE html><html><head></head><body><img src="data:image/png;base64,AAAA">'
            "<script>undefined_function();</script></body></html>")
    probe, log = _probe(page, html)
    assert probe["broken"] == 1 and len(probe["errors"]) >= 2
    assert _console_errors(log)


def test_report_and_trace_write_to_standard_output(report, capsysbinary):
    """`-o -`: the same page on standard output, nothing else printed there; trace's
    figure in the --format asked for (rasp_sim/cli/output_file.py)."""
    page, text = report
    model = str(page.parent / "reverse.npz")
    capsysbinary.readouterr()
    assert main(["report", model, "--input", "abc", "-o", "-"]) == 0
    # matplotlib stamps each SVG with the time and draws random clip-path ids
    stamps = re.compile(r"<dc:date>[^<]*</dc:date>|\bp[0-9a-f]{10}\b")
    written = capsysbinary.readouterr().out.decode("utf-8")
    assert stamps.sub("", written) == stamps.sub("", text)
    for format, start in (("png", b"\x89PNG"), ("svg", b"<?xml"), (None, b"\x89PNG")):
        options = ["--format", format] if format else []
        assert main(["trace", model, "--input", "abc", "-o", "-", *options]) == 0
        assert capsysbinary.readouterr().out.startswith(start)
    assert main(["trace", model, "--input", "abc", "--format", "svg"]) == 2
    assert b"--format is for -o -" in capsysbinary.readouterr().err
