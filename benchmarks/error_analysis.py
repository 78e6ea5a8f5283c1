"""Errors of the RASP library's constructions against NumPy and exact rationals: the
counterpart of the paper's error figure (docs/constructions.md).

    python benchmarks/error_analysis.py [--sizes 2 4 8 16] [--samples 20]
                                        [--exact-sizes 2 4] [--out benchmarks/out]

For each construction and each size pair (n, d) it evaluates the library program on
`--samples` random standard-normal inputs in one batch and reports the maximum absolute
error against NumPy (float64) and the maximum normwise relative error
max|out - ref| / max|ref|. Beside our softmax and U (exact exp, max-subtraction) it
runs the authors' fixed-base softmax (2.718^x and 2.73^x, no shift), whose error is a
temperature error that no amount of precision removes. In exact mode (Fractions) the
linear-algebra constructions and U without softmax are compared with exact rational
arithmetic; their error is 0 by construction, and the table shows that it is.

Writes error_analysis.md (a Markdown table) and error_analysis.png (200 dpi; each
construction keeps its colour in both panels, and a line marks float64's machine epsilon)
into --out, and prints the table. On a terminal a progress bar counts the (construction,
size) pairs; in a log there is no bar, only the table.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Callable

import numpy as np

from rasp_sim.language import library
from rasp_sim.base.atomic_write import replacing, write_text
from rasp_sim.evaluation.evaluate import evaluate

Matrices = list[np.ndarray]


def softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Construction:
    """One row family of the table: how to build the RASP expression, draw operands,
    lay them out, and compute the reference (and the output size)."""

    name: str
    expr: Callable[[int, int], str]
    shapes: Callable[[int, int], list[tuple[int, int]]]
    reference: Callable[[Matrices], np.ndarray]
    exact_ok: bool = False  # is exact mode meaningful (rational result)?
    heavy: bool = True  # O(n d^2) aggregates or more: sizes capped by --heavy-max


def _u(norm: str, scaled: bool = True) -> Callable[[int, int], str]:
    # tau = 1/sqrt(d_k) is irrational in general, so "U without softmax" uses tau = 1
    return lambda n, d: (f"attention_with(tokens_float, {n}, {d}, {d}, {d}, "
                         f"{f'1 / sqrt({d})' if scaled else '1'}, {norm})")


def _u_ref(norm: Callable[[np.ndarray], np.ndarray], scaled: bool = True) -> Callable[[Matrices], np.ndarray]:
    def ref(m: Matrices) -> np.ndarray:
        x, q, k, v = m
        tau = 1 / np.sqrt(q.shape[1]) if scaled else 1.0
        return norm(tau * (x @ q) @ (x @ k).T) @ (x @ v)
    return ref


U_SHAPES = lambda n, d: [(n, d), (d, d), (d, d), (d, d)]  # noqa: E731

CONSTRUCTIONS = [
    Construction("transpose", lambda n, d: f"transpose(tokens_float, {n}, {d})",
                 lambda n, d: [(n, d)], lambda m: m[0].T, exact_ok=True, heavy=False),
    Construction("matmul", lambda n, d: f"matmul(tokens_float, {n}, {d}, {n})",
                 lambda n, d: [(n, d), (d, n)], lambda m: m[0] @ m[1], exact_ok=True),
    Construction("softmax", lambda n, d: f"softmax(tokens_float, {n}, {d})",
                 lambda n, d: [(n, d)], lambda m: softmax_rows(m[0]), heavy=False),
    Construction("softmax 2.718^x (authors)", lambda n, d: f"softmax_base(tokens_float, {n}, {d}, 2.718)",
                 lambda n, d: [(n, d)], lambda m: softmax_rows(m[0]), heavy=False),
    Construction("softmax 2.73^x (authors)", lambda n, d: f"softmax_base(tokens_float, {n}, {d}, 2.73)",
                 lambda n, d: [(n, d)], lambda m: softmax_rows(m[0]), heavy=False),
    Construction("inverse (n x n)", lambda n, d: f"inverse(tokens_float, {n})",
                 lambda n, d: [(n, n)], lambda m: np.linalg.inv(m[0]), exact_ok=True),
    Construction("U", _u("softmax"), U_SHAPES, _u_ref(softmax_rows)),
    Construction("U 2.718^x (authors)", _u("fixed_base(2.718)"), U_SHAPES, _u_ref(softmax_rows)),
    Construction("U without softmax", _u("identity", scaled=False), U_SHAPES,
                 _u_ref(lambda s: s, scaled=False), exact_ok=True),
    Construction("multi-head U (H = 2)",
                 lambda n, d: f"mha(tokens_float, {n}, {d}, {d}, {d}, 2, 1 / sqrt({d}))",
                 lambda n, d: [(n, d)] + [(d, d)] * 6 + [(2 * d, d)],
                 lambda m: np.concatenate([_u_ref(softmax_rows)([m[0], *m[1 + 3 * h: 4 + 3 * h]])
                                           for h in range(2)], axis=1) @ m[7]),
]


def layout(blocks: Matrices, n: int, d: int) -> list:
    flat = np.concatenate([b.ravel() for b in blocks])
    room = max(n * n, n * d, flat.size)
    return np.concatenate([flat, np.zeros(room - flat.size)]).tolist()


def float_errors(c: Construction, n: int, d: int, samples: int, rng) -> tuple[float, float]:
    batch = [[rng.normal(size=s) for s in c.shapes(n, d)] for _ in range(samples)]
    node = library.build(c.expr(n, d))
    outs = evaluate([node], [layout(b, n, d) for b in batch])
    worst_abs = worst_rel = 0.0
    for blocks, (out,) in zip(batch, outs):
        ref = c.reference(blocks).ravel()
        err = np.abs(np.asarray(out[: ref.size], dtype=float) - ref).max()
        worst_abs = max(worst_abs, err)
        worst_rel = max(worst_rel, err / np.abs(ref).max())
    return worst_abs, worst_rel


def _frac(m: np.ndarray) -> list[list[Fraction]]:
    return [[Fraction(v) for v in row] for row in np.atleast_2d(m)]


def _fmul(a, b):
    return [[sum((a[i][t] * b[t][j] for t in range(len(b))), Fraction(0))
             for j in range(len(b[0]))] for i in range(len(a))]


def _exact_residual(name: str, m: Matrices, out: list) -> Fraction | None:
    """max |out - exact result| in exact arithmetic; for the inverse max |M out - I|,
    which is 0 exactly when out is the exact inverse. None if M is singular."""
    f = [_frac(b) for b in m]
    if name == "transpose":
        ref = [list(r) for r in zip(*f[0])]
    elif name == "matmul":
        ref = _fmul(f[0], f[1])
    elif name == "U without softmax":
        x, q, k, v = f
        ref = _fmul(_fmul(_fmul(x, q), [list(r) for r in zip(*_fmul(x, k))]), _fmul(x, v))
    else:
        size = len(f[0])
        inv = [out[i * size:(i + 1) * size] for i in range(size)]
        ref = [[Fraction(int(i == j)) for j in range(size)] for i in range(size)]
        out = [v for row in _fmul(f[0], inv) for v in row]
    flat_ref = [v for row in ref for v in row]
    return max(abs(Fraction(o) - r) for o, r in zip(out, flat_ref))


def exact_error(c: Construction, n: int, d: int, samples: int, rng) -> float:
    """Max |out - exact| over the samples, computed in exact arithmetic (0 means equal)."""
    node = library.build(c.expr(n, d).replace("tokens_float", "tokens_asis"), exact=True)
    worst = Fraction(0)
    for _ in range(samples):
        blocks = [rng.normal(size=s) for s in c.shapes(n, d)]
        inp = [Fraction(v) for v in layout(blocks, n, d)]
        out = evaluate([node], [inp], exact=True)[0][0]
        worst = max(worst, _exact_residual(c.name, blocks, out))
    return float(worst)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2, 4, 8, 16])
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--heavy-max", type=int, default=8,
                        help="largest n and d for matmul, inverse, U and multi-head U, whose "
                        "evaluation time grows like n*d^2 aggregates over n*d positions")
    parser.add_argument("--exact-sizes", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--exact-samples", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out"))
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(20260623)

    jobs = [(c, n, d) for c in CONSTRUCTIONS for sizes in [_sizes(c, args)]
            for n in sizes for d in sizes
            if not (c.name.startswith("inverse") and d != sizes[0])]  # inverse: one size
    from tqdm import tqdm

    bar = tqdm(jobs, unit="size", file=sys.stderr, disable=not sys.stderr.isatty())
    rows = []  # (construction, n, d, abs, rel, exact or None)
    for c, n, d in bar:
        bar.set_description(f"{c.name} n={n} d={d}")
        a, r = float_errors(c, n, d, args.samples, rng)
        e = None
        if c.exact_ok and n in args.exact_sizes and d in args.exact_sizes:
            e = exact_error(c, n, d, args.exact_samples, rng)
        rows.append((c.name, n, d if not c.name.startswith("inverse") else n, a, r, e))

    args.out.mkdir(parents=True, exist_ok=True)
    table = write_table(rows, args)
    write_text(args.out / "error_analysis.md", table)
    print(table)
    if not args.no_plot:
        plot(rows, args.out / "error_analysis.png")


def _sizes(c: Construction, args: argparse.Namespace) -> list[int]:
    return [s for s in args.sizes if not c.heavy or s <= args.heavy_max]


def write_table(rows, args) -> str:
    """Per construction: the worst errors over all sizes, and the worst per n."""
    lines = [f"Standard-normal inputs, {args.samples} per size, n and d in {args.sizes} (at most "
             f"{args.heavy_max} for matmul, inverse and U); exact mode on n, d in "
             f"{args.exact_sizes} ({args.exact_samples} inputs each).", "",
             "| construction | max abs error | max rel error | exact mode error |",
             "|---|---|---|---|"]
    for c in CONSTRUCTIONS:
        mine = [r for r in rows if r[0] == c.name]
        exact = [r[5] for r in mine if r[5] is not None]
        lines.append(f"| {c.name} | {max(r[3] for r in mine):.1e} | {max(r[4] for r in mine):.1e} | "
                     + (f"{max(exact):.0f}" if exact else "n/a") + " |")
    return "\n".join(lines) + "\n"


def plot(rows, path: Path) -> None:
    """Worst absolute error against n, ours on the left, the authors' fixed-base softmax
    beside ours on the right; one colour per construction in both panels (tab10, in table
    order), float64's machine epsilon as a dotted line, legends outside the axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    colour = {c.name: f"C{i}" for i, c in enumerate(CONSTRUCTIONS)}
    fig = Figure(figsize=(13, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, authors in zip(axes, (False, True)):
        for c in CONSTRUCTIONS:
            if ("authors" in c.name) != authors and not (authors and c.name in ("softmax", "U")):
                continue
            mine = [r for r in rows if r[0] == c.name]
            ns = sorted({r[1] for r in mine})
            worst = [max(r[3] for r in mine if r[1] == n) for n in ns]
            ax.plot(ns, [max(w, 1e-18) for w in worst], marker="o", label=c.name,
                    color=colour[c.name])
        ax.axhline(np.finfo(np.float64).eps, color="black", linestyle=":", linewidth=1,
                   label="machine epsilon (2.2e-16)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (worst over d)")
        ax.set_title("authors' fixed-base softmax vs ours" if authors else "rasp-sim library")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0, -0.15), ncol=2,
                  frameon=False)
    axes[0].set_ylabel("max |RASP - NumPy| (0 drawn at 1e-18)")
    with replacing(path) as handle:
        fig.savefig(handle, dpi=200, format="png")


if __name__ == "__main__":
    main()
