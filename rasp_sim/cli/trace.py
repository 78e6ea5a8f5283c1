"""`rasp-sim trace`: a compiled model's computation on one input, block by block."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Sequence

import numpy as np

from . import UsageError
from .output_file import add_format_option, is_standard_output, output_file, output_format
from .options import (add_json_option, add_memory_limit_option, add_unvalidated_option,
                      check_output)

if TYPE_CHECKING:
    from ..compiled.model import Model
    from ..compiled.trace import HeadPattern, Trace

FIGURE_FORMATS = ("png", "svg", "pdf")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "trace", help="a compiled model's residual stream and attention on one input",
        description="Run the compiled MODEL on one input and show what every block computes: "
        "the s-ops each block writes into the residual stream, read off it, and where each "
        "head attends; --json gives every array, -o a figure of the residual stream and the "
        "attention patterns.")
    add_model_and_input(parser)
    output = parser.add_mutually_exclusive_group()
    add_json_option(output, "print the whole trace (every array) as JSON")
    output.add_argument("-o", "--output", metavar="OUT",
                        help="write the figure: OUT.png, OUT.svg or OUT.pdf; - for "
                        "standard output (in --format)")
    add_format_option(parser, FIGURE_FORMATS)
    add_unvalidated_option(parser)
    add_memory_limit_option(parser, "size of the model's arrays to read")
    parser.set_defaults(handler=run_trace)


def add_model_and_input(parser: argparse.ArgumentParser) -> None:
    """MODEL and --input, as `trace` and `report` take them."""
    parser.add_argument("model", metavar="MODEL", help="a compiled model (.npz or .safetensors)")
    parser.add_argument("--input", required=True, metavar="TEXT",
                        help="the input: a JSON list such as '[3, 1, 2]', or text whose "
                        "characters are the tokens")


def output_and_model(args: argparse.Namespace, formats: Sequence[str]
                     ) -> tuple[str | None, "Model"]:
    """The format of -o (None without -o; --format only with -o -), checked before any
    work, then MODEL loaded with the CLI's checks, its warning (if unvalidated) on stderr:
    as `trace` and `circuit` take them."""
    from ..compiled.model import load_model

    chosen = None
    if args.output is not None:
        chosen = output_format(args.output, args.format, formats)
        check_output(args.output, args.model, stream_ok=True)
    elif args.format is not None:
        raise UsageError("--format is for -o - (standard output)")
    model = load_model(args.model, allow_unvalidated=args.allow_unvalidated,
                       memory_limit=args.memory_limit)
    if model.warning:
        print(model.warning, file=sys.stderr)
    return chosen, model


def run_trace(args: argparse.Namespace) -> int:
    from .inputs import atoms, command_line_input

    figure_format, model = output_and_model(args, FIGURE_FORMATS)
    trace = model.trace(atoms(command_line_input(args.input, 1)))
    if args.json:
        print(json.dumps(trace.to_json()))
    elif args.output is not None:
        from ..pictures.trace_plot import write_trace_figure

        with output_file(args.output) as stream:
            write_trace_figure(trace, stream, figure_format or FIGURE_FORMATS[0])
        if not is_standard_output(args.output):
            print(f"wrote {args.output}")
    else:
        print("\n".join(summary(trace)))
    return 0


def summary(trace: "Trace") -> list[str]:
    """Per block: its operations, the s-ops whose residual directions it changes (their
    values read off the stream, BOS left out) and, per head, the keys each query attends
    to most."""
    lines = [f"positions: {' '.join(trace.positions)}"]
    heads: dict[int, list["HeadPattern"]] = {}
    for head in trace.attention:
        heads.setdefault(head.block, []).append(head)
    for block, (before, after) in enumerate(zip(trace.residuals, trace.residuals[1:])):
        kind = "attention" if block in heads else "mlp"
        ops = "; ".join(op.op + (f" at {op.at}" if op.at else "") for op in after.operations)
        lines.append(f"block {block} ({kind}): {ops or '(no operation recorded)'}")
        for head in heads.get(block, []):
            focus = " ".join(f"{q}->{_attended(row)}"
                             for q, row in enumerate(head.pattern) if q > 0)
            lines.append(f"  head {head.head} attends (query->keys): {focus}")
        changed = np.flatnonzero(np.any(np.abs(after.values[1:] - before.values[1:]) > 1e-12, axis=0))
        for sop in dict.fromkeys(trace.residual_labels[i].split(":", 1)[0] for i in changed):
            values = trace.sop_values(sop, block)
            lines.append(f"  {sop} = [{', '.join(_value_text(v) for v in values)}]")
    lines.append(f"output: [{', '.join(str(v) for v in trace.output)}]")
    return lines


def _attended(row: np.ndarray) -> str:
    """The keys a query attends to most: one key, or {k1,k2,...} for a tie (a mean over
    several keys), or `all`; to 1e-9, float64's rounding of tied softmax weights."""
    keys = np.flatnonzero(row >= row.max() - 1e-9)
    if keys.size == 1:
        return str(int(keys[0]))
    return "all" if keys.size == row.size else "{" + ",".join(str(int(k)) for k in keys) + "}"


def _value_text(value: object) -> str:
    if value is None:
        return "?"
    return f"{value:.6g}" if isinstance(value, float) else str(value)
