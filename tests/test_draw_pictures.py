"""`rasp-sim draw`'s pictures: library calls folded into boxes, selector grids, and a
layout where no two boxes or labels overlap and every example fits 2,000 x 2,000 px
(the size rule of docs/cli.md, "Layers and heads"), checked on every example and library program."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from rasp_sim.language import library
from rasp_sim.language.analyse import analyse
from rasp_sim.cli.inputs import parse_input
from rasp_sim.cli.program import load_program
from rasp_sim.pictures.draw import DEFAULT_DPI, drawing
from rasp_sim.pictures.drawing import Drawing
from rasp_sim.pictures.draw_collapse import call_names
from rasp_sim.pictures.draw_layout import Layout, box_size, layered_layout, text_size
from rasp_sim.core.graph import ancestors

from .library.test_costs import COSTS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.rasp")) + sorted(
    (ROOT / "examples" / "compile").glob("*.rasp"))


def _example_input(path: Path) -> str | None:
    """The first `--input` of the file's usage comment."""
    found = re.search(r'--input ("[^"]*"|\S+)', path.read_text())
    return found[1].strip('"') if found else None


def example_picture(path: Path, *, expand: bool = False,
                    with_input: bool = True) -> Drawing:
    """The picture `rasp-sim draw FILE [--input ...]` draws."""
    program = load_program(str(path))
    _, node = program.node()
    values, example = None, None
    text = _example_input(path) if with_input else None
    if text is not None:
        nodes = list(ancestors(node))
        example = parse_input(text, exact=program.exact)
        (results,) = program.evaluate_nodes(nodes, [example])
        values = dict(zip(nodes, results))
    return drawing(analyse(node), values, example, user_file=path,
                   call_names=call_names(path, program.values), expand=expand)


def assert_no_overlap(layout: Layout) -> None:
    rects = layout.labelled_rects()
    x, y, w, h = (np.array([getattr(r, f) for r in rects]) for f in "xywh")
    apart_x = np.abs(x[:, None] - x[None, :]) * 2 >= w[:, None] + w[None, :]
    apart_y = np.abs(y[:, None] - y[None, :]) * 2 >= h[:, None] + h[None, :]
    clash = ~(apart_x | apart_y)
    np.fill_diagonal(clash, False)
    assert not clash.any(), [(rects[i], rects[j]) for i, j in zip(*np.nonzero(clash))][:3]


def assert_inside(layout: Layout) -> None:
    for box in layout.labelled_rects():
        assert 0 <= box.x - box.w / 2 and box.x + box.w / 2 <= layout.width
        assert 0 <= box.y - box.h / 2 and box.y + box.h / 2 <= layout.height


# The expanded pictures (every node of every library call) take most of the time.
EXPAND = [False, pytest.param(True, marks=pytest.mark.slow)]


@pytest.mark.parametrize("expand", EXPAND, ids=["folded", "expanded"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_pictures_fit_and_nothing_overlaps(path: Path, expand: bool) -> None:
    for with_input in (False, True):
        picture = example_picture(path, expand=expand, with_input=with_input)
        layout = layered_layout(picture)
        assert_no_overlap(layout)
        assert_inside(layout)
        for node, box in enumerate(layout.boxes):  # each box holds its text
            assert (box.w, box.h) == box_size(picture, node)
            width, height = text_size(picture.labels[node])
            assert width < box.w and height < box.h
        if not expand:
            pixels = DEFAULT_DPI / 72
            assert layout.width * pixels <= 2000 and layout.height * pixels <= 2000


@pytest.mark.parametrize("expand", EXPAND, ids=["folded", "expanded"])
@pytest.mark.parametrize("expr", [c[0] for c in COSTS])
def test_library_pictures_have_no_overlap(expr: str, expand: bool) -> None:
    assert_no_overlap(layered_layout(drawing(analyse(library.build(expr)), expand=expand)))


def _labels(picture: Drawing) -> list[str]:
    return [label.split("\n")[0] for label in picture.labels]


def test_a_library_value_is_one_box_named_by_it() -> None:
    path = ROOT / "examples" / "reverse.rasp"
    picture = example_picture(path)
    labels = _labels(picture)
    assert labels.count("length") == 1
    assert picture.kinds[labels.index("length")] == "call"
    assert "length\nlayer 1, 1 head" in picture.labels[labels.index("length")]
    assert not {"full_s", "1"} & set(labels)  # inside the box; constants are folded
    expanded = _labels(example_picture(path, expand=True))
    assert "full_s" in expanded and "call" not in example_picture(path, expand=True).kinds


def test_a_library_call_is_one_box_named_by_the_call() -> None:
    path = ROOT / "examples" / "sort.rasp"
    picture = example_picture(path)
    assert [label for label, kind in zip(picture.labels, picture.kinds) if kind == "call"] == [
        "sorted = sort(tokens, tokens)\nlayers 1-2, 3 heads\n[1, 1, 2, 3]"]
    assert len(picture.labels) == 3  # the box and its inputs: tokens, indices
    expanded = _labels(example_picture(path, expand=True))
    assert {"key0", "plus_key0", "only_key0", "key0_share"} <= set(expanded)


def test_a_selector_on_an_input_is_its_grid() -> None:
    picture = example_picture(ROOT / "examples" / "reverse.rasp")  # input "hello"
    flip = _labels(picture).index("flip")
    grid = picture.grid(flip)
    assert grid is not None and grid.tokens == tuple("hello")
    assert grid.rows == tuple(tuple(k == 4 - q for k in range(5)) for q in range(5))
    assert picture.labels[flip] == "flip\nselect(indices, opp_index, ==)"
    reverse = _labels(picture).index("reverse")
    assert picture.labels[reverse].endswith("['o', 'l', 'l', 'e', 'h']")


def test_a_wide_row_folds_within_its_band() -> None:
    from rasp_sim.pictures.drawing import Edge
    from rasp_sim.pictures.draw_layout import MAX_WIDTH

    count = 60
    picture = Drawing(labels=tuple(f"node {i} with a long label" for i in range(count)),
                      kinds=("map",) * count, layers=(0,) * count, roots=frozenset(),
                      edges=(), titles=("inputs",))
    layout = layered_layout(picture)
    assert_no_overlap(layout)
    assert layout.width <= MAX_WIDTH
    assert len({box.y for box in layout.boxes}) > 1
    tall = Drawing(labels=tuple(f"n{i}" for i in range(count)), kinds=("map",) * count,
                   layers=tuple(range(count)), roots=frozenset(),
                   edges=tuple(Edge(i, i + 1) for i in range(count - 1)),
                   titles=tuple(f"layer {i}" for i in range(count)))
    layout = layered_layout(tall)
    assert_no_overlap(layout)
    assert len(layout.bands) == count and len({band.area.x for band in layout.bands}) > 1
