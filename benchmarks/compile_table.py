"""The compile tables of docs/compiler.md, measured through the real CLI, and written there.

For every row of examples/compile/table.tsv (the classic library, categorical tokens) and
examples/compile/numeric.tsv (linear algebra and attention on real-valued tokens), run
`rasp-sim compile` as a user would and measure the CPU time of the whole process (user +
system of the child, start to file written, validation included: what the compile costs,
which the shared machine's load changes far less than wall time), with the model's size
from the command's --json summary. For the numeric rows, the written weights are then run
(NumPy forward) on 50 random standard-normal inputs and compared with NumPy's own
computation of the construction: the largest error relative to max(1, max|NumPy|).

    python benchmarks/compile_table.py [classic|numeric|both] [--runs 3] [--only NAME ...]
                                       [--check-tracr] [--write-readme]

`--write-readme` replaces the measured rows of docs/compiler.md's tables (between the markers
`<!-- compile-table:classic -->` ... `<!-- /compile-table:classic -->`, and the same for
numeric), keeping the rows not measured; tests/compiler_tracr/test_tracr_readme_tables.py
checks the size columns against a fresh compile of every row, so a change that alters
them must rerun this script.
"""
from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "compile"
# The page that holds the tables (they were the README's; --write-readme kept its name).
TABLES_PAGE = ROOT / "docs" / "compiler.md"
TABLE_FILES = {"classic": "table.tsv", "numeric": "numeric.tsv"}
HEADERS = {
    "classic": ("| program | vocab | max len | layers | heads | residual width | parameters "
                "| compile CPU time | validation |\n|---|---|---|---|---|---|---|---|---|"),
    "numeric": ("| construction | length | layers | heads | residual width | parameters "
                "| compile CPU time | max error vs NumPy |\n|---|---|---|---|---|---|---|---|"),
}
# The page's name of each row (examples/compile/*.tsv name -> label).
LABELS = {
    "reversed": "reverse", "hist": "histogram", "hist_bos": "histogram with BOS",
    "sorted": "sort", "sorted_unique": "sort (unique keys)", "by_freq": "sort by frequency",
    "most_freq": "most frequent", "dyck1_state": "Dyck-1", "dyck2_state": "Dyck-2 (nested)",
    "shuffle_dyck2_state": "shuffle-Dyck-2", "parity_all": "parity",
    "parity_sparse": "k-sparse parity (k = 3)", "parity_masked": "masked parity",
    "matched": "Match2 (p = 5)", "matched_other": "Match2, no self-match",
    "paired_maxmin": "MaxMin pair sort",
    "transpose_2x3": "transpose 2 x 3", "matmul_2x3x2": "matmul (2x3)(3x2)",
    "matmul_3x3x3": "matmul (3x3)(3x3)", "matmul_4x4x4": "matmul (4x4)(4x4)",
    "softmax_2x3": "softmax 2 x 3 (max-shifted)",
    "softmax_unshifted_2x3": "softmax 2 x 3, unshifted",
    "softmax_4x4": "softmax 4 x 4", "determinant_3x3": "det3", "inverse_3x3": "inverse3",
    "prefix_sum_8": "prefix sum (width x mean)", "layer_norm_2x3": "LayerNorm of 2 rows of 3",
    "attention_2": "U, n = d = 2", "attention_unshifted_2": "U unshifted, n = d = 2",
    "attention_linear_2": "U linear (no softmax), n = d = 2", "attention_4": "U, n = d = 4",
    "multihead_2": "multi-head U, n = d = 2, H = 2",
    "multihead_4": "multi-head U, n = d = 4, H = 2",
    "encoder_2": "encoder layer (no LayerNorm), n = d = 2",
    "encoder_post_ln_2": "encoder layer, post-LN, n = d = 2",
    "encoder_pre_ln_2": "encoder layer, pre-LN, n = d = 2",
}


@dataclass(frozen=True)
class Row:
    """One line of a table file: the program, the s-op, the vocabulary ("numeric" for
    real-valued tokens) and the maximum length (numeric rows: also the minimum)."""

    file: str
    name: str
    vocab: str
    max_len: int

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)

    @property
    def numeric(self) -> bool:
        return self.vocab == "numeric"


def rows(table: str) -> list[Row]:
    """The rows of a table ("classic" or "numeric")."""
    text = (EXAMPLES / TABLE_FILES[table]).read_text()
    return [Row(f, n, v, int(m)) for f, n, v, m in
            (line.split("\t") for line in text.splitlines() if line and not line.startswith("#"))]


# ---------------------------------------------------------------- NumPy's own results

def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _layer_norm(z: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mean = z.mean(axis=1, keepdims=True)
    return (z - mean) / np.sqrt(((z - mean) ** 2).mean(axis=1, keepdims=True) + eps)


def _attention(b: list, norm: Callable = _softmax, tau: float = 1.0) -> np.ndarray:
    x, wq, wk, wv = b
    return norm(tau * (x @ wq) @ (x @ wk).T) @ (x @ wv)


def _multihead(b: list, d: int, tau: float) -> np.ndarray:
    x, heads, wo = b[0], [b[1 + 3 * h: 4 + 3 * h] for h in range(2)], b[7]
    return np.concatenate([_attention([x, *h], tau=tau) for h in heads], axis=1) @ wo


def _encoder(b: list, ln: str = "none") -> np.ndarray:
    x, wq, wk, wv, wo, w1, b1, w2, b2 = b
    norm = _layer_norm if ln != "none" else (lambda z: z)
    pre = norm if ln == "pre" else (lambda z: z)
    post = norm if ln == "post" else (lambda z: z)
    z = post(x + _attention([pre(x), wq, wk, wv]) @ wo)
    return post(z + np.maximum(pre(z) @ w1 + b1, 0) @ w2 + b2)


_ENCODER_SHAPES = [(2, 2)] * 6 + [(2,), (2, 2), (2,)]
# name -> (the input blocks' shapes, in layout order; NumPy's result from the blocks)
REFERENCES: dict[str, tuple[list[tuple], Callable[[list], np.ndarray]]] = {
    "transpose_2x3": ([(2, 3)], lambda b: b[0].T),
    "matmul_2x3x2": ([(2, 3), (3, 2)], lambda b: b[0] @ b[1]),
    "matmul_3x3x3": ([(3, 3), (3, 3)], lambda b: b[0] @ b[1]),
    "matmul_4x4x4": ([(4, 4), (4, 4)], lambda b: b[0] @ b[1]),
    "softmax_2x3": ([(2, 3)], lambda b: _softmax(b[0])),
    "softmax_unshifted_2x3": ([(2, 3)], lambda b: _softmax(b[0])),
    "softmax_4x4": ([(4, 4)], lambda b: _softmax(b[0])),
    "determinant_3x3": ([(3, 3)], lambda b: np.full(9, np.linalg.det(b[0]))),
    "prefix_sum_8": ([(8,)], lambda b: np.cumsum(b[0])),
    "layer_norm_2x3": ([(2, 3)], lambda b: _layer_norm(b[0])),
    "attention_2": ([(2, 2)] * 4, _attention),
    "attention_unshifted_2": ([(2, 2)] * 4, _attention),
    "attention_linear_2": ([(2, 2)] * 4, lambda b: _attention(b, norm=lambda s: s)),
    "attention_4": ([(4, 4)] * 4, lambda b: _attention(b, tau=0.5)),
    "multihead_2": ([(2, 2)] * 7 + [(4, 2)], lambda b: _multihead(b, 2, 1.0)),
    "multihead_4": ([(4, 4)] * 7 + [(8, 4)], lambda b: _multihead(b, 4, 0.5)),
    "encoder_2": (_ENCODER_SHAPES, _encoder),
    "encoder_post_ln_2": (_ENCODER_SHAPES, lambda b: _encoder(b, "post")),
    "encoder_pre_ln_2": (_ENCODER_SHAPES, lambda b: _encoder(b, "pre")),
}


def numpy_error(name: str, model: Path, length: int, samples: int = 50) -> float:
    """max |weights - NumPy| / max(1, max|NumPy|) over random standard-normal inputs."""
    from rasp_sim.compiler.tracr_backend.runtime import run_weights

    shapes, reference = REFERENCES[name]
    rng = np.random.default_rng(0)
    worst = 0.0
    inputs, expected = [], []
    for _ in range(samples):
        blocks = [rng.normal(size=shape) for shape in shapes]
        flat = np.concatenate([b.ravel() for b in blocks])
        inputs.append(np.concatenate([flat, np.zeros(length - flat.size)]).tolist())
        expected.append(np.ravel(reference(blocks)))
    for got, want in zip(run_weights(str(model), inputs), expected):
        error = np.max(np.abs(np.asarray(got[:want.size]) - want))
        worst = max(worst, error / max(1.0, float(np.max(np.abs(want)))))
    return worst


# ---------------------------------------------------------------- measuring

def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compile_once(row: Row, out: Path, check_tracr: bool = False) -> tuple[float, float, dict]:
    """(CPU seconds, wall seconds, the --json summary or {"error": message}) of one CLI
    compile of the row."""
    command = [sys.executable, "-m", "rasp_sim", "compile", str(EXAMPLES / row.file),
               "--name", row.name, "--max-len", str(row.max_len), "-o", str(out), "--json"]
    command += ["--numeric-tokens"] if row.numeric else [f"--vocab={row.vocab}"]
    command += ["--check-tracr"] if check_tracr else []
    cpu, start = _children_cpu(), time.perf_counter()
    # run outside the repository: `python -m` puts the working directory first on
    # sys.path, and the source tree's rasp_sim/ lacks the installed compiler
    done = subprocess.run(command, capture_output=True, text=True, cwd=out.parent)
    cpu, wall = _children_cpu() - cpu, time.perf_counter() - start
    if done.returncode != 0:
        first = done.stderr.strip().splitlines()[0] if done.stderr.strip() else "?"
        return cpu, wall, {"error": refusal_text(first)}
    return cpu, wall, json.loads(done.stdout)


def refusal_text(line: str) -> str:
    """The reason of a CLI refusal, without its location: 'refused: ...'."""
    reason = line.split("cannot compile: ", 1)[-1]
    return "refused: " + re.sub(r" \(at [^)]*\)$", "", reason).replace("|", "/")


def markdown_row(table: str, row: Row, cpu: float, summary: dict, error: str = "") -> str:
    place = f"{row.vocab} | {row.max_len}" if table == "classic" else f"{row.max_len}"
    if "error" in summary:  # the reason in the layers column, the other sizes empty
        return f"| {row.label} | {place} | {summary['error']} | | | | {cpu:.1f} s | |"
    last = (f"{summary['validation']['mode']}, {summary['validation']['compared']:,} inputs"
            if table == "classic" else error)
    return (f"| {row.label} | {place} | {summary['layers']} | {summary['heads']} | "
            f"{summary['residual_width']} | {summary['parameters']:,} | {cpu:.1f} s | {last} |")


def measure(table: str, row: Row, folder: Path, runs: int, check_tracr: bool) -> str:
    times, walls, summary = [], [], {}
    for _ in range(runs):
        cpu, wall, summary = compile_once(row, folder / f"{row.name}.npz", check_tracr)
        times.append(cpu)
        walls.append(wall)
    error = ""
    if "error" not in summary and row.name in REFERENCES:
        error = f"{numpy_error(row.name, Path(summary['output']), row.max_len):.1e}"
    line = markdown_row(table, row, statistics.median(times), summary, error)
    print(f"{line}  <!-- wall {statistics.median(walls):.1f} s -->", file=sys.stderr, flush=True)
    return line


# ---------------------------------------------------------------- the page's tables

def _markers(table: str) -> tuple[str, str]:
    return f"<!-- compile-table:{table} -->", f"<!-- /compile-table:{table} -->"


def readme_table(table: str, text: str | None = None) -> list[str]:
    """The page's table lines (header included) between the table's markers."""
    text = TABLES_PAGE.read_text() if text is None else text
    start, end = _markers(table)
    if start not in text or end not in text:
        raise SystemExit(f"{TABLES_PAGE.relative_to(ROOT)}: the markers {start} ... {end} are missing")
    inner = text.split(start, 1)[1].split(end, 1)[0]
    return [line for line in inner.splitlines() if line.startswith("|")]


def readme_rows(table: str, text: str | None = None) -> dict[str, list[str]]:
    """label -> the cells of its row in the page's table."""
    cells = [[c.strip() for c in line.strip().strip("|").split("|")]
             for line in readme_table(table, text)[2:]]
    return {c[0]: c[1:] for c in cells}


def write_readme(table: str, measured: dict[str, str]) -> None:
    """Replace the measured rows (label -> Markdown line) of the page's table, keeping
    the others; rows follow the table file's order."""
    text = TABLES_PAGE.read_text()
    old = {line.split("|")[1].strip(): line for line in readme_table(table, text)[2:]}
    lines = [measured.get(row.label) or old.get(row.label) for row in rows(table)]
    body = "\n".join([HEADERS[table], *[line for line in lines if line]])
    start, end = _markers(table)
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    TABLES_PAGE.write_text(f"{before}{start}\n{body}\n{end}{after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="?", default="both", choices=("classic", "numeric", "both"))
    parser.add_argument("--runs", type=int, default=3, help="runs per row; the median is shown")
    parser.add_argument("--only", nargs="*", help="only these names (of the .tsv files)")
    parser.add_argument("--check-tracr", action="store_true",
                        help="compile with --check-tracr (tracr's model as a second oracle)")
    parser.add_argument("--write-readme", action="store_true",
                        help="write the measured rows into docs/compiler.md's tables")
    args = parser.parse_args(argv)
    if args.write_readme and args.check_tracr:
        parser.error("--write-readme writes the tables without --check-tracr")
    tables = ["classic", "numeric"] if args.which == "both" else [args.which]
    with tempfile.TemporaryDirectory() as folder:
        for table in tables:
            print(f"\n{HEADERS[table]}")
            measured = {}
            for row in rows(table):
                if args.only and row.name not in args.only:
                    continue
                measured[row.label] = measure(table, row, Path(folder), args.runs,
                                              args.check_tracr)
                print(measured[row.label], flush=True)
            if args.write_readme:
                write_readme(table, measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
