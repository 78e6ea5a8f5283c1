"""Compiled weights: docs/compiler.md's compile table, forward speed and compile time vs tracr.

    python benchmarks/compiled.py [--batch 4096] [--apply-sample 50] [--numeric-batch 1024]
                                  [--quick] [--only categorical|numeric]

1. Table: every row of examples/compile/table.tsv (the classic library, programs/classic.rasp,
   through the wrappers in examples/compile/) compiled with
   `rasp-sim compile`'s pipeline (validated exhaustively): layers, heads, residual width,
   parameters, compile time (graph -> weights; no JAX) and the validation result.
2. Forward speed on one batch of random inputs of length max_len: the NumPy forward of the
   exported weights (one batched call) against tracr's `model.apply` (its public API, one
   sequence per call, timed on --apply-sample sequences and extrapolated; the output says
   so) and tracr's haiku forward jitted over the whole padded batch (same inputs, one
   compiled XLA call per 512 rows). Sequences per second and both ratios; the issue's
   target (>= 1000x) is for NumPy batched / model.apply per sequence.
3. Compile time against stock tracr (`compiling.compile_rasp_to_model`, which includes
   haiku assembly) on the programs tracr's own library has: reverse, hist, sort, sort by
   frequency, shuffle-Dyck-2. rasp-sim's
   time is shown for the compile proper and with tracr's assembly of the oracle. Times are
   medians of 3 runs after a warm-up (the first JAX call in a process costs ~1 s more).
4. Numeric (real-valued token) models from examples/compile/numeric.rasp, compiled once
   (validated on sampled inputs, not timed): the NumPy forward against the same
   `forward(..., xp=jax.numpy)` under `jax.jit` (float64; its first call, the XLA
   compile, is not timed) on one batch of --numeric-batch N(0, 1) inputs, best of 3, and
   the largest |NumPy - JAX| difference over that batch as a sanity check.
Times are CPU seconds of this process (`time.process_time`, every thread of it: BLAS's
and XLA's included), so other jobs on a shared machine inflate them less than wall time;
they still depend on the machine: rerun before quoting.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np

from rasp_sim.cli.program import load_named_node
from rasp_sim.compiler.forward import forward
from rasp_sim.compiler.tracr_backend import driver
from rasp_sim.compiler.tracr_backend.assemble import to_weights, tracr_model
from rasp_sim.compiler.tracr_backend.pipeline import BOS, compile_graph
from rasp_sim.compiler.tracr_backend.runtime import run_ids
from rasp_sim.compiler.weights import Transformer

PROGRAMS = Path(__file__).resolve().parent.parent / "examples" / "compile"
# (name in examples/compile/numeric.rasp, the sequence length its layout needs, from
# examples/compile/numeric.tsv)
_LENGTHS = {name: int(length) for _, name, _, length in
            (line.split("\t") for line in (PROGRAMS / "numeric.tsv").read_text().splitlines()
             if line and not line.startswith("#"))}
NUMERIC_ROWS = tuple((name, _LENGTHS[name]) for name in (
    "transpose_2x3", "matmul_3x3x3", "softmax_2x3", "determinant_3x3", "attention_2",
    "multihead_2", "encoder_2"))
QUICK_NUMERIC = ("transpose_2x3", "softmax_2x3", "determinant_3x3")


def table_rows() -> list[tuple[str, str, str, int]]:
    return [(f, n, v, int(m)) for f, n, v, m in
            (line.split("\t") for line in (PROGRAMS / "table.tsv").read_text().splitlines()
             if line and not line.startswith("#"))]


def run_seconds(function: Callable[[], object], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        function()
        times.append(time.process_time() - start)
    return times


def median_seconds(function: Callable[[], object], repeats: int = 3) -> float:
    return statistics.median(run_seconds(function, repeats))


def best_seconds(function: Callable[[], object], repeats: int = 3) -> float:
    # The minimum: on a shared, loaded machine the other runs measure the other jobs.
    return min(run_seconds(function, repeats))


def compile_table(rows) -> dict:
    print("| program | vocab | max len | layers | heads | residual width | parameters | "
          "compile time | validation |")
    print("|---|---|---|---|---|---|---|---|---|")
    results = {}
    for file, name, vocab_text, max_len in rows:
        root = load_named_node(str(PROGRAMS / file), name)[1]
        vocab = driver.parse_vocab(vocab_text.split(","), driver.tokens_kind(root))
        result = driver.compile_program(root, vocab, max_len)
        seconds = median_seconds(lambda: to_weights(compile_graph(root, vocab, max_len), {}))
        record = result.weights.metadata[driver.COMPILE_KEY]
        report = result.report
        verdict = (f"{'ok' if report.ok else 'FAILED'}, {report.mode} "
                   f"{report.compared} inputs ({report.seconds:.1f} s)")
        print(f"| {name} ({file}) | {{{vocab_text}}} | {max_len} | {record['layers']} | "
              f"{record['heads']} | {record['residual_width']} | {record['parameters']:,} | "
              f"{seconds * 1000:.0f} ms | {verdict} |")
        results[name] = (root, vocab, max_len, result)
    return results


def forward_speed(results: dict, batch: int, apply_sample: int) -> None:
    print(f"\nForward speed, {batch} random inputs of length max_len (float64):")
    print("| program | NumPy forward (seq/s) | tracr model.apply (seq/s, "
          f"{apply_sample} timed) | ratio (target >= 1000x) | tracr jitted batch (seq/s) | "
          "ratio to jitted batch |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for name, (root, vocab, max_len, result) in results.items():
        weights = result.weights
        tokens = list(weights.input_encoder.tokens)
        vocab_ids = np.array([tokens.index(v) for v in vocab])
        bos = tokens.index(BOS)
        ids = np.concatenate([np.full((batch, 1), bos),
                              vocab_ids[rng.integers(0, len(vocab), (batch, max_len))]], axis=1)
        numpy_rate = batch / median_seconds(lambda: run_ids(weights, ids))
        model = tracr_model(result.compiled)
        sequences = [[BOS] + [tokens[i] for i in row[1:]] for row in ids[:apply_sample]]
        model.apply(sequences[0])  # warm-up
        apply_rate = apply_sample / median_seconds(
            lambda: [model.apply(s) for s in sequences], repeats=1)
        jitted = driver.tracr_forward(model, result.compiled.categorical_output, max_len)
        jitted(ids[:8])  # compile once
        jit_rate = batch / median_seconds(lambda: jitted(ids))
        print(f"| {name} | {numpy_rate:,.0f} | {apply_rate:,.1f} (extrapolated) | "
              f"{numpy_rate / apply_rate:,.0f}x | {jit_rate:,.0f} | {numpy_rate / jit_rate:,.1f}x |")


def stock_compile_times(results: dict) -> None:
    from tracr.compiler import compiling, lib
    from tracr.rasp import rasp

    stock = {"reversed": lambda n: lib.make_reverse(rasp.tokens),
             "hist": lambda n: lib.make_hist(),
             "sorted": lambda n: lib.make_sort(rasp.tokens, rasp.tokens, max_seq_len=n,
                                               min_key=1),
             "by_freq": lambda n: lib.make_sort_freq(max_seq_len=n),
             "shuffle_dyck2_state": lambda n: lib.make_shuffle_dyck2()}
    print("\nCompile time, median of 3 (stock includes haiku assembly):")
    print("| program | stock tracr compile_rasp_to_model | rasp-sim compile | "
          "rasp-sim compile + tracr oracle assembly |")
    print("|---|---|---|---|")
    for name, make in stock.items():
        if name not in results:
            continue
        root, vocab, max_len, result = results[name]
        program = make(max_len)
        stock_seconds = median_seconds(
            lambda: compiling.compile_rasp_to_model(program, set(vocab), max_len))
        ours = median_seconds(lambda: to_weights(compile_graph(root, vocab, max_len), {}))
        with_oracle = median_seconds(lambda: tracr_model(compile_graph(root, vocab, max_len)))
        print(f"| {name} | {stock_seconds * 1000:.0f} ms | {ours * 1000:.0f} ms | "
              f"{(ours + with_oracle) * 1000:.0f} ms |")


def compile_numeric(name: str, length: int, samples: int = 50) -> Transformer:
    """The validated weights of a numeric.rasp row at its one length."""
    root = load_named_node(str(PROGRAMS / "numeric.rasp"), name)[1]
    result = driver.compile_program(root, [], length, tracr_oracle=False, samples=samples,
                                    numeric=driver.NumericDomain(length, length, -1000, 1000))
    if not result.report.ok:
        raise SystemExit(f"{name}: the compiled model failed its validation")
    return result.weights


def numeric_inputs(batch: int, length: int, seed: int = 0) -> np.ndarray:
    """(batch, length + 1, 1) features: 0.0 at BOS, then N(0, 1) values."""
    features = np.random.default_rng(seed).normal(size=(batch, length + 1, 1))
    features[:, 0] = 0.0
    return features


def jax_forward(weights: Transformer) -> Callable[[np.ndarray], np.ndarray]:
    """forward(weights, ., xp=jax.numpy) under jax.jit, in float64; the weights are
    constants of the compiled XLA program. Returns NumPy arrays, so a call includes the
    transfer back and waits for the (asynchronous) result."""
    jax = driver._jax()  # float64 before any jax array exists
    import jax.numpy as jnp

    jitted = jax.jit(lambda features: forward(weights, features, xp=jnp))
    return lambda features: np.asarray(jitted(features))


def numeric_forward_speed(rows: list[tuple[str, int]], batch: int) -> dict[str, float]:
    """Prints the NumPy vs jitted JAX table; returns each row's max |NumPy - JAX|."""
    print(f"\nNumeric models, forward speed on {batch} N(0, 1) inputs (float64, best of 3):")
    print("| program | length | layers | parameters | NumPy forward (seq/s) | "
          "JAX jit (seq/s) | JAX / NumPy | max abs NumPy - JAX |")
    print("|---|---|---|---|---|---|---|---|")
    differences = {}
    for name, length in rows:
        weights = compile_numeric(name, length)
        features = numeric_inputs(batch, length)
        jitted = jax_forward(weights)
        # The first jitted call compiles (XLA) and is left out of the timing: it gives the check.
        differences[name] = float(np.max(np.abs(forward(weights, features) - jitted(features))))
        numpy_rate = batch / best_seconds(lambda: forward(weights, features))
        jax_rate = batch / best_seconds(lambda: jitted(features))
        record = weights.metadata[driver.COMPILE_KEY]
        print(f"| {name} | {length} | {record['layers']} | {record['parameters']:,} | "
              f"{numpy_rate:,.0f} | {jax_rate:,.0f} | {jax_rate / numpy_rate:.1f}x | "
              f"{differences[name]:.1e} |", flush=True)
    return differences


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--apply-sample", type=int, default=50)
    parser.add_argument("--numeric-batch", type=int, default=1024)
    parser.add_argument("--quick", action="store_true",
                        help=f"reversed, hist and sorted only; numeric: {', '.join(QUICK_NUMERIC)}")
    parser.add_argument("--only", choices=("categorical", "numeric"),
                        help="run one part (default: both)")
    args = parser.parse_args()
    if args.only != "numeric":
        rows = table_rows()
        if args.quick:
            rows = [r for r in rows if r[1] in ("reversed", "hist", "sorted")]
        results = compile_table(rows)
        forward_speed(results, args.batch, args.apply_sample)
        stock_compile_times(results)
    if args.only != "categorical":
        numeric_rows = [r for r in NUMERIC_ROWS if not args.quick or r[0] in QUICK_NUMERIC]
        numeric_forward_speed(numeric_rows, args.numeric_batch)


if __name__ == "__main__":
    main()
