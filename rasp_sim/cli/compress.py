"""`rasp-sim compress`: a compiled model's residual stream compressed, with a certificate
on every input of its domain (docs/compiler.md#compression-with-a-certificate,
docs/cli.md "Compress a compiled model").

jax and optax (the `train` extra) are imported inside the handler.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ..base.api_arguments import MODEL_SUFFIXES
from ..base.counts import positive, seed_number
from ..base.program_files import check_regular
from .json_text import json_text
from .options import (add_json_option, add_memory_limit_option, add_unvalidated_option,
                      check_output, checked_scheduler)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compress", help="compress a compiled model's residual stream, certified on every input",
        description="Store MODEL's residual stream as h W with W D x WIDTH: W starts from the "
        "principal directions of the residual states over the whole domain and, below their "
        "rank, is trained on the output loss plus each layer's residual MSE (jax, optax). "
        "The compressed model is compared with the program on every input of the domain: "
        "it is written validated if exact on all of them, else marked unvalidated (exit 1).")
    parser.add_argument("model", help="the compiled model (.npz or .safetensors)")
    width = parser.add_mutually_exclusive_group(required=True)
    width.add_argument("--width", type=positive, metavar="D",
                       help="the compressed residual width, 1..the model's width")
    width.add_argument("--find-width", action="store_true",
                       help="search for the smallest width certified exact (bisection below "
                       "the rank bound; every width tried is printed) and write that model")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.npz",
                        help="where to write the compressed model (.npz or .safetensors)")
    parser.add_argument("--program", metavar="FILE",
                        help="the .rasp program to certify against (default: the one the "
                        "model's compile record names, read from the model's folder)")
    parser.add_argument("--seed", type=seed_number, default=0,
                        help="seed of the training sample of a domain above "
                        "1024 inputs (default 0)")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="Adam steps of training below the rank bound (default 300)")
    parser.add_argument("--orthogonal", action="store_true",
                        help="train an orthonormal W (default: a free W)")
    parser.add_argument("--plot", metavar="CURVE.png",
                        help="with --find-width: a PNG of the wrong inputs against the width")
    parser.add_argument("--workers", type=positive, default=None, metavar="N",
                        help="processes of the local Dask cluster for the certificate "
                        "(default: this machine's cores; small domains run here)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run the certificate's chunks on an existing Dask scheduler")
    add_unvalidated_option(parser)
    add_memory_limit_option(parser, "weights file read, estimated before any work")
    add_json_option(parser)
    parser.set_defaults(handler=run_compress)


def run_compress(args: argparse.Namespace) -> int:
    from . import UsageError

    if args.plot is not None and not args.find_width:
        raise UsageError("--plot draws the --find-width curve: add --find-width")
    if args.steps is not None and args.steps < 0:
        raise UsageError(f"--steps {args.steps}: expected a number of steps >= 0")
    if os.path.splitext(args.output)[1].lower() not in MODEL_SUFFIXES:
        raise UsageError(f"-o {args.output}: a model file ends in .npz or .safetensors (the "
                         "suffix says the format)")
    check_output(args.output, args.model, args.program)
    if args.plot is not None and not args.plot.lower().endswith(".png"):
        raise UsageError(f"--plot {args.plot}: the curve is drawn as a .png")
    if args.plot is not None:
        check_output(args.plot, args.model, args.program, args.output)
    if args.scheduler is not None:
        checked_scheduler(args.scheduler)
    from ..compiled.model import Model
    from ..compiler import load_compiled
    from ..compression import program_sop, require_training
    from ..compression.certified import (COMPRESSION_KEY, DEFAULT_STEPS, Settings,
                                         compress_weights_certified, describe)
    from ..api import load

    require_training()
    check_regular(args.model, "weights")  # a FIFO would block the loader
    weights, warning = load_compiled(args.model, args.allow_unvalidated, args.memory_limit)
    if warning:
        print(warning, file=sys.stderr)
    program = None if args.program is None else load(args.program)
    root = program_sop(weights, program, Path(args.model).absolute().parent)
    settings = Settings(steps=DEFAULT_STEPS if args.steps is None else args.steps,
                        seed=args.seed, orthogonal=args.orthogonal, workers=args.workers,
                        scheduler=args.scheduler)
    if args.find_width:
        return _find_width(args, weights, root, settings)
    compressed = compress_weights_certified(weights, root, args.width, settings)
    Model(compressed).save(args.output)
    record = compressed.metadata[COMPRESSION_KEY]
    if args.json:
        print(json_text(record))
    else:
        print(f"{args.model} -> {args.output}: {describe(record)}")
    if not record["certificate"]["exact"]:
        print(f"warning: {args.output} is written UNVALIDATED (the compression is not exact "
              "on the whole domain); run and verify need --allow-unvalidated", file=sys.stderr)
        return 1
    return 0


def _find_width(args: argparse.Namespace, weights: Any, root: Any, settings: Any) -> int:
    from ..compiled.model import Model
    from ..compression.certified import COMPRESSION_KEY
    from ..compression.search import find_width, plot_curve

    def report(line: str) -> None:
        if not args.json:
            print(line, flush=True)

    tried, found = find_width(weights, root, settings, report)
    curve = [{"width": t.width, "wrong": t.wrong, "exact": t.exact} for t in tried]
    bound = tried[0].weights.metadata[COMPRESSION_KEY]["rank_bound"]
    if args.plot is not None:
        plot_curve(tried, bound, weights.width, f"{args.model}: compression", args.plot)
    if found is not None:
        Model(found.weights).save(args.output)
    if args.json:
        print(json_text({"source_width": weights.width, "rank_bound": bound, "curve": curve,
                         "smallest": None if found is None else found.width,
                         "output": None if found is None else args.output}))
    elif found is not None:
        print(f"smallest certified width: {found.width} (of {weights.width}; rank bound "
              f"{bound}) -> {args.output}")
    if found is None:
        print("no width was certified exact: nothing written", file=sys.stderr)
        return 1
    return 0

