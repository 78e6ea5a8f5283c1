"""rasp-sim's interpreter + vectorised evaluator vs tracr's evaluator and the original RASP.

    python benchmarks/interpreter.py [--quick] [--markdown] [--float-cli] [--per-call] [--original CHECKOUT --original-python PYTHON]

Every time is CPU time (`time.process_time`; a child process's from `getrusage`), so other
jobs on a shared machine slow a run less than they would wall time. The programs compared
on one batch are timed in turn (ours, tracr, the original, ours, ...) and each reports the
median of its runs (5, 3 with --quick). --markdown also prints docs/benchmarks.md's tables.

rasp-sim runs the real user pipeline: each program is RASP source (examples/reverse.rasp,
examples/histogram.rasp, and one-line programs for sort and length), parsed and run by
`Interpreter` (timed once, apart), and the named s-op is evaluated on the whole batch by
`evaluate_batch`. tracr gets the same algorithms in its own RASP (its SelectorWidth
primitive stands in for the library's selector_width trick). All evaluate the same random
batch of 10,000 inputs over an 8-letter alphabet at n = 16 and n = 64.

The last rows run the real CLI, `rasp-sim run examples/sort.rasp --inputs FILE --json` in
a fresh process, on 10,000 and 100,000 inputs of 64 ints, beside the engine in-process
(evaluate_batch of the same program on the inputs as one int64 array) and tracr: what a
user gets end to end (start-up, reading the file, evaluating, printing JSON) against the
engine alone. The CLI's start-up (the same command on one input) is timed apart, and its
rate beyond start-up reported. The same for float inputs: the CLI on 100,000 random layouts
of matmul 4x4x4 (32 floats with 3 decimals each) beyond its start-up against the engine on
one float64 array, beside the CLI's printing of those results alone (its JSON lines,
formatted in-process), which bounds what the CLI can reach whatever its reading costs.

tracr and the original interpreter (tech-srl/RASP) evaluate one input at a time, so each
is timed on a subsample (the first 200 inputs) and its rate extrapolated; the output says
so. The original runs only when given a checkout (--original or RASP_ORIGINAL) and a
Python with antlr4-python3-runtime 4.9.x and termcolor (--original-python or
RASP_ORIGINAL_PYTHON); benchmarks/original_driver.py drives it in that Python. On the
subsamples, rasp-sim's outputs must equal tracr's and the original's (a differential
check): any mismatch is reported and makes the exit status 1.

The process first raises glibc's malloc thresholds (`rasp_sim.keep_freed_memory()`), as
the `rasp-sim` command does: with glibc's defaults the engine's freed arrays came back as
fresh memory, a page fault per 4 KiB (reverse at n = 64: 0.93 us per input, 0.31 with).

At n = 64, sort, hist and reverse are also set beside reference kernels
(benchmarks/reference_kernels.py): each program computed whole by code written for it alone,
from the same list of strings to the same arrays (checked equal; a mismatch makes the exit
status 1), compiled by numba where it is installed (`pip install rasp-sim[bench]`), NumPy
otherwise. They run on a batch of their own, interleaved with the engine, and the row
reports the engine's time over the fastest kernel's: how far the general engine is from a
program's floor.

The Python API per call (`per_call_rows`, alone with --per-call): `Program.run` on one
input at a time, on the whole list, and `run_batch` on the list of str and on the same
inputs as one `<U1` array, for sort, hist and reverse at n = 64; the fixed cost of a call
is run on one input less run_batch's rate. Their typed outputs must agree.

The library's constructions (matmul 4x4x4, softmax 4x4, U with n = d = 4, an encoder layer
with n = d = 2, inverse 4x4, at the input lengths their layouts need) run on random float
layouts. tracr's evaluator gets each construction's own graph translated node for node
into tracr's RASP (benchmarks/tracr_translation.py; tracr has no `sum`, which becomes mean x
SelectorWidth), evaluated with a cache per input: tracr's `rasp.evaluate` recomputes a
shared subexpression at every reference, and these graphs evaluated as trees are 10^4 (matmul)
to 10^13 (inverse) node evaluations. The original gets the graph written out as a program
in its language (benchmarks/original_translation.py: `sum` as mean x selector_width,
`exp(x)` as `e ^ x`, `sqrt` as `^ 0.5`, `assert` as its condition), each node one
statement. Their outputs must agree with rasp-sim's within 1e-9 relative (those rewrites
round differently in the last bits).
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

# As the CLI does: OpenBLAS's thread per core spins on a shared machine, which CPU time
# counts, and speeds nothing up here. Set before NumPy starts OpenBLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import rasp_sim
from rasp_sim.core import graph
from rasp_sim.cli.output import Printer
from rasp_sim.evaluation import accelerate
from rasp_sim.evaluation.evaluate import evaluate_batch
from rasp_sim.base.freed_memory import keep_freed_memory
from rasp_sim.language.interpreter import Interpreter

from original_translation import original_source  # noqa: E402 (benchmarks/, beside this file)
from reference_kernels import NUMPY_KERNELS, PROGRAMS, numba_kernels  # noqa: E402
from tracr_translation import MemoizedEvaluator, to_tracr  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ALPHABET = "abcdefgh"
DRIVER = Path(__file__).with_name("original_driver.py")


@dataclass(frozen=True)
class Program:
    source: str  # RASP text, run as is by rasp-sim and by the original
    file: str  # where the text comes from (for rasp-sim's error spans)
    sop: str  # the name of the s-op to evaluate


def _example(name: str, sop: str) -> Program:
    path = ROOT / "examples" / name
    return Program(path.read_text(), str(path), sop)


def programs() -> dict[str, Program]:
    # examples/sort.rasp sorts integer tokens; the batch here is strings, so sort gets
    # the same library call on the default (string) tokens.
    return {
        "length": Program("size = length;\n", "<length>", "size"),
        "hist": _example("histogram.rasp", "hist"),
        "reverse": _example("reverse.rasp", "reverse"),
        "sort": Program("sorted = sort(tokens, tokens);\n", "<sort>", "sorted"),
    }


def rasp_sim_roots(progs: dict[str, Program]) -> tuple[dict[str, graph.SOp], dict[str, float]]:
    """Each program's s-op graph, from a fresh run-mode interpreter, and the seconds its
    parse + interpret took (best of 3, so one-time warm-up is left out, as is the library
    load at interpreter start-up)."""
    roots, seconds = {}, {}
    for name, program in progs.items():
        seconds[name] = float("inf")
        for _ in range(3):
            interpreter = Interpreter()
            start = time.perf_counter()
            interpreter.run_source(program.source, program.file)
            roots[name] = interpreter.lookup(program.sop)
            seconds[name] = min(seconds[name], time.perf_counter() - start)
    return roots, seconds


def rasp_sim_outputs(root: graph.SOp, batch: list[str]) -> list[list[Any]]:
    return evaluate_batch([root], batch)[root].tolist()


# ------------------------------------------------------------------- the CLI end to end

CLI_PROGRAM = ROOT / "examples" / "sort.rasp"  # sorts integer tokens


def random_int_batch(rng: random.Random, n: int, size: int) -> list[list[int]]:
    return [[rng.randrange(len(ALPHABET)) for _ in range(n)] for _ in range(size)]


def cli_outputs(batch: list[list[Any]], folder: Path,
                program: Path = CLI_PROGRAM) -> tuple[list[list[Any]], float]:
    """`rasp-sim run PROGRAM --inputs FILE --json` on `batch`, as a user runs it (a fresh
    process: start-up, reading, evaluating, printing): its outputs and the CPU seconds it
    took."""
    inputs = folder / "inputs.txt"
    inputs.write_text("".join(json.dumps(x) + "\n" for x in batch))
    command = [sys.executable, "-m", "rasp_sim", "run", str(program), "--inputs",
               str(inputs), "--json"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # cwd: outside the repository, whose rasp_sim/ folder would shadow the installed one
    result = subprocess.run(command, capture_output=True, text=True, cwd=folder,
                            env={**os.environ, "TQDM_DISABLE": "1"})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode != 0:
        raise RuntimeError(f"rasp-sim run failed: {result.stderr.strip()}")
    return [json.loads(line)["output"] for line in result.stdout.splitlines()], seconds


@dataclass(frozen=True)
class CliRow:
    n: int  # the inputs' length
    inputs: int
    cli_seconds: float  # best of the repeats, start-up included
    engine_rate: float  # inputs per second
    tracr_rate: float
    problem: str | None  # a mismatch of the CLI's outputs, if any

    def line(self) -> str:
        cli_rate = self.inputs / self.cli_seconds
        return (f"{'sort':8} {self.n:>3} {self.inputs:>8,} {cli_rate:>10,.0f} "
                f"{self.engine_rate:>13,.0f} {self.tracr_rate:>12,.1f} "
                f"{cli_rate / self.engine_rate:>11.2f} {cli_rate / self.tracr_rate:>9,.0f}x")


def cli_row(batch: list[list[int]], sample_size: int, repeats: int) -> CliRow:
    """The CLI (rasp-sim run) vs the engine in-process vs tracr on `batch`, and a mismatch,
    if any, of the CLI's outputs with the engine's (all inputs) or tracr's (the sample)."""
    interpreter = Interpreter()
    interpreter.run_file(str(CLI_PROGRAM))
    root = interpreter.lookup("sorted")
    with tempfile.TemporaryDirectory() as folder:
        runs = [cli_outputs(batch, Path(folder)) for _ in range(repeats)]
    outputs, cli_seconds = runs[0][0], min(seconds for _, seconds in runs)
    array = np.array(batch, dtype=np.int64)  # the engine's fastest input: no atom is read
    sample = batch[:sample_size]
    tracr_sort = tracr_programs()["sort"]
    seconds = interleaved_medians({
        "engine": lambda: cpu_seconds(lambda: evaluate_batch([root], array)),
        "tracr": lambda: cpu_seconds(lambda: tracr_outputs(tracr_sort, sample))}, 3)
    engine_rate, tracr_rate = len(batch) / seconds["engine"], sample_size / seconds["tracr"]
    problem = (f"{len(outputs)} outputs for {len(batch)} inputs" if len(outputs) != len(batch)
               else _first_mismatch(outputs, rasp_sim_outputs(root, batch), batch)
               or _first_mismatch(outputs, tracr_outputs(tracr_sort, sample), sample))
    return CliRow(len(batch[0]), len(batch), cli_seconds, engine_rate, tracr_rate, problem)


def cli_startup_seconds(rng: random.Random, repeats: int) -> float:
    """The CLI's fixed cost: the same command on a file of one input (best of repeats)."""
    return _best_cli_seconds(random_int_batch(rng, 64, 1), repeats)


def _best_cli_seconds(batch: list[list[Any]], repeats: int,
                      program: Path = CLI_PROGRAM) -> float:
    """The CLI's CPU seconds on `batch`, best of `repeats` runs."""
    with tempfile.TemporaryDirectory() as folder:
        return min(cli_outputs(batch, Path(folder), program)[1] for _ in range(repeats))


@dataclass(frozen=True)
class FloatCliRow:
    """`rasp-sim run` on a file of float layouts beyond its start-up, vs the engine, and
    the CLI's printing alone."""
    name: str
    inputs: int
    beyond_startup_rate: float  # inputs per CPU second of the CLI, start-up taken off
    engine_rate: float
    printing_rate: float  # the CLI's formatting of the JSON lines alone, in-process
    problem: str | None  # a mismatch of the CLI's outputs with the engine's, if any

    def ceiling(self) -> float:
        """CLI/engine if reading the file cost nothing: evaluating and printing only."""
        return 1 / (1 + self.engine_rate / self.printing_rate)

    def line(self) -> str:
        return (f"{self.name:14} {self.inputs:>8,} {self.beyond_startup_rate:>17,.0f} "
                f"{self.engine_rate:>13,.0f} {self.beyond_startup_rate / self.engine_rate:>11.2f} "
                f"{self.printing_rate:>15,.0f} {self.ceiling():>8.2f}")


def float_cli_row(name: str, size: int, repeats: int) -> FloatCliRow:
    """`rasp-sim run --inputs FILE --json` on `size` random layouts of the library
    construction `name` (floats with 3 decimals, as a user's file might hold), beside
    `evaluate_batch` of the same program on the layouts as one float64 array: the CLI's
    CPU seconds less its start-up (the same command on one layout), best of `repeats`."""
    source, n = LIBRARY[name]
    rng = np.random.default_rng(1)
    layouts = np.round(rng.uniform(-10, 10, (size, n)), 3)
    interpreter = Interpreter()
    interpreter.run_source(source, f"<{name}>")
    root = interpreter.lookup("y")
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "construction.rasp"
        program.write_text(source)
        startup = _best_cli_seconds(layouts[:1].tolist(), repeats, program)
        runs = [cli_outputs(layouts.tolist(), Path(folder), program) for _ in range(repeats)]
    outputs, seconds = runs[0][0], min(run_seconds for _, run_seconds in runs)
    column = evaluate_batch([root], layouts)[root]
    printer = Printer("y", as_json=True)
    medians = interleaved_medians(
        {"engine": lambda: cpu_seconds(lambda: evaluate_batch([root], layouts)),
         "printing": lambda: cpu_seconds(lambda: printer.outputs(layouts, column))}, repeats)
    problem = (None if outputs == column.tolist() else
               f"{name}: the CLI's outputs differ from evaluate_batch's")
    return FloatCliRow(name, size, size / max(seconds - startup, 1e-6),
                       size / medians["engine"], size / medians["printing"], problem)


def print_float_cli(size: int, repeats: int) -> str | None:
    """Print the row of float_cli_row on matmul 4x4x4; the CLI's mismatch, if any."""
    floats = float_cli_row("matmul 4x4x4", size, repeats)
    print(f"\nthe CLI on float layouts: `rasp-sim run PROGRAM --inputs FILE --json` on "
          f"{floats.inputs:,} random layouts of matmul 4x4x4 (32 floats each), CPU seconds "
          f"less its start-up (best of {repeats}), vs the engine on one float64 array")
    print(f"{'construction':14} {'inputs':>8} {'CLI seq/s beyond':>17} {'engine seq/s':>13} "
          f"{'CLI/engine':>11} {'printing seq/s':>15} {'ceiling':>8}")
    print("(printing: the CLI's JSON lines formatted in-process from the engine's outputs; "
          "ceiling: CLI/engine if reading the file were free)")
    print(floats.line(), flush=True)
    return floats.problem


# ----------------------------------------------------------------------- tracr programs


def tracr_programs() -> dict[str, object]:
    from tracr.rasp import rasp

    cmp = rasp.Comparison
    length = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, cmp.TRUE))
    opposite = rasp.SequenceMap(lambda n, i: n - i - 1, length, rasp.indices)
    before = rasp.SelectorOr(
        rasp.Select(rasp.tokens, rasp.tokens, cmp.LT),
        rasp.SelectorAnd(
            rasp.Select(rasp.tokens, rasp.tokens, cmp.EQ),
            rasp.Select(rasp.indices, rasp.indices, cmp.LT),
        ),
    )
    target = rasp.SelectorWidth(before)
    return {
        "length": length,
        "hist": rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, cmp.EQ)),
        "reverse": rasp.Aggregate(rasp.Select(rasp.indices, opposite, cmp.EQ), rasp.tokens),
        "sort": rasp.Aggregate(rasp.Select(target, rasp.indices, cmp.EQ), rasp.tokens),
    }


def tracr_outputs(program: object, batch: list[str]) -> list[list[Any]]:
    from tracr.rasp import rasp

    return [rasp.evaluate(program, list(x)) for x in batch]


# ------------------------------------------------------------------ original interpreter


class OriginalUnavailable(Exception):
    """The original interpreter cannot be run as configured (the message says why)."""


class Original:
    """The original RASP interpreter, driven in a subprocess by original_driver.py."""

    def __init__(self, checkout: str, python: str):
        if not (Path(checkout) / "RASP_support" / "REPL.py").is_file():
            raise OriginalUnavailable(
                f"{checkout} is not a checkout of tech-srl/RASP (no RASP_support/REPL.py)")
        probe = subprocess.run([python, "-c", "import antlr4, termcolor"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise OriginalUnavailable(
                f"{python} cannot import antlr4 and termcolor (install "
                "antlr4-python3-runtime==4.9.3 and termcolor in it): "
                f"{probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else ''}")
        self._process = subprocess.Popen(
            [python, str(DRIVER), checkout], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, env={**os.environ, "NO_COLOR": "1"})

    def run(self, program: Program, inputs: list[str]) -> tuple[list[list[Any]], float]:
        """The original's outputs of `program`'s s-op on `inputs`, and the seconds it took."""
        request = {"source": program.source, "name": program.sop, "inputs": inputs}
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            raise OriginalUnavailable("the original's driver stopped without answering")
        reply = json.loads(line)
        if "error" in reply:
            raise OriginalUnavailable(reply["error"])
        return reply["outputs"], reply["seconds"]

    def close(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=30)


# ----------------------------------------------------------------------------- timing


def random_batch(rng: random.Random, n: int, size: int) -> list[str]:
    return ["".join(rng.choice(ALPHABET) for _ in range(n)) for _ in range(size)]


def cpu_seconds(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def interleaved_medians(runs: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Each run's median CPU seconds over `repeats` rounds; a round runs each once, in
    turn, so that a change in the machine's load falls on all of them alike. A run returns
    its own CPU seconds (the original's driver measures its process)."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            times[name].append(run())
    return {name: statistics.median(values) for name, values in times.items()}


def copy_bandwidth(megabytes: int = 64, repeats: int = 5) -> float:
    """Bytes per CPU second of a large NumPy copy (read + write), the median of `repeats`."""
    source = np.ones(megabytes * 2**20 // 8)
    target = np.empty_like(source)
    np.copyto(target, source)  # pages mapped before timing
    seconds = statistics.median(cpu_seconds(lambda: np.copyto(target, source))
                                for _ in range(repeats))
    return 2 * source.nbytes / seconds


def _first_mismatch(ours: list, theirs: list, batch: list[str]) -> str | None:
    for x, a, b in zip(batch, ours, theirs):
        if a != b:
            return f"input {x!r}: rasp-sim {a} vs {b}"
    return None


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller batch and subsamples")
    parser.add_argument("--markdown", action="store_true", help="also print docs/benchmarks.md's tables")
    parser.add_argument("--float-cli", action="store_true",
                        help="only `rasp-sim run --inputs` on matmul 4x4x4 layouts vs the engine")
    parser.add_argument("--reference", action="store_true",
                        help="only sort, hist and reverse against their reference kernels")
    parser.add_argument("--per-call", action="store_true",
                        help="only the Python API's per-call rows (Program.run, run_batch)")
    parser.add_argument("--original", default=os.environ.get("RASP_ORIGINAL"),
                        help="a checkout of tech-srl/RASP (default: $RASP_ORIGINAL)")
    parser.add_argument("--original-python",
                        default=os.environ.get("RASP_ORIGINAL_PYTHON", sys.executable),
                        help="a Python with antlr4-python3-runtime==4.9.3 and termcolor "
                             "(default: $RASP_ORIGINAL_PYTHON, else this Python)")
    return parser.parse_args()


def main() -> int:
    args = _parse_args()
    # As the `rasp-sim` command does, and a notebook by calling it: freed arrays are kept
    # for reuse, not faulted back in page by page (rasp_sim/base/freed_memory.py). It holds for
    # tracr's evaluator too, which runs in this process.
    kept = keep_freed_memory()
    print(f"malloc thresholds raised (rasp_sim.keep_freed_memory): {'yes' if kept else 'no'}")
    batch_size = 1000 if args.quick else 10_000
    cli_repeats = 1 if args.quick else 3
    if args.float_cli:  # that row alone, in about a minute
        problem = print_float_cli(10 * batch_size, cli_repeats)
        if problem:
            print(f"MISMATCH {problem}", file=sys.stderr)
        return 1 if problem else 0
    repeats = 3 if args.quick else 5
    if args.reference:  # those rows alone, in a minute
        reference_mismatches: list[str] = []
        reference_table = reference_rows(rasp_sim_roots(programs())[0], batch_size, repeats,
                                         reference_mismatches)
        if args.markdown:
            print(REFERENCE_HEADER + "\n".join(reference_table))
        for line in reference_mismatches:
            print(f"MISMATCH {line}", file=sys.stderr)
        return 1 if reference_mismatches else 0
    if args.per_call:  # those rows alone, in a minute
        per_call_mismatches: list[str] = []
        per_call_table = per_call_rows(batch_size, batch_size // 10, repeats, per_call_mismatches)
        if args.markdown:
            print(PER_CALL_HEADER + "\n".join(per_call_table))
        for line in per_call_mismatches:
            print(f"MISMATCH {line}", file=sys.stderr)
        return 1 if per_call_mismatches else 0
    sample_size = 20 if args.quick else 200
    original_sample = sample_size // 10  # the original takes ~50 ms an input at n = 64
    original = None
    if args.original:
        try:
            original = Original(args.original, args.original_python)
        except OriginalUnavailable as error:
            print(f"error: cannot run the original interpreter: {error}", file=sys.stderr)
            return 2
    progs = programs()
    roots, interpret_seconds = rasp_sim_roots(progs)
    theirs = tracr_programs()
    print("rasp-sim parse + interpret (once, not in the rates): " + ", ".join(
        f"{name} {1000 * s:.1f} ms" for name, s in interpret_seconds.items()))
    print(f"batch: {batch_size} random inputs; tracr timed on the first {sample_size} of them"
          + (f" and the original on the first {original_sample}" if original else "")
          + f" (one input at a time), extrapolated per sequence; CPU time, median of {repeats} "
          "interleaved runs")
    if not original:
        print("original interpreter: not run (give --original CHECKOUT --original-python PYTHON)")
    print(f"{'program':8} {'n':>3} {'rasp-sim seq/s':>15} {'tracr seq/s':>12} "
          f"{'original seq/s':>15} {'vs tracr':>9} {'vs original':>12}")
    rng = random.Random(0)
    mismatches = []
    table: list[str] = []
    for n in (16, 64):
        batch = random_batch(rng, n, batch_size)
        sample = batch[:sample_size]
        for name, root in roots.items():
            ours = rasp_sim_outputs(root, batch)[:sample_size]
            problem = _first_mismatch(ours, tracr_outputs(theirs[name], sample), sample)
            if problem:
                mismatches.append(f"{name} n={n} tracr: {problem}")
            runs = {"ours": lambda: cpu_seconds(lambda: evaluate_batch([root], batch)),
                    "tracr": lambda: cpu_seconds(lambda: tracr_outputs(theirs[name], sample))}
            if original:
                outputs = original.run(progs[name], sample[:original_sample])[0]
                problem = _first_mismatch(ours, outputs, sample[:original_sample])
                if problem:
                    mismatches.append(f"{name} n={n} original: {problem}")
                runs["original"] = lambda: original.run(progs[name], sample[:original_sample])[1]
            seconds = interleaved_medians(runs, repeats)
            ours_rate = batch_size / seconds["ours"]
            tracr_rate = sample_size / seconds["tracr"]
            original_cells = ["-", "-"]
            if original:
                original_rate = original_sample / seconds["original"]
                original_cells = [f"{original_rate:,.1f}", f"{ours_rate / original_rate:,.0f}x"]
            print(f"{name:8} {n:>3} {ours_rate:>15,.0f} {tracr_rate:>12,.1f} "
                  f"{original_cells[0]:>15} {ours_rate / tracr_rate:>8,.0f}x "
                  f"{original_cells[1]:>12}", flush=True)
            table.append(f"| {name} | {n} | {ours_rate:,.0f} | {tracr_rate:,.0f} | "
                         f"{original_cells[0]} | {ours_rate / tracr_rate:,.0f}x | "
                         f"{original_cells[1]} |")
    reference_table = reference_rows(roots, batch_size, repeats, mismatches)
    per_call_table = per_call_rows(batch_size, batch_size // 10, repeats, mismatches)
    library_table = library_rows(repeats, 200 if args.quick else 2000,
                                 3 if args.quick else 20, original, 1 if args.quick else 3,
                                 mismatches)
    if original:
        original.close()
    sizes = (batch_size, 10 * batch_size)
    print(f"\nthe CLI end to end: `rasp-sim run examples/sort.rasp --inputs FILE --json`, a "
          f"fresh process, on files of {sizes[0]:,} and {sizes[1]:,} random inputs of 64 ints "
          f"(best of {cli_repeats}), vs the engine in-process (evaluate_batch of an int64 "
          "array) and tracr on the same inputs")
    print(f"{'program':8} {'n':>3} {'inputs':>8} {'CLI seq/s':>10} {'engine seq/s':>13} "
          f"{'tracr seq/s':>12} {'CLI/engine':>11} {'vs tracr':>10}")
    rows = []
    for size in sizes:
        rows.append(cli_row(random_int_batch(rng, 64, size), sample_size, cli_repeats))
        print(rows[-1].line(), flush=True)
        if rows[-1].problem:
            mismatches.append(f"sort n=64 CLI on {size:,} inputs: {rows[-1].problem}")
    startup = cli_startup_seconds(rng, cli_repeats)
    largest = rows[-1]
    beyond = largest.inputs / (largest.cli_seconds - startup)
    print(f"CLI start-up (the command on a file of one input): {startup:.3f} s; beyond it, on "
          f"{largest.inputs:,} inputs: {beyond:,.0f} seq/s, {beyond / largest.engine_rate:.2f} "
          "of the engine")
    problem = print_float_cli(10 * batch_size, cli_repeats)
    if problem:
        mismatches.append(problem)
    if args.markdown:
        print("\n| program | n | rasp-sim seq/s | tracr seq/s | original seq/s | vs tracr | "
              "vs original |\n|---|---|---|---|---|---|---|")
        print("\n".join(table))
        print(REFERENCE_HEADER + "\n".join(reference_table))
        print(PER_CALL_HEADER + "\n".join(per_call_table))
        print("\n| construction | n | rasp-sim seq/s | us per sequence | tracr seq/s | "
              "original seq/s | vs tracr | vs original |\n|---|---|---|---|---|---|---|---|")
        print("\n".join(library_table))
    for line in mismatches:
        print(f"MISMATCH {line}", file=sys.stderr)
    return 1 if mismatches else 0


T = TypeVar("T")
REFERENCE_HEADER = ("\n| program | n | engine (us) | engine with numba (us) | NumPy kernel (us) | "
                    "numba kernel (us) | engine / reference | engine with numba / reference |"
                    "\n|---|---|---|---|---|---|---|---|\n")


def _in_mode(mode: str, work: Callable[[], T]) -> T:
    """`work` with the engine's accelerator in `mode` (rasp_sim/evaluation/accelerate.py)."""
    before = os.environ.get(accelerate.ENVIRONMENT)
    os.environ[accelerate.ENVIRONMENT] = mode
    try:
        return work()
    finally:
        if before is None:
            del os.environ[accelerate.ENVIRONMENT]
        else:
            os.environ[accelerate.ENVIRONMENT] = before


def reference_rows(roots: dict[str, graph.SOp], size: int, repeats: int,
                   mismatches: list[str]) -> list[str]:
    """sort, hist and reverse at n = 64 beside their reference kernels, on one batch of
    `size` random strings: outputs checked equal (a difference is added to `mismatches`),
    CPU time interleaved, medians of `repeats` (printed; Markdown rows returned). The
    engine runs twice where numba is installed: NumPy alone (RASP_SIM_ACCELERATE=0) and
    with its compiled kernels from the first batch (=1; compiled before timing)."""
    batch = random_batch(random.Random(64), 64, size)
    compiled = numba_kernels()
    print(f"\nreference kernels (benchmarks/reference_kernels.py) on {size:,} inputs at n = 64, "
          "us per input, interleaved medians; numba: "
          + ("installed" if compiled else "not installed (pip install rasp-sim[bench])"))
    print(f"{'program':8} {'n':>3} {'engine':>7} {'+numba':>7} {'NumPy':>7} {'numba':>7} "
          f"{'engine/ref':>11} {'+numba/ref':>11}")
    engines = {"engine": "0", "+numba": "1"} if compiled else {"engine": "0"}
    rows = []
    for name in PROGRAMS:
        root = roots[name]
        kernels = {"NumPy": NUMPY_KERNELS[name]}
        if compiled and compiled[name] is not NUMPY_KERNELS[name]:
            kernels["numba"] = compiled[name]
        expected = evaluate_batch([root], batch)[root]
        outputs = {f"{k} reference kernel": kernel(batch)  # numba compiles here, before timing
                   for k, kernel in kernels.items()}
        outputs.update({f"engine in accelerator mode {mode}": _in_mode(
            mode, functools.partial(evaluate_batch, [root], batch))[root]
            for mode in engines.values()})
        for label, out in outputs.items():
            if out.dtype != expected.dtype or not np.array_equal(out, expected):
                mismatches.append(f"{name} n=64 {label} differs")
        engine_run = functools.partial(cpu_seconds, functools.partial(evaluate_batch, [root], batch))
        runs: dict[str, Callable[[], float]] = {
            label: functools.partial(_in_mode, mode, engine_run) for label, mode in engines.items()}
        for kernel_name, kernel in kernels.items():
            runs[kernel_name] = functools.partial(cpu_seconds, functools.partial(kernel, batch))
        us = {k: 1e6 * v / size for k, v in interleaved_medians(runs, repeats).items()}
        floor = min(us[k] for k in kernels)
        cells = [f"{us[k]:.3f}" if k in us else "-" for k in ("engine", "+numba", "NumPy", "numba")]
        ratios = [f"{us[k] / floor:.1f}x" if k in us else "-" for k in ("engine", "+numba")]
        print(f"{name:8} {64:>3} {cells[0]:>7} {cells[1]:>7} {cells[2]:>7} {cells[3]:>7} "
              f"{ratios[0]:>11} {ratios[1]:>11}", flush=True)
        rows.append(f"| {name} | 64 | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return rows


PER_CALL_HEADER = ("\n| program | n | run, one input a call (us) | fixed per call (us) | "
                   "run on the list (us/input) | run_batch, list of str | run_batch, <U1 array "
                   "| run / run_batch | array / list |\n|---|---|---|---|---|---|---|---|---|\n")


def per_call_rows(size: int, one_at_a_time: int, repeats: int,
                  mismatches: list[str]) -> list[str]:
    """The Python API (docs/python.md) on sort, hist and reverse at n = 64, as a user calls
    it: `Program.run([x])` on one input at a time (the first `one_at_a_time` inputs, a
    call each, as a notebook does), `run` on the whole list of `size` inputs, `run_batch`
    on that list of str and on the same inputs as one `<U1` character array. Microseconds
    per input, CPU time, interleaved medians of `repeats`; the fixed cost of a call is run
    on one input less the batch rate (run_batch on the list). The outputs must agree, as
    typed values (a difference goes to `mismatches`). Printed; Markdown rows returned."""
    batch = random_batch(random.Random(37), 64, size)
    characters = np.array(["".join(batch)]).view("U1").reshape(size, 64)
    singles = batch[:one_at_a_time]
    print(f"\nthe Python API per call (Program.run, run_batch) on {size:,} inputs at n = 64 "
          f"(run one input a call on the first {one_at_a_time:,}), us per input, interleaved "
          "medians")
    print(f"{'program':8} {'one':>7} {'fixed':>7} {'run':>7} {'batch':>7} {'array':>7} "
          f"{'run/batch':>10} {'array/list':>11}")
    rows = []
    for name in PROGRAMS:
        source = programs()[name]
        program = rasp_sim.parse(source.source, file=source.file)
        on_list = program.run(batch, source.sop)
        typed = [[(type(x), x) for x in row] for row in on_list]
        others = {"one at a time": [program.run([x], source.sop)[0] for x in singles],
                  "run_batch": program.run_batch(batch, source.sop).tolist(),
                  "run_batch on the array": program.run_batch(characters, source.sop).tolist()}
        for label, values in others.items():
            if [[(type(x), x) for x in row] for row in values] != typed[:len(values)]:
                mismatches.append(f"{name} n=64 Program.run vs {label}: values differ")
        runs = {
            "one": lambda: cpu_seconds(lambda: [program.run([x], source.sop) for x in singles]),
            "run": lambda: cpu_seconds(lambda: program.run(batch, source.sop)),
            "batch": lambda: cpu_seconds(lambda: program.run_batch(batch, source.sop)),
            "array": lambda: cpu_seconds(lambda: program.run_batch(characters, source.sop)),
        }
        seconds = interleaved_medians(runs, repeats)
        us = {k: 1e6 * v / (one_at_a_time if k == "one" else size) for k, v in seconds.items()}
        fixed = us["one"] - us["batch"]
        cells = [f"{us[k]:.2f}" for k in ("one",)] + [f"{fixed:.2f}"] + [
            f"{us[k]:.3f}" for k in ("run", "batch", "array")]
        ratios = [f"{us['run'] / us['batch']:.1f}x", f"{us['array'] / us['batch']:.2f}x"]
        print(f"{name:8} {cells[0]:>7} {cells[1]:>7} {cells[2]:>7} {cells[3]:>7} "
              f"{cells[4]:>7} {ratios[0]:>10} {ratios[1]:>11}", flush=True)
        rows.append(f"| {name} | 64 | {' | '.join(cells)} | {' | '.join(ratios)} |")
    return rows


# The library's constructions at the lengths their layouts need (every position a
# parameter), as (source, n).
LIBRARY = {
    "matmul 4x4x4": ('load "linalg";\ny = matmul(tokens_float, 4, 4, 4);\n', 32),
    "softmax 4x4": ('load "linalg";\ny = softmax(tokens_float, 4, 4);\n', 16),
    "U n = d = 4": ('load "attention";\ny = attention(tokens_float, 4, 4, 4, 4, 0.5);\n', 80),
    "encoder n = d = 2": ('load "attention";\n'
                          'y = encoder(tokens_float, 2, 2, 2, 2, 1, 2, 0.5, "post");\n', 32),
    "inverse 4x4": ('load "linalg";\ny = inverse(tokens_float, 4);\n', 16),
}


def library_rows(repeats: int, size: int, tracr_sample: int, original: Original | None,
                 original_sample: int, mismatches: list[str]) -> list[str]:
    """The library's constructions on `size` random float layouts, against tracr's evaluator
    and the original on the first layouts (printed; Markdown rows returned). Their outputs
    must agree with rasp-sim's within `_close`; a disagreement goes to `mismatches`."""
    print(f"\nthe library's constructions on {size} random layouts (uniform in [-1, 1]); "
          f"tracr (benchmarks/tracr_translation.py) on the first {tracr_sample}"
          + (f", the original (benchmarks/original_translation.py) on the first "
             f"{original_sample}" if original else "") + "; CPU time, median of runs")
    print(f"{'construction':18} {'n':>3} {'rasp-sim seq/s':>15} {'tracr seq/s':>12} "
          f"{'original seq/s':>15} {'vs tracr':>9} {'vs original':>12}")
    rng = np.random.default_rng(0)
    evaluator = MemoizedEvaluator()
    rows = []
    for name, (source, n) in LIBRARY.items():
        interpreter = Interpreter()
        interpreter.run_source(source, f"<{name}>")
        root = interpreter.lookup("y")
        batch = rng.uniform(-1, 1, (size, n))
        ours = np.asarray(evaluate_batch([root], batch)[root].tolist(), dtype=float)
        expression = to_tracr(root)
        tracr_inputs = batch[:tracr_sample].tolist()

        def tracr_run() -> list:
            return [evaluator.evaluate(expression, x) for x in tracr_inputs]

        if not _close(ours[:tracr_sample], tracr_run()):
            mismatches.append(f"{name} tracr: outputs differ from rasp-sim's")
        runs = {"ours": lambda: cpu_seconds(lambda: evaluate_batch([root], batch)),
                "tracr": lambda: cpu_seconds(tracr_run)}
        if original:
            program = Program(original_source(root, batch[0].tolist()), f"<{name}>", "y")
            original_inputs = batch[:original_sample].tolist()
            if not _close(ours[:original_sample], original.run(program, original_inputs)[0]):
                mismatches.append(f"{name} original: outputs differ from rasp-sim's")
            runs["original"] = lambda: original.run(program, original_inputs)[1]
        seconds = interleaved_medians(runs, repeats)
        rate, tracr_rate = size / seconds["ours"], tracr_sample / seconds["tracr"]
        original_cells = ["-", "-"]
        if original:
            original_rate = original_sample / seconds["original"]
            original_cells = [f"{original_rate:,.2f}", f"{rate / original_rate:,.0f}x"]
        print(f"{name:18} {n:>3} {rate:>15,.0f} {tracr_rate:>12,.1f} {original_cells[0]:>15} "
              f"{rate / tracr_rate:>8,.0f}x {original_cells[1]:>12}", flush=True)
        rows.append(f"| {name} | {n} | {rate:,.0f} | {1e6 / rate:.1f} | {tracr_rate:,.1f} | "
                    f"{original_cells[0]} | {rate / tracr_rate:,.0f}x | {original_cells[1]} |")
    return rows


def _close(ours: np.ndarray, theirs: list) -> bool:
    """Equal up to rounding: tracr and the original compute a `sum` as mean x count and the
    original `exp` as pow(e, x), which differ from rasp-sim's in the last bits (1e-16 here);
    1e-9 relative is far above that and far below any error of an algorithm."""
    theirs_array = np.asarray(theirs, dtype=float)
    return theirs_array.shape == ours.shape and bool(
        np.allclose(theirs_array, ours, rtol=1e-9, atol=1e-12))


if __name__ == "__main__":
    sys.exit(main())
