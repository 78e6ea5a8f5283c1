"""Exhaustive proofs (`compile --exhaustive`): inputs proven per CPU second, per program.

For every row of examples/compile/table.tsv (the README's classic compile table), compile
the program and prove chunks of its longest inputs (compiler/tracr_backend/proof.py: the
interpreter and the NumPy forward compared in bulk) until at least --inputs inputs, in
this process, timing CPU seconds (`time.process_time`): what one core proves per second.
The table's domains are small (363 to 9,330 inputs, chunks of one length each); so that
the chunks are those of a domain worth a proof, each program is compiled at the shortest
max-len >= the table's whose longest inputs number at least 2^14 (at most 4 more
positions), printed in the table.

    python benchmarks/proof.py [--inputs 60000] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from rasp_sim.cli.program import load_named_node
from rasp_sim.compiler.tracr_backend import driver
from rasp_sim.compiler.tracr_backend.proof import chunk_plan, prove_chunk, proof_task

PROGRAMS = Path(__file__).resolve().parent.parent / "examples" / "compile"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=60_000)
    parser.add_argument("--only", nargs="+", metavar="NAME")
    args = parser.parse_args()
    print("| program | vocab | max len (table's) | inputs timed | inputs/s per core (CPU) |")
    print("|---|---|---|---|---|")
    for line in (PROGRAMS / "table.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        file, name, vocab_text, max_len = line.split("\t")
        if args.only and name not in args.only:
            continue
        root = load_named_node(str(PROGRAMS / file), name)[1]
        vocab = driver.parse_vocab(vocab_text.split(","), driver.tokens_kind(root))
        length = int(max_len)
        while len(vocab) ** length < 2**14 and length < int(max_len) + 4:
            length += 1
        weights = driver.compile_program(root, vocab, length, tracr_oracle=False).weights
        task, domain = proof_task(weights, root)
        chunks = list(chunk_plan(len(vocab), domain["min_len"], domain["max_len"]))
        prove_chunk(task, chunks[-1])  # warm-up (the shortest inputs): the forward's plan
        done, seconds = 0, 0.0
        for chunk in chunks:
            start = time.process_time()
            record = prove_chunk(task, chunk)
            seconds += time.process_time() - start
            assert record["disagreement"] is None, record
            done += record["inputs"]
            if done >= args.inputs:
                break
        print(f"| {name} | {vocab_text} | {length} ({max_len}) | {done:,} | "
              f"{done / seconds:,.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
