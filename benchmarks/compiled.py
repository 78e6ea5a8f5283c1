"""Compiled weights: the README's compile table, forward speed and compile time vs tracr.

    python benchmarks/compiled.py [--batch 4096] [--apply-sample 50] [--quick]

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
Timings depend on the machine and its load: rerun before quoting.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from rasp_sim.cli.program import load_named_node
from rasp_sim.compiler.tracr_backend import driver
from rasp_sim.compiler.tracr_backend.assemble import to_weights, tracr_model
from rasp_sim.compiler.tracr_backend.pipeline import BOS, compile_graph
from rasp_sim.compiler.tracr_backend.runtime import run_ids

PROGRAMS = Path(__file__).resolve().parent.parent / "examples" / "compile"


def table_rows() -> list[tuple[str, str, str, int]]:
    return [(f, n, v, int(m)) for f, n, v, m in
            (line.split("\t") for line in (PROGRAMS / "table.tsv").read_text().splitlines()
             if line and not line.startswith("#"))]


def median_seconds(function, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--apply-sample", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="reversed, hist and sorted only")
    args = parser.parse_args()
    rows = table_rows()
    if args.quick:
        rows = [r for r in rows if r[1] in ("reversed", "hist", "sorted")]
    results = compile_table(rows)
    forward_speed(results, args.batch, args.apply_sample)
    stock_compile_times(results)


if __name__ == "__main__":
    main()
