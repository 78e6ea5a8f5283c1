"""`rasp-sim universal`: build fixed universal transformers, embed targets, verify.

    rasp-sim universal build --heads H --layers L --dim d [--head-dim k] [--out-dim c]
                             [--tied] [--residual] [--mask causal|full] [--random SEED [--m M]]
                             -o ut.npz
    rasp-sim universal target --heads H --layers L --dim d ... --seed S -o target.npz
    rasp-sim universal embed TARGET.npz --ut ut.npz -o E.npy
    rasp-sim universal verify TARGET.npz --ut ut.npz [--embedding E.npy] [--lengths 1-32]

NumPy only (no tracr, no jax); the compiler modules are imported inside the handlers so
other subcommands start fast.
"""
from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from . import UsageError


def _shape_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--heads", type=int, required=True, metavar="H", help="heads per layer")
    parser.add_argument("--layers", type=int, required=True, metavar="L", help="layers")
    parser.add_argument("--dim", type=int, required=True, metavar="d",
                        help="the targets' input (model) dimension")
    parser.add_argument("--head-dim", type=int, metavar="k", help="query/key width (default d)")
    parser.add_argument("--out-dim", type=int, metavar="c", help="output width (default d)")
    parser.add_argument("--residual", action="store_true",
                        help="targets (and the UT) have residual connections")
    parser.add_argument("--mask", choices=("causal", "full"), default="causal",
                        help="attention mask of targets and UT (default causal)")


def _output_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help=f"write {what} here")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _shape(args: argparse.Namespace):
    from rasp_sim.compiler.universal.target import Shape
    return Shape(dim=args.dim, head_dim=args.head_dim or args.dim, out_dim=args.out_dim or args.dim,
                 heads=args.heads, layers=args.layers, residual=args.residual,
                 causal=args.mask == "causal")


def _emit(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        print(f"{key}: {value}")


def build(args: argparse.Namespace) -> int:
    from rasp_sim.compiler.universal.gaussian import build_random
    from rasp_sim.compiler.universal.report import size_report
    from rasp_sim.compiler.universal.sparse import build_sparse
    from rasp_sim.compiler.weights import save

    if args.m is not None and args.random is None:
        raise UsageError("--m only applies to random universal transformers (--random SEED)")
    started = time.perf_counter()
    shape = _shape(args)
    if args.random is None:
        ut = build_sparse(shape, args.tied)
    else:
        ut = build_random(shape, args.random, args.tied, args.m)
    seconds = time.perf_counter() - started
    save(ut, args.output)
    report = size_report(ut)
    if not args.json:  # per-layer non-zero lists are long; summarise them for people
        report["nonzeros"] = {name: sum(v) if isinstance(v, list) else v
                              for name, v in report["nonzeros"].items()}
    _emit({**report, "seconds": round(seconds, 4), "output": args.output}, args.json)
    return 0


def target(args: argparse.Namespace) -> int:
    from rasp_sim.compiler.universal.target import random_target
    from rasp_sim.compiler.weights import save

    save(random_target(_shape(args), args.seed), args.output)
    _emit({"target": args.output, "seed": args.seed, "heads": args.heads, "layers": args.layers,
           "dim": args.dim}, args.json)
    return 0


def _embed(args: argparse.Namespace):
    from rasp_sim.compiler.universal.embed import embed
    from rasp_sim.compiler.weights import load

    ut, model = load(args.ut), load(args.target)
    started = time.perf_counter()
    return ut, model, embed(model, ut), time.perf_counter() - started


def _embedding_facts(embedding, seconds: float) -> dict[str, Any]:
    facts: dict[str, Any] = {"m": embedding.matrix.shape[1], "d": embedding.matrix.shape[0],
                             "kind": embedding.kind, "embed_seconds": round(seconds, 4)}
    if embedding.condition is not None:
        facts.update(condition=embedding.condition, solve_residual=embedding.residual)
    return facts


def embed_command(args: argparse.Namespace) -> int:
    _, _, embedding, seconds = _embed(args)
    np.save(args.output, embedding.matrix, allow_pickle=False)
    _emit({**_embedding_facts(embedding, seconds), "output": args.output}, args.json)
    return 0


def _load_embedding(path: str, embedding):
    """Replace the computed E by the one in `path` (checked by `program` when verifying)."""
    from dataclasses import replace

    from rasp_sim.compiler.universal.errors import UniversalError

    try:
        matrix = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise UniversalError(f"embedding: cannot read {path} ({error})") from None
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.floating):
        raise UniversalError(f"embedding: {path} holds a {matrix.dtype} array of shape "
                             f"{matrix.shape}, not a d x m float matrix")
    if not np.all(np.isfinite(matrix)):
        raise UniversalError(f"embedding: {path} contains non-finite values")
    return replace(embedding, matrix=matrix.astype(np.float64))


def parse_lengths(text: str) -> tuple[int, ...]:
    """'1-32' or '1,5,9' -> lengths (an argparse type)."""
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-", 1))
            lengths = tuple(range(low, high + 1))
        else:
            lengths = tuple(int(part) for part in text.split(","))
        if not lengths or min(lengths) < 1:
            raise ValueError
        return lengths
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid lengths {text!r}: use a range such as 1-32 or a list such as 1,5,9") from None


def verify_command(args: argparse.Namespace) -> int:
    from rasp_sim.compiler.universal.verify import verify

    ut, model, embedding, seconds = _embed(args)
    if args.embedding:
        embedding = _load_embedding(args.embedding, embedding)
    result = verify(ut, embedding, model, lengths=args.lengths, batch=args.batch, seed=args.seed)
    _emit({**_embedding_facts(embedding, seconds),
           "max_error": result.max_error, "scale": result.scale,
           "relative_error": result.relative_error, "tolerance": result.tolerance,
           "passed": result.passed, "sequences": result.sequences,
           "lengths": f"{min(result.lengths)}..{max(result.lengths)}",
           "verify_seconds": round(result.seconds, 4)}, args.json)
    return 0 if result.passed else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "universal", help="fixed universal transformers: build, embed a target, verify",
        description="One transformer with fixed weights simulates every target of a class "
        "T(d, k, c, H, L) once its input embedding E encodes the target (Liu, Andoni, Hsu).")
    commands = parser.add_subparsers(dest="universal_command", metavar="ACTION", required=True)

    build_parser = commands.add_parser("build", help="write a fixed universal transformer")
    _shape_options(build_parser)
    build_parser.add_argument("--tied", action="store_true",
                              help="looped: the same weights in every layer")
    build_parser.add_argument("--random", type=int, metavar="SEED",
                              help="i.i.d. Gaussian weights from SEED instead of the sparse "
                              "{0,1} construction")
    build_parser.add_argument("--m", type=int, metavar="M",
                              help="width of a random UT (default: the constraint count C)")
    _output_options(build_parser, "the universal transformer (.npz)")
    build_parser.set_defaults(handler=build)

    target_parser = commands.add_parser("target", help="write a random target transformer")
    _shape_options(target_parser)
    target_parser.add_argument("--seed", type=int, required=True, help="random seed")
    _output_options(target_parser, "the target (.npz)")
    target_parser.set_defaults(handler=target)

    for name, handler, help_text in (
            ("embed", embed_command, "compute the embedding E of a target"),
            ("verify", verify_command, "check UT(X; E) = T(X) on random inputs")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("target", metavar="TARGET.npz", help="the target, in the weight format")
        sub.add_argument("--ut", required=True, metavar="UT.npz", help="the universal transformer")
        if name == "embed":
            _output_options(sub, "E (.npy)")
        else:
            sub.add_argument("--embedding", metavar="E.npy",
                             help="verify this E instead of computing it")
            sub.add_argument("--lengths", type=parse_lengths, default=tuple(range(1, 33)),
                             help="sequence lengths, e.g. 1-32 (default) or 1,5,9")
            sub.add_argument("--batch", type=int, default=4, help="sequences per length")
            sub.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
            sub.add_argument("--json", action="store_true", help="print the result as JSON")
        sub.set_defaults(handler=handler)
