"""The compression table of docs/compiler.md ("Compression with a certificate"), measured
and written there.

For every row of examples/compile/table.tsv (the classic library; docs/compiler.md's
compile table), compile the program (rasp_sim.compile, validated on its whole domain),
then search for the smallest residual width at which the compressed model is certified
exact on every input of the domain, as `rasp-sim compress --find-width` does
(rasp_sim/compression/search.py): the rank bound first, then bisection below it, each
width trained for --steps Adam steps. Each row records the residual width, the rank
bound, the smallest certified width, the parameters before and after, every width tried
with its count of wrong inputs, and the wall and CPU time of the search.

    python benchmarks/compression_table.py [--steps 100] [--only NAME ...] [--skip NAME ...]
                                           [--write]

`--write` replaces the measured rows of the table in docs/compiler.md (between
`<!-- compression-table -->` and `<!-- /compression-table -->`), keeping the others.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile_table import EXAMPLES, ROOT, Row, rows  # noqa: E402

PAGE = ROOT / "docs" / "compiler.md"
START, END = "<!-- compression-table -->", "<!-- /compression-table -->"
HEADER = ("| program | domain | residual width | rank bound | smallest certified width | "
          "parameters before | parameters after | widths tried (wrong inputs) | search time "
          "|\n|---|---|---|---|---|---|---|---|---|")
SKIPPED = ("dyck2_state",)  # width 565 and 16 layers: left out to keep the run short


def measure(row: Row, steps: int) -> str:
    """The row's table line; progress on stderr."""
    import rasp_sim
    from rasp_sim.compression.certified import Settings
    from rasp_sim.compression.search import find_width

    program = rasp_sim.load(str(EXAMPLES / row.file))
    model = rasp_sim.compile(program, row.name, vocab=row.vocab.split(","),
                             max_len=row.max_len)
    root = program.node(row.name)[1]
    wall, cpu = time.perf_counter(), time.process_time()
    tried, found = find_width(model.weights, root, Settings(steps=steps, workers=1),
                              lambda line: print(f"  {row.name}: {line}", file=sys.stderr))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    record = tried[0].weights.metadata["compression"]
    curve = ", ".join(f"{t.width} ({t.wrong:,})" for t in tried)
    after = "-" if found is None else f"{found.weights.metadata['tracr_compile']['parameters']:,}"
    smallest = "none" if found is None else str(found.width)
    inputs = record["certificate"]["inputs"]
    return (f"| {row.label} | {inputs:,} inputs | {model.width} | {record['rank_bound']} | "
            f"{smallest} | {model.info['parameters']:,} | {after} | {curve} | "
            f"{wall:.0f} s ({cpu:.0f} s CPU) |")


def write(measured: dict[str, str]) -> None:
    """Replace the measured rows (label -> line) between the page's markers."""
    text = PAGE.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{PAGE.relative_to(ROOT)}: the markers {START} ... {END} are missing")
    before, rest = text.split(START, 1)
    inner, after = rest.split(END, 1)
    old = {line.split("|")[1].strip(): line for line in inner.splitlines()
           if line.startswith("|") and not line.startswith(("| program", "|---"))}
    lines = [measured.get(row.label) or old.get(row.label) for row in rows("classic")]
    body = "\n".join([HEADER, *[line for line in lines if line]])
    PAGE.write_text(f"{before}{START}\n{body}\n{END}{after}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100,
                        help="Adam steps per width below the rank bound (default 100)")
    parser.add_argument("--only", nargs="*", help="only these names (of table.tsv)")
    parser.add_argument("--skip", nargs="*", default=list(SKIPPED),
                        help=f"leave these out (default: {', '.join(SKIPPED)})")
    parser.add_argument("--write", action="store_true",
                        help="write the measured rows into docs/compiler.md")
    args = parser.parse_args(argv)
    measured = {}
    for row in rows("classic"):
        if (args.only and row.name not in args.only) or row.name in args.skip:
            continue
        line = measure(row, args.steps)
        print(line, flush=True)
        measured[row.label] = line
    if args.write:
        write(measured)
    return 0


if __name__ == "__main__":
    sys.exit(main())
