"""Exhaustive proofs (`compile --exhaustive`): inputs proven per CPU second, per program.

For every row of examples/compile/table.tsv (the README's classic compile table), compile
the program as the table does and time the proof's bulk comparison
(compiler/tracr_backend/proof.py: the interpreter and the NumPy forward compared on
batches of 8,192 inputs, as a chunk runs them) in CPU seconds (`time.process_time`): what
one core proves per second once a domain is large enough for full chunks. The table's
domains are small (363 to 9,330 inputs, a few hundred or thousand per length), so the
inputs of its longest length are repeated up to --inputs rows: the work per input is that
of a large domain's chunk on the same model.

    python benchmarks/proof.py [--inputs 65536] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np

from rasp_sim.cli.program import load_named_node
from rasp_sim.compiler.tracr_backend import driver
from rasp_sim.compiler.tracr_backend.bulk_compare import Tally, compare_rows
from rasp_sim.compiler.tracr_backend.proof import BATCH_ROWS, proof_task

PROGRAMS = Path(__file__).resolve().parent.parent / "examples" / "compile"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=65_536)
    parser.add_argument("--only", nargs="+", metavar="NAME")
    args = parser.parse_args()
    print("| program | vocab | max len | inputs/s per core (CPU) |")
    print("|---|---|---|---|")
    for line in (PROGRAMS / "table.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        file, name, vocab_text, max_len = line.split("\t")
        if args.only and name not in args.only:
            continue
        root = load_named_node(str(PROGRAMS / file), name)[1]
        vocab = driver.parse_vocab(vocab_text.split(","), driver.tokens_kind(root))
        weights = driver.compile_program(root, vocab, int(max_len), tracr_oracle=False).weights
        task, _ = proof_task(weights, root)
        longest = np.array(list(itertools.product(range(len(vocab)), repeat=int(max_len))))
        rows = np.resize(longest, (args.inputs, longest.shape[1]))
        compare_rows(task.reference, task.weights, task.encoding, rows[:64], Tally())  # warm-up
        tally = Tally()
        start = time.process_time()
        for s in range(0, len(rows), BATCH_ROWS):
            compare_rows(task.reference, task.weights, task.encoding, rows[s:s + BATCH_ROWS],
                         tally)
        seconds = time.process_time() - start
        assert tally.disagreement is None, tally.disagreement
        print(f"| {name} | {vocab_text} | {max_len} | {len(rows) / seconds:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
