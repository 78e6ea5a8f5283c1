"""The README's compile tables, measured through the real CLI.

For every row of examples/compile/table.tsv (the classic library, categorical tokens) and
examples/compile/numeric.tsv (linear algebra and attention on real-valued tokens), run
`rasp-sim compile` as a user would, time the whole process (start to file written,
validation included: the time a user waits) and print a Markdown row with the model's
size from the command's --json summary. For the numeric rows, the written weights are
then run (NumPy forward) on 50 random standard-normal inputs and compared with NumPy's
own computation of the construction: the largest error relative to max(1, max|NumPy|).

    python benchmarks/compile_table.py [classic|numeric|both] [--runs 3] [--only NAME ...]
                                       [--check-tracr]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "compile"


def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _attention(b: list, norm: Callable = _softmax, tau: float = 1.0) -> np.ndarray:
    x, wq, wk, wv = b
    return norm(tau * (x @ wq) @ (x @ wk).T) @ (x @ wv)


def _multihead(b: list, d: int, tau: float) -> np.ndarray:
    x, heads, wo = b[0], [b[1 + 3 * h: 4 + 3 * h] for h in range(2)], b[7]
    return np.concatenate([_attention([x, *h], tau=tau) for h in heads], axis=1) @ wo


def _encoder(b: list) -> np.ndarray:
    x, wq, wk, wv, wo, w1, b1, w2, b2 = b
    z = x + _attention([x, wq, wk, wv]) @ wo
    return z + np.maximum(z @ w1 + b1, 0) @ w2 + b2


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
    "attention_2": ([(2, 2)] * 4, _attention),
    "attention_unshifted_2": ([(2, 2)] * 4, _attention),
    "attention_linear_2": ([(2, 2)] * 4, lambda b: _attention(b, norm=lambda s: s)),
    "attention_4": ([(4, 4)] * 4, lambda b: _attention(b, tau=0.5)),
    "multihead_2": ([(2, 2)] * 7 + [(4, 2)], lambda b: _multihead(b, 2, 1.0)),
    "multihead_4": ([(4, 4)] * 7 + [(8, 4)], lambda b: _multihead(b, 4, 0.5)),
    "encoder_2": ([(2, 2)] * 6 + [(2,), (2, 2), (2,)], _encoder),
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


def rows(table: str) -> list[list[str]]:
    text = (EXAMPLES / table).read_text()
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


def compile_once(file: str, name: str, vocab: str, max_len: str, out: Path,
                 check_tracr: bool = False) -> tuple[float, dict]:
    command = [sys.executable, "-m", "rasp_sim", "compile", str(EXAMPLES / file), "--name", name,
               "--max-len", max_len, "-o", str(out), "--json"]
    command += ["--numeric-tokens"] if vocab == "numeric" else [f"--vocab={vocab}"]
    command += ["--check-tracr"] if check_tracr else []
    start = time.perf_counter()
    # run outside the repository: `python -m` puts the working directory first on
    # sys.path, and the source tree's rasp_sim/ lacks the installed compiler
    done = subprocess.run(command, capture_output=True, text=True, cwd=out.parent)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        return seconds, {"error": done.stderr.strip().splitlines()[0] if done.stderr else "?"}
    return seconds, json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="?", default="both", choices=("classic", "numeric", "both"))
    parser.add_argument("--runs", type=int, default=3, help="runs per row; the median is shown")
    parser.add_argument("--only", nargs="*", help="only these names")
    parser.add_argument("--check-tracr", action="store_true",
                        help="compile with --check-tracr (tracr's model as a second oracle)")
    args = parser.parse_args(argv)
    tables = {"classic": ["table.tsv"], "numeric": ["numeric.tsv"],
              "both": ["table.tsv", "numeric.tsv"]}[args.which]
    with tempfile.TemporaryDirectory() as folder:
        for table in tables:
            print(f"\n{table}\n| name | layers | heads | residual width | parameters | compile time "
                  "| validation | max error vs NumPy |\n|---|---|---|---|---|---|---|---|")
            for file, name, vocab, max_len in rows(table):
                if args.only and name not in args.only:
                    continue
                times, summary = [], {}
                for _ in range(args.runs):
                    seconds, summary = compile_once(file, name, vocab, max_len,
                                                    Path(folder) / f"{name}.npz",
                                                    args.check_tracr)
                    times.append(seconds)
                if "error" in summary:
                    print(f"| {name} | refused: {summary['error']} |")
                    continue
                check = summary["validation"]
                error = (f"{numpy_error(name, Path(summary['output']), int(max_len)):.1e}"
                         if name in REFERENCES else "")
                print(f"| {name} | {summary['layers']} | {summary['heads']} | "
                      f"{summary['residual_width']} | {summary['parameters']:,} | "
                      f"{statistics.median(times):.1f} s | {check['mode']}, "
                      f"{check['compared']:,} inputs | {error} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
