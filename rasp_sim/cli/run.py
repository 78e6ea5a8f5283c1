"""`rasp-sim run`: evaluate a named s-op of a program (or a compiled model) on inputs."""
from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import Any, Callable, Sequence

from ..display import type_label
from . import UsageError
from .inputs import parse_input, read_inputs_file
from .program import add_sandbox_option

# Inputs are evaluated in chunks of this many so the progress bar can advance; the
# evaluator itself splits a chunk further where memory requires.
CHUNK = 2048
PROGRESS_THRESHOLD = 5000


def parse_size(text: str) -> int:
    """'4GiB', '512MiB', '100000' -> bytes (an argparse type)."""
    units = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "kb": 10**3,
             "mb": 10**6, "gb": 10**9, "b": 1, "": 1}
    lowered = text.strip().lower()
    number = lowered.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = lowered[len(number):]
    try:
        if unit not in units:
            raise ValueError
        size = int(float(number) * units[unit])
        if size <= 0:
            raise ValueError
        return size
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r}: use a positive number of bytes or e.g. 512MiB, 4GiB"
        ) from None


def add_language_options(parser: argparse.ArgumentParser) -> None:
    """The arithmetic and dialect options of every command that runs RASP programs."""
    parser.add_argument("--exact", action="store_true",
                        help="exact rational arithmetic (fractions) instead of float64")
    parser.add_argument("--strict", action="store_true",
                        help="disable every extension: accept only what the original RASP "
                        "accepts")
    add_sandbox_option(parser)


def add_evaluation_options(parser: argparse.ArgumentParser) -> None:
    """Options of commands that evaluate batches: the language options and the memory
    limit."""
    add_language_options(parser)
    parser.add_argument("--memory-limit", type=parse_size, default=parse_size("4GiB"),
                        metavar="SIZE", help="largest evaluation working set; bigger batches "
                        "are split, a single input that does not fit is refused (default 4GiB)")


def add_input_options(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", action="extend", nargs="+", dest="input_texts",
                        metavar="TEXT",
                        help="inputs: each a JSON list such as '[3, 1, 2]', or text whose "
                        "characters are the tokens (several after one --input, or repeat it)")
    source.add_argument("--inputs", metavar="FILE",
                        help="a file with one input per line (JSON lists or plain text)")


def add_unvalidated_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-unvalidated", action="store_true",
                        help="use a compiled model that is not validated (written by "
                        "compile --force), with a warning; refused otherwise")


def collect_inputs(args: argparse.Namespace) -> list:
    if args.inputs:
        return read_inputs_file(args.inputs)
    return [parse_input(text) for text in args.input_texts]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="evaluate a program's s-op on inputs",
        description="Run FILE and evaluate the s-op or selector NAME on each input.",
    )
    parser.add_argument("file", nargs="?", help="the .rasp program")
    parser.add_argument("--name", help="the s-op to evaluate (default: the last one assigned)")
    add_input_options(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object per input")
    parser.add_argument("--weights", metavar="MODEL",
                        help="run a compiled model (from rasp-sim compile, .npz or "
                        ".safetensors) instead of a program")
    add_unvalidated_option(parser)
    add_evaluation_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    inputs = collect_inputs(args)
    if args.weights:
        if args.file:
            raise UsageError("give either a program FILE or --weights MODEL, not both")
        from ..compiler.tracr_backend.runtime import load_compiled, run_weights

        model, warning = load_compiled(args.weights, args.allow_unvalidated, args.memory_limit)
        if warning:
            print(warning, file=sys.stderr)
        name = args.weights
        outputs = in_chunks(lambda chunk: run_weights(model, chunk), inputs)
    else:
        if not args.file:
            raise UsageError("a program FILE is required (or --weights MODEL)")
        from ..evaluate import evaluate
        from .program import load_named_node

        name, node = load_named_node(args.file, args.name, exact=args.exact,
                                     strict=args.strict, sandbox=args.sandbox)

        def evaluate_chunk(chunk: list) -> list:
            results = evaluate([node], chunk, exact=args.exact,
                               memory_limit_bytes=args.memory_limit)
            return [per_input[0] for per_input in results]

        outputs = in_chunks(evaluate_chunk, inputs)
    for sequence, output in zip(inputs, outputs):
        print(format_json(sequence, output) if args.json else format_text(name, sequence, output))
    return 0


def in_chunks(function: Callable[[list], list], inputs: list) -> list:
    """`function` over `inputs` chunk by chunk, with a progress bar for large batches."""
    chunks = [inputs[i:i + CHUNK] for i in range(0, len(inputs), CHUNK)]
    if len(inputs) >= PROGRESS_THRESHOLD:
        from tqdm import tqdm

        chunks = tqdm(chunks, desc="evaluating", unit="chunk", file=sys.stderr, disable=None)
    outputs: list = []
    for chunk in chunks:
        outputs.extend(function(chunk))
    return outputs


def _is_selector_value(output: Sequence[Any]) -> bool:
    return bool(output) and isinstance(output[0], list)


def format_text(name: str, sequence: Any, output: Sequence[Any]) -> str:
    """`name("hello") = [o, l, l, e, h] (strings)`; a selector as its 0/1 matrix."""
    shown = json.dumps(sequence) if isinstance(sequence, str) else _list_text(sequence)
    head = f"{name}({shown})"
    if _is_selector_value(output):
        rows = ["  " + " ".join("1" if selected else "." for selected in row) for row in output]
        return "\n".join([f"{head} = selector (query rows, key columns):", *rows])
    return f"{head} = {_list_text(output)} ({type_label(list(output))})"


def format_json(sequence: Any, output: Sequence[Any]) -> str:
    if _is_selector_value(output):
        return json.dumps({"input": sequence, "selector": output})
    return json.dumps({"input": sequence, "output": [_json_atom(x) for x in output],
                       "type": type_label(list(output))})


def _list_text(values: Sequence[Any]) -> str:
    return "[" + ", ".join(_atom_text(x) for x in values) + "]"


def _atom_text(x: Any) -> str:
    # Full precision: a research tool must not hide the last digits (repr of floats).
    if isinstance(x, float):
        return repr(x)
    return str(x)


def _json_atom(x: Any) -> Any:
    # JSON has no rationals: exact results are written as "p/q" strings.
    if isinstance(x, Fraction):
        return str(x) if x.denominator != 1 else x.numerator
    return x
