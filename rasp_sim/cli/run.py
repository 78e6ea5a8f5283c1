"""`rasp-sim run`: evaluate a named s-op of a program (or a compiled model) on inputs."""
from __future__ import annotations

import argparse
import functools
import sys
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..base.errors import RaspError, Span
from ..base.limits import ATOM_MEMORY_SHARE
from ..base.program_files import check_regular
from . import UsageError
from .inputs import BadInput, Entries, atoms, command_line_input, read_inputs_file
from .output import Printer
from .options import (
    add_input_options, add_json_option, add_language_options, add_memory_limit_option,
    add_name_option, add_unvalidated_option, refuse_options,
)

# Inputs are evaluated in chunks of this many so the progress bar can advance; the
# evaluator itself splits a chunk further where memory requires.
CHUNK = 2048
PROGRESS_THRESHOLD = 5000
# An inputs file may take this fraction of --memory-limit: parsed, its inputs take
# several times the space of their text.
INPUTS_FILE_SHARE = 8


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="evaluate a program's s-op on inputs",
        description="Run FILE and evaluate the s-op or selector NAME on each input.",
    )
    parser.add_argument("file", nargs="?", help="the .rasp program")
    add_name_option(parser, "the s-op to evaluate (default: the last one assigned)")
    add_input_options(parser)
    add_json_option(parser, "print one JSON object per input")
    parser.add_argument("--fail-fast", action="store_true",
                        help="stop at the first input of --inputs that fails (by default "
                        "every input runs, and a failing one's error is printed in its place)")
    parser.add_argument("--weights", metavar="MODEL",
                        help="run a compiled model (from rasp-sim compile, .npz or "
                        ".safetensors) instead of a program")
    add_unvalidated_option(parser)
    parser.add_argument("--example", metavar="TEXT",
                        help="run the program as the original interpreter would, with TEXT "
                        "(parsed like --input) as its running example: every statement is "
                        "checked on it, and one that fails there is reported and binds "
                        "nothing, an earlier binding staying; for programs written for the "
                        "original")
    parser.add_argument("--strict-statements", action="store_true",
                        help="refuse the program (exit 1) if any statement fails; by default "
                        "a failing statement the evaluated name does not depend on is a "
                        "warning")
    add_language_options(parser)
    add_memory_limit_option(parser, "evaluation working set; bigger batches are split, a "
                            "single input that does not fit is refused; the lists, strings "
                            f"and dicts the program builds may take 1/{ATOM_MEMORY_SHARE} of it")
    parser.set_defaults(handler=run)


# The options of a program run that a compiled model has no use for, and why.
NOT_FOR_WEIGHTS = {
    "exact": "a compiled model computes in float64",
    "strict": "a compiled model runs no RASP source",
    "sandbox": "a compiled model loads no RASP files",
    "name": "a compiled model computes the one s-op it was compiled from",
    "example": "a compiled model runs no RASP statements",
    "strict_statements": "a compiled model runs no RASP statements",
}


def run(args: argparse.Namespace) -> int:
    if args.weights and args.file:
        raise UsageError("give either a program FILE or --weights MODEL, not both")
    if not args.weights and not args.file:
        raise UsageError("a program FILE is required (or --weights MODEL)")
    if args.weights:
        refuse_options(args, NOT_FOR_WEIGHTS, "--weights")
    else:
        refuse_options(args, {"allow_unvalidated": "it is for a compiled model's file"},
                       "a program FILE")
    entries = _collect_inputs(args)
    name, columns = _weights_columns(args) if args.weights else _program_columns(args)
    printer = Printer(name, args.json)
    # --input runs stop at the first error as they always did; a file keeps going.
    fail_fast = args.fail_fast or not args.inputs
    failed = 0
    for start in _progress(range(0, len(entries), CHUNK), len(entries)):
        chunk = entries[start:start + CHUNK]
        lines, chunk_failed = _chunk_entries(columns, printer, chunk, start, fail_fast)
        failed += chunk_failed
        sys.stdout.write("\n".join(lines) + "\n")
    if failed:
        print(f"rasp-sim: {failed:,} of {len(entries):,} inputs failed (each error is printed "
              "in place of its input's output)", file=sys.stderr)
        return 1
    return 0


# The evaluation of a list of inputs: (positions in the list, output column) per group.
# The int is the index of the list's first input in the whole batch, for error messages.
Columns = Callable[["Sequence[Any] | np.ndarray", int], Iterator[tuple[list[int], Any]]]


def _program_columns(args: argparse.Namespace) -> tuple[str, Columns]:
    from ..language.call_sites import at_call_site, binding_span
    from .program import run_statements

    example = None
    if args.example is not None:
        example = atoms(command_line_input(args.example, 1, exact=args.exact))
    program = run_statements(args.file, args.name, exact=args.exact, strict=args.strict,
                             sandbox=args.sandbox, example=example,
                             strict_statements=args.strict_statements,
                             memory_limit=args.memory_limit)
    name = program.node(args.name)[0]  # a missing name fails before any input runs

    @functools.cache  # parsed once, at the first error: a batch may raise thousands
    def binding() -> Span | None:
        return binding_span(args.file, name)

    def columns(inputs: Sequence[Any] | np.ndarray,
                first_index: int) -> Iterator[tuple[list[int], Any]]:
        try:
            yield from program.evaluate_groups(inputs, name, memory_limit=args.memory_limit,
                                               first_index=first_index)
        except RaspError as error:  # a library's line: shown as a note of the user's own
            raise at_call_site(error, binding()) from None

    return name, columns


def _weights_columns(args: argparse.Namespace) -> tuple[str, Columns]:
    from rasp_sim.compiler import compile_info, load_compiled, run_weights

    check_regular(args.weights, "weights")  # a FIFO would block the loader
    model, warning = load_compiled(args.weights, args.allow_unvalidated, args.memory_limit)
    if warning:
        print(warning, file=sys.stderr)
    proof = compile_info(model).get("proof")
    if isinstance(proof, dict):  # what was proven about this model, once, before its outputs
        from .compile import describe_proof

        print(f"{args.weights}: {describe_proof(proof)}", file=sys.stderr)

    def columns(inputs: Sequence[Any] | np.ndarray,
                first_index: int) -> Iterator[tuple[list[int], Any]]:
        # the model's token lookup wants Python atoms, not NumPy scalars
        yield list(range(len(inputs))), run_weights(model, [atoms(x) for x in inputs])

    return args.weights, columns


def _collect_inputs(args: argparse.Namespace) -> Entries:
    if not args.inputs:
        return [command_line_input(text, number, exact=args.exact)
                for number, text in enumerate(args.input_texts, start=1)]
    entries = read_inputs_file(args.inputs, exact=args.exact,
                               max_bytes=args.memory_limit // INPUTS_FILE_SHARE)
    if args.fail_fast and isinstance(entries, list):  # (a matrix holds no BadInput)
        for entry in entries:
            if isinstance(entry, BadInput):
                raise entry.error
    return entries


def _progress(starts: range, total: int) -> Iterable[int]:
    # A bar only where someone watches: tqdm (slow to import) is not loaded otherwise.
    if total < PROGRESS_THRESHOLD or not sys.stderr.isatty():
        return starts
    from tqdm import tqdm

    return tqdm(starts, desc="evaluating", unit="chunk", file=sys.stderr)


def _chunk_entries(columns: Columns, printer: Printer, chunk: Entries, start: int,
                   fail_fast: bool) -> tuple[list[str], int]:
    """The printed entries of chunk (inputs start.. of the batch), and how many failed.

    The chunk is evaluated vectorised; only if that raises (and not fail_fast) is it
    halved, and halved again, until each failing input stands alone."""
    entries: list[str] = [""] * len(chunk)
    failures: dict[int, RaspError] = {}
    positions = []
    if isinstance(chunk, np.ndarray):  # inputs read in bulk: all valid
        positions = list(range(len(chunk)))
    else:
        for k, entry in enumerate(chunk):
            if isinstance(entry, BadInput):
                entries[k] = printer.failure(entry.text, entry.error)
                failures[k] = entry.error
            else:
                positions.append(k)
    results: list[tuple[list[int], Any]] = []
    if fail_fast:  # no BadInput here: the whole chunk at once, errors raised
        results = list(columns(chunk, start))
    elif positions:
        _settle(columns, chunk, positions, start, results, failures)
    for ids, column in results:
        for k, text in zip(ids, printer.outputs(_pick(chunk, ids), column)):
            entries[k] = text
    for k, error in failures.items():
        if not isinstance(chunk[k], BadInput):
            entries[k] = printer.failure(chunk[k], error)
    return entries, len(failures)


def _settle(columns: Columns, chunk: Entries, positions: list[int], start: int,
            results: list[tuple[list[int], Any]], failures: dict[int, RaspError]) -> None:
    """Evaluate chunk[k] for k in positions, appending (chunk positions, column) to results
    and each input that fails alone to failures."""
    try:
        for ids, column in list(columns(_pick(chunk, positions), start + positions[0])):
            results.append(([positions[i] for i in ids], column))
    except RaspError as error:
        if len(positions) == 1:
            failures[positions[0]] = error
            return
        middle = len(positions) // 2
        _settle(columns, chunk, positions[:middle], start, results, failures)
        _settle(columns, chunk, positions[middle:], start, results, failures)


def _pick(chunk: Entries, positions: list[int]) -> Entries:
    """chunk's inputs at `positions`, a matrix's as a matrix (evaluated whole)."""
    if isinstance(chunk, np.ndarray):
        whole = positions == list(range(len(chunk)))  # the usual case: no copy
        return chunk if whole else chunk[positions]
    return [chunk[k] for k in positions]
