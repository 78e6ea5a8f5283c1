"""The compile tables of docs/compiler.md cannot go stale: every row of
examples/compile/table.tsv and numeric.tsv has a row there (written by benchmarks/compile_table.py
--write-readme), and its size columns (layers, heads, residual width, parameters) are
those of a fresh compile of the row, or it says "refused" where the compile is refused.
The compile here stops at the weights (no validation: the other tests validate these
programs), so the default suite pays only for the small rows; the large ones are slow."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("tracr")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "compile_table.py"
_spec = importlib.util.spec_from_file_location("compile_table", SCRIPT)
table_script = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = table_script
_spec.loader.exec_module(table_script)

# The default suite compiles the small rows (about 0.2 s each); the others are slow.
LIGHT_NUMERIC = {"determinant_3x3", "softmax_4x4", "inverse_3x3", "prefix_sum_8",
                 "layer_norm_2x3"}
HEAVY = {"dyck2_state"} | {r.name for r in table_script.rows("numeric")} - LIGHT_NUMERIC
ROWS = [pytest.param(table, row, id=row.name,
                     marks=[pytest.mark.slow] if row.name in HEAVY else [])
        for table in ("classic", "numeric") for row in table_script.rows(table)]


def sizes(root, row) -> dict[str, int] | str:
    """The row's layers, heads, residual width and parameters as `rasp-sim compile`
    builds them (the same lowering and assembly, without validation), or the refusal."""
    from rasp_sim.compiler.tracr_backend import driver
    from rasp_sim.compiler.tracr_backend.assemble import to_weights
    from rasp_sim.compiler.tracr_backend.pipeline import compile_graph

    try:
        if row.numeric:
            compiled = compile_graph(root, [], row.max_len, numeric=driver.NumericDomain(
                row.max_len, row.max_len, -1000.0, 1000.0))
        else:
            vocab = driver.parse_vocab(row.vocab.split(","), driver.tokens_kind(root))
            compiled = compile_graph(root, vocab, row.max_len)
    except driver.Unsupported as refusal:
        return refusal.reason
    found = driver.size(to_weights(compiled, {}))
    return {"layers": driver.layer_count(compiled), **{
        key: found[key] for key in ("heads", "residual_width", "parameters")}}


@pytest.mark.parametrize("table, row", ROWS)
def test_the_readme_row_has_the_sizes_of_a_fresh_compile(library, table, row):
    readme = table_script.readme_rows(table)
    assert row.label in readme, (f"docs/compiler.md has no row '{row.label}': run python "
                                 f"benchmarks/compile_table.py {table} --only {row.name} "
                                 "--write-readme")
    cells = readme[row.label][2 if table == "classic" else 1:]
    expected = sizes(library(row.file, row.name), row)
    if isinstance(expected, str):
        assert cells[0].startswith("refused"), f"{row.label} is now refused: {expected}"
        return
    written = dict(zip(("layers", "heads", "residual_width", "parameters"),
                       (int(c.replace(",", "")) if c.replace(",", "").isdigit() else c
                        for c in cells[:4])))
    assert written == expected, (f"docs/compiler.md's row '{row.label}' is stale: rerun python "
                                 f"benchmarks/compile_table.py {table} --only {row.name} "
                                 "--write-readme")


@pytest.mark.parametrize("table", ["classic", "numeric"])
def test_every_readme_row_is_a_row_of_the_table_file(table):
    assert set(table_script.readme_rows(table)) == {r.label for r in table_script.rows(table)}
