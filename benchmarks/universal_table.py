"""The m table of the fixed universal transformers: achieved width and verified error.

For every (H, L) in {1..4} x {1..4} and every layout (sparse compact, tied, residual; and a
random Gaussian UT while its m x m matrices stay small), build the UT, embed a random target
of T(d, k, c, H, L), verify UT(X; E) = T(X) on random inputs of lengths 1..32, and print
a Markdown table (and optionally JSON). Sizes beyond --max-m are skipped, not estimated.

    python benchmarks/universal_table.py [--dim 4] [--max-m 100000] [--random-max-m 1500]
                                         [--json results.json]
"""
from __future__ import annotations

import argparse
import json
import os
import time

# The forward passes here are many small batched products; multi-threaded OpenBLAS spends
# them spinning (77x slower measured on a loaded 2-core machine). Must precede numpy's import;
# set the variable yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from rasp_sim.base.atomic_write import write_text
from rasp_sim.compiler.universal.embed import embed
from rasp_sim.compiler.universal.gaussian import build_random
from rasp_sim.compiler.universal.paths import constraint_count
from rasp_sim.compiler.universal.sparse import build_sparse
from rasp_sim.compiler.universal.target import Shape, random_target
from rasp_sim.compiler.universal.verify import verify

LAYOUTS = (("compact", False, False), ("tied", True, False), ("residual", False, True))


def measure(ut, shape: Shape, seed: int, build_seconds: float) -> dict:
    target = random_target(shape, seed)
    started = time.perf_counter()
    embedding = embed(target, ut)
    embed_seconds = time.perf_counter() - started
    result = verify(ut, embedding, target, lengths=tuple(range(1, 33)), batch=2, seed=seed)
    return {"m": ut.width, "C": constraint_count(shape), "condition": embedding.condition,
            "relative_error": result.relative_error, "tolerance": result.tolerance,
            "passed": result.passed, "build_s": build_seconds, "embed_s": embed_seconds,
            "verify_s": result.seconds}


def rows(dim: int, max_m: int, random_max_m: int):
    for heads in (1, 2, 3, 4):
        for layers in (1, 2, 3, 4):
            for name, tied, residual in LAYOUTS:
                shape = Shape(dim, dim, dim, heads, layers, residual=residual, causal=True)
                # Sizes are known before building: skip rather than exhaust memory.
                count = constraint_count(shape)
                kinds = [("sparse", count if not tied else None)]
                if not tied:
                    kinds.append(("random", count))
                for kind, known_m in kinds:
                    layout = name if kind == "sparse" else ("residual" if residual else "untied")
                    base = {"H": heads, "L": layers, "kind": kind, "layout": layout,
                            "reference_2kL_plus_c": 2 * dim * layers + dim,
                            "paper_stated": dim * layers * heads,
                            "lower_bound_d1": dim * (heads + residual) ** layers}
                    limit = random_max_m if kind == "random" else max_m
                    if known_m is not None and known_m > limit:
                        yield {**base, "m": known_m, "skipped": f"m > {limit}"}
                        continue
                    started = time.perf_counter()
                    ut = build_sparse(shape, tied) if kind == "sparse" else \
                        build_random(shape, seed=heads * 10 + layers)
                    built = time.perf_counter() - started
                    if ut.width > limit:
                        yield {**base, "m": ut.width, "skipped": f"m > {limit}"}
                        continue
                    yield {**base, **measure(ut, shape, seed=heads * 100 + layers, build_seconds=built)}


def markdown(results: list[dict], dim: int) -> str:
    lines = [f"d = k = c = {dim}, causal, lengths 1..32 (2 sequences each); error = "
             "max |UT(X;E) - T(X)| / output scale; HLd = the paper's stated O(HLd) "
             "without constant; lower bound = c x paths, i.e. c (H or H+1)^L (attention "
             "matching, d = 1, c outputs)",
             "",
             "| H | L | UT | layout | m | HLd | lower bound | cond(M) | error | tolerance | "
             "build s | embed s | verify s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if "skipped" in r:
            lines.append(f"| {r['H']} | {r['L']} | {r['kind']} | {r['layout']} | {r['m']} | "
                         f"{r['paper_stated']} | {r['lower_bound_d1']} | skipped ({r['skipped']}) "
                         "| | | | | |")
            continue
        cond = "—" if r["condition"] is None else f"{r['condition']:.1e}"
        lines.append(
            f"| {r['H']} | {r['L']} | {r['kind']} | {r['layout']} | {r['m']} | "
            f"{r['paper_stated']} | {r['lower_bound_d1']} | {cond} | "
            f"{r['relative_error']:.1e} | {r['tolerance']:.0e} | {r['build_s']:.2f} | "
            f"{r['embed_s']:.2f} | {r['verify_s']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=4, help="d = k = c (default 4)")
    parser.add_argument("--max-m", type=int, default=100_000)
    parser.add_argument("--random-max-m", type=int, default=1500,
                        help="largest random UT (its m x m matrices are dense)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    results = []
    for row in rows(args.dim, args.max_m, args.random_max_m):
        results.append(row)
        if "passed" in row and not row["passed"]:
            print(f"FAILED: {row}")
    print(markdown(results, args.dim))
    if args.json:
        write_text(args.json, json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
