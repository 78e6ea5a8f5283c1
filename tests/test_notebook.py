"""The notebook loop (docs/python.md, "Notebooks"): what Jupyter shows for a program, an
s-op, a selector's value and a trace, checked on the renderers and on a real notebook
executed by a Jupyter kernel (nbclient)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rasp_sim
from rasp_sim.pictures.draw import drawing
from rasp_sim.pictures.draw_labels import shown
from rasp_sim.compiled.model import Operation
from rasp_sim.compiled.trace import HeadPattern, Residual, Trace
from rasp_sim.pictures.trace_plot import MAX_WIDTH, trace_figure

ROOT = Path(__file__).resolve().parents[1]
SORT = ROOT / "examples" / "sort.rasp"
LIBRARY_INTERNALS = ("key0", "plus_key0", "probe", "block_sum", "assert")


def test_a_programs_picture_folds_the_library_call_as_draw_does():
    program = rasp_sim.load(str(SORT))
    svg = program._repr_svg_()
    assert "sort(tokens, tokens)" in svg  # the box is named by the call, as draw names it
    assert not [word for word in LIBRARY_INTERNALS if word in svg]


def test_an_sops_picture_folds_the_library_calls_around_the_users_own_nodes():
    program = rasp_sim.parse("scaled = tokens_int * 3;\nz = sort(scaled, scaled);")
    for svg in (program["z"]._repr_svg_(), program._repr_svg_()):
        assert "scaled" in svg and "tokens_int * 3" in svg.replace("&#215;", "*")
        assert not [word for word in LIBRARY_INTERNALS if word in svg]


def test_a_programs_repr_is_short_and_names_its_last_names():
    program = rasp_sim.load(str(ROOT / "examples" / "dyck2.rasp"))
    text = repr(program)
    assert len(text) < 200 and "dyck2.rasp" in text and text.endswith("state>")
    many = rasp_sim.parse("".join(f"n{i} = indices + {i};\n" for i in range(12)))
    assert repr(many) == "<Program of 12 names from <string>: ..., n7, n8, n9, n10, n11>"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12))
def test_a_float_in_a_label_is_rounded_to_four_significant_digits(x):
    text = shown(x, 40)
    assert float(text) == float(f"{x:.4g}")
    assert math.isclose(float(text), x, rel_tol=5e-4, abs_tol=1e-300)


def test_draw_labels_round_values_and_constants_but_the_values_keep_every_digit():
    program = rasp_sim.parse("y = tokens_int * 2.6088593650139136;")
    node = program["y"]
    (value,) = program.evaluate_nodes([node], [[1, 2]])[0]
    assert list(value) == [2.6088593650139136, 5.217718730027827]
    from rasp_sim.language.analyse import analyse

    label = drawing(analyse(node), {node: value}, [1, 2]).labels[-1]
    assert "2.609" in label and "[2.609, 5.218]" in label and "2.60885" not in label


def _wide_trace(width: int, heads: int) -> Trace:
    """A trace of `width` residual directions and `heads` heads, whose operations are
    written in a library file at an absolute path (as a numeric library model's are)."""
    positions = ("BOS", "1", "2", "3")
    at = str(ROOT / "rasp_sim" / "programs" / "numerics.rasp") + ":17:12"
    operation = Operation("Aggregate 'block_sum_upto_3____s_op___3__12'", at)
    rng = np.random.default_rng(0)
    pattern = np.full((4, 4), 0.25)
    return Trace((1, 2, 3), positions, tuple(f"direction_{i}" for i in range(width)),
                 (Residual(None, (), rng.normal(size=(4, width))),),
                 tuple(HeadPattern(h // 2, h % 2, (operation,), pattern) for h in range(heads)),
                 (), np.zeros((4, 1)), [1.0, 2.0, 3.0])


def test_a_wide_trace_figure_is_capped_and_labels_every_kth_direction():
    figure = trace_figure(_wide_trace(565, 8))
    assert figure.get_figwidth() <= MAX_WIDTH
    stream = figure.axes[0]
    assert "of 565 labelled" in stream.get_xlabel()
    figure.canvas.draw()
    boxes = [label.get_window_extent() for label in stream.get_xticklabels()]
    assert len(boxes) > 100
    assert not [(a, b) for a, b in zip(boxes, boxes[1:]) if a.overlaps(b)]


def test_head_titles_name_the_file_not_its_folders_and_fit_their_panel():
    figure = trace_figure(_wide_trace(20, 4))
    titles = [axes.get_title() for axes in figure.axes if axes.get_title().startswith("block")]
    assert len(titles) == 4 and all("numerics.rasp:17:12" in t for t in titles)
    assert not [t for t in titles if str(ROOT) in t]
    figure.canvas.draw()
    boxes = [axes.title.get_window_extent() for axes in figure.axes if axes in figure.axes[2:]]
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]


def test_jupyter_displays_a_trace_figure_without_pyplot():
    formatters = pytest.importorskip("IPython.core.formatters")
    data, _ = formatters.DisplayFormatter().format(trace_figure(_wide_trace(5, 1)))
    assert data["image/png"].startswith(b"\x89PNG")


def test_a_notebook_shows_every_result_as_a_picture(tmp_path):
    """A fresh kernel runs the docs' loop: load a program that calls the library, show it
    and its s-op, compile, trace and plot (where tracr is installed); every displayed
    result is an image, and the program's picture folds the library call."""
    import nbclient
    import nbformat

    cells = ["import rasp_sim",
             f"program = rasp_sim.load({str(SORT)!r})\nprogram",
             "program['sorted']"]
    try:
        import tracr  # noqa: F401  (the compile extra, in dev)
    except ImportError:
        pass
    else:
        cells += ["model = rasp_sim.compile(program, vocab=[1, 2, 3], max_len=3)\n"
                  "trace = model.trace([3, 1, 2])\ntrace",
                  "trace.plot()"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell in notebook.cells[1:]:  # each ends with a result Jupyter displays
        (output,) = [o for o in cell.outputs if o.output_type in ("execute_result",
                                                                   "display_data")]
        assert {"image/png", "image/svg+xml"} & set(output.data), (cell.source, output)
    program_svg = notebook.cells[1].outputs[0].data["image/svg+xml"]
    assert "sort(tokens, tokens)" in program_svg
    assert not [word for word in LIBRARY_INTERNALS if word in program_svg]
