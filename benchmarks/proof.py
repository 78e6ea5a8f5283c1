"""Exhaustive proofs (`compile --exhaustive`): inputs proven per CPU second, per program.

For every row of examples/compile/table.tsv (docs/compiler.md's classic compile table), compile
the program on the table's vocabulary and time the proof's bulk comparison
(compiler/tracr_backend/proof.py: the interpreter and the NumPy forward compared on
batches of up to 8,192 inputs of one length, as a chunk runs them) in CPU seconds
(`time.process_time`): what one core proves per second on a domain large enough for
full chunks, up to --inputs inputs.

The table's own domains are small (a few hundred or thousand inputs per length), so each
program is compiled at the shortest max length (at least the table's) whose longest
length has 8,192 inputs or more, and the batches are those inputs, each a different one:
the forward pass computes a position-wise product once per distinct residual row of a
batch (compiler/planned_products.py), so batches repeating an input would be measured
faster than a domain's chunks run. `--table-lengths` keeps the table's max lengths (then
a batch is all the inputs of the longest length, as few as 64).

    python benchmarks/proof.py [--inputs 65536] [--only NAME ...] [--table-lengths]
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
    parser.add_argument("--table-lengths", action="store_true")
    args = parser.parse_args()
    print("| program | vocab | max len | inputs per batch | inputs/s per core (CPU) |")
    print("|---|---|---|---|---|")
    for line in (PROGRAMS / "table.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        file, name, vocab_text, max_len = line.split("\t")
        if args.only and name not in args.only:
            continue
        root = load_named_node(str(PROGRAMS / file), name)[1]
        vocab = driver.parse_vocab(vocab_text.split(","), driver.tokens_kind(root))
        if not args.table_lengths:
            max_len = str(max(int(max_len), _full_batch_length(len(vocab))))
        weights = driver.compile_program(root, vocab, int(max_len), tracr_oracle=False).weights
        task, _ = proof_task(weights, root)
        longest = np.array(list(itertools.product(range(len(vocab)), repeat=int(max_len))))
        batches = [longest[s:s + BATCH_ROWS] for s in range(0, len(longest), BATCH_ROWS)]
        compare_rows(task.reference, task.weights, task.encoding, longest[:64], Tally())  # warm-up
        tally = Tally()
        start = time.process_time()
        for batch in itertools.islice(itertools.cycle(batches),
                                      max(1, -(-args.inputs // len(batches[0])))):
            compare_rows(task.reference, task.weights, task.encoding, batch, tally)
        seconds = time.process_time() - start
        assert tally.disagreement is None, tally.disagreement
        print(f"| {name} | {vocab_text} | {max_len} | {len(batches[0]):,} "
              f"| {tally.compared / seconds:,.0f} |", flush=True)


def _full_batch_length(vocab_size: int) -> int:
    """The shortest length with at least BATCH_ROWS inputs."""
    length = 1
    while vocab_size ** length < BATCH_ROWS:
        length += 1
    return length


if __name__ == "__main__":
    main()
