"""`rasp-sim universal`: build fixed universal transformers, embed targets, verify.

    rasp-sim universal build --heads H --layers L --dim d [--head-dim k] [--out-dim c]
                             [--tied] [--residual] [--mask causal|full] [--random SEED [--m M]]
                             -o ut.npz
    rasp-sim universal build --like MODEL.npz ... -o ut.npz     (the shape of a compiled model)
    rasp-sim universal target --heads H --layers L --dim d ... --seed S -o target.npz
    rasp-sim universal embed TARGET.npz --ut ut.npz -o E.npy
    rasp-sim universal verify TARGET.npz --ut ut.npz [--embedding E.npy] [--lengths 1-32]
    rasp-sim universal verify MODEL.npz --ut ut.npz [--program FILE --name NAME]

A TARGET may be a model written by `rasp-sim compile` (compiler/universal/compiled.py):
verify then checks every input of its domain against the model and the program.

Each action checks its arguments and estimates its memory from the shape (closed forms,
compiler/universal/budget.py) before building or reading anything (--memory-limit).
NumPy only (no tracr, no jax); the compiler modules are imported inside the handlers so
other subcommands start fast.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..base.atomic_write import replacing
from ..base.errors import RaspError
from ..base.counts import positive, seed_number
from ..base.program_files import check_regular
from . import UsageError
from .json_text import json_text
from .options import (
    add_json_option, add_memory_limit_option, add_name_option, add_sandbox_option,
    check_output,
)


def _shape_options(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """The shape T(d, k, c, H, L); `required=False` where --like may give it instead."""
    parser.add_argument("--heads", type=positive, required=required, metavar="H",
                        help="heads per layer")
    parser.add_argument("--layers", type=positive, required=required, metavar="L",
                        help="layers")
    parser.add_argument("--dim", type=positive, required=required, metavar="d",
                        help="the targets' input (model) dimension")
    parser.add_argument("--head-dim", type=positive, metavar="k",
                        help="query/key width (default d)")
    parser.add_argument("--out-dim", type=positive, metavar="c", help="output width (default d)")
    parser.add_argument("--residual", action="store_true",
                        help="targets (and the UT) have residual connections")
    parser.add_argument("--mask", choices=("causal", "full"), default=None,
                        help="attention mask of targets and UT (default causal)")


def _output_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help=f"write {what} to exactly this path")
    add_json_option(parser)
    add_memory_limit_option(parser, "working set, estimated before any work")


def _check_output(path: str, *inputs: str | None) -> None:
    """-o names a file in an existing folder, none of the command's `inputs` (checked
    before the work, not after it)."""
    folder = Path(path).parent
    if Path(path).is_dir():
        raise UsageError(f"-o {path}: is a folder; give a file name")
    if not folder.is_dir():
        raise UsageError(f"-o {path}: the folder {folder} does not exist")
    check_output(path, *inputs)


def _write(path: str, write: Callable[[str], None]) -> None:
    """`write(path)`, an unwritable path reported as an error (exit 1), not a traceback."""
    try:
        write(path)
    except OSError as error:
        raise RaspError(f"cannot write {path}: {error.strerror or error}") from None


def _save_array(path: str, matrix: np.ndarray) -> None:
    with replacing(path) as handle:  # np.save(path) would append .npy to a bare name
        np.save(handle, matrix, allow_pickle=False)


def _loaded(path: str, limit: int):
    from rasp_sim.compiler import load_weights as load

    check_regular(path, "weights")  # a FIFO would block the loader
    return load(path, limit)


def _shape(args: argparse.Namespace):
    from rasp_sim.compiler.universal import Shape
    return Shape(dim=args.dim, head_dim=args.head_dim or args.dim, out_dim=args.out_dim or args.dim,
                 heads=args.heads, layers=args.layers, residual=args.residual,
                 causal=args.mask != "full")


_SHAPE_OPTIONS = ("heads", "layers", "dim", "head_dim", "out_dim", "residual", "mask")


def _shape_like(args: argparse.Namespace):
    """The shape of the compiled model --like names, or of the shape options (one or the
    other: a shape option next to --like would be ignored, so it is refused)."""
    if args.like is None:
        missing = [f"--{name}" for name in ("heads", "layers", "dim") if getattr(args, name) is None]
        if missing:
            raise UsageError(f"{', '.join(missing)}: required (or --like MODEL, the shape of "
                             "a compiled model)")
        return _shape(args)
    given = [f"--{name.replace('_', '-')}" for name in _SHAPE_OPTIONS
             if getattr(args, name) not in (None, False)]
    if given:
        raise UsageError(f"{', '.join(given)}: --like {args.like} takes the whole shape from "
                         "the model; drop the shape options")
    from rasp_sim.compiler.universal import shape_of

    return shape_of(_compiled(args.like, args.memory_limit))


def _compiled(path: str, limit: int):
    """The compiled model in `path`, or an error naming the file (not a compile output)."""
    from rasp_sim.compiler import WeightsError, compile_info, in_file
    from rasp_sim.compiler.universal import is_compiled

    model = _loaded(path, limit)
    try:
        if not is_compiled(model):
            raise WeightsError("not written by `rasp-sim compile` (no compile record in its "
                               "metadata); --like takes the shape of a compiled model")
        compile_info(model)
    except WeightsError as error:
        raise in_file(error, path) from None
    return model


def _emit(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json_text(result))
        return
    for key, value in result.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        print(f"{key}: {value}")


def _describe(shape) -> str:
    return (f"H = {shape.heads}, L = {shape.layers}, d = {shape.dim}, k = {shape.head_dim}, "
            f"c = {shape.out_dim}{', residual' if shape.residual else ''}")


def build(args: argparse.Namespace) -> int:
    from rasp_sim.compiler import save_weights as save
    from rasp_sim.compiler.universal import (budget, build_random, build_sparse, check_tied,
                                    constraint_count, size_report)

    if args.m is not None and args.random is None:
        raise UsageError("--m only applies to random universal transformers (--random SEED)")
    _check_output(args.output, args.like)
    shape = _shape_like(args)
    check_tied(shape, args.tied)
    kind = "sparse" if args.random is None else "random"
    what = f"the {kind} universal transformer for {_describe(shape)}"
    budget.check_not_astronomic(shape, what)
    m = None if args.random is None else (args.m or constraint_count(shape))
    width = budget.sparse_width(shape, args.tied) if m is None else m
    budget.check_memory(budget.build_bytes(shape, args.tied, m), args.memory_limit,
                        f"{what} (m = {width:,})")
    started = time.perf_counter()
    if args.random is None:
        ut = build_sparse(shape, args.tied)
    else:
        ut = build_random(shape, args.random, args.tied, m)
    seconds = time.perf_counter() - started
    _write(args.output, lambda path: save(ut, path))
    report = size_report(ut)
    if not args.json:  # per-layer non-zero lists are long; summarise them for people
        report["nonzeros"] = {name: sum(v) if isinstance(v, list) else v
                              for name, v in report["nonzeros"].items()}
    _emit({**report, "seconds": round(seconds, 4), "output": args.output}, args.json)
    return 0


def target(args: argparse.Namespace) -> int:
    from rasp_sim.compiler import save_weights as save
    from rasp_sim.compiler.universal import budget, random_target

    _check_output(args.output)
    shape = _shape(args)
    budget.check_memory(budget.target_bytes(shape), args.memory_limit,
                        f"a random target for {_describe(shape)}")
    model = random_target(shape, args.seed)
    _write(args.output, lambda path: save(model, path))
    _emit({"target": args.output, "seed": args.seed, "heads": args.heads, "layers": args.layers,
           "dim": args.dim}, args.json)
    return 0


def _load(args: argparse.Namespace):
    """The UT, its spec, the model TARGET names and the target it stands for (a compiled
    model with its embeddings folded into an input projection: compiled.as_target)."""
    from rasp_sim.compiler import WeightsError, in_file
    from rasp_sim.compiler.universal import as_target, is_compiled, read_spec

    ut = _loaded(args.ut, args.memory_limit)
    try:
        spec = read_spec(ut)
    except WeightsError as error:
        raise in_file(error, args.ut) from None
    model = _loaded(args.target, args.memory_limit)
    if not is_compiled(model):
        return ut, spec, model, model
    try:
        return ut, spec, model, as_target(model)
    except WeightsError as error:
        raise in_file(error, args.target) from None


def _embed(args: argparse.Namespace, loaded, batch: int = 0, longest: int = 0):
    """E for the `loaded` (_load) target, once the memory estimate of the embedding (and
    of a verification on `batch` inputs up to length `longest`) passed; and its seconds."""
    from rasp_sim.compiler.universal import budget, check_expected_error, embed_target as embed

    ut, spec, model, target = loaded
    what = f"embedding a target in the {spec.kind} universal transformer ({_describe(spec.shape)})"
    budget.check_not_astronomic(spec.shape, what)
    estimate = budget.embed_bytes(spec.shape, spec.kind, spec.tied, ut.width)
    if longest:
        what = f"{what} and running it on {batch} inputs of length up to {longest}"
        estimate = budget.verify_bytes(spec.shape, spec.kind, spec.tied, ut.width, batch,
                                       longest)
    budget.check_memory(estimate, args.memory_limit, what)
    started = time.perf_counter()
    embedding = embed(target, ut)
    if target is not model:  # a compiled model, whose outputs must decode alike
        check_expected_error(ut, embedding, model)
    return embedding, time.perf_counter() - started


def _embedding_facts(embedding, seconds: float) -> dict[str, Any]:
    facts: dict[str, Any] = {"m": embedding.matrix.shape[1], "d": embedding.matrix.shape[0],
                             "kind": embedding.kind, "embed_seconds": round(seconds, 4)}
    if embedding.condition is not None:
        facts.update(condition=embedding.condition, solve_residual=embedding.residual)
    return facts


def embed_command(args: argparse.Namespace) -> int:
    _check_output(args.output, args.target, args.ut)
    embedding, seconds = _embed(args, _load(args))
    _write(args.output, lambda path: _save_array(path, embedding.matrix))
    _emit({**_embedding_facts(embedding, seconds), "output": args.output}, args.json)
    return 0


def _load_embedding(path: str, embedding):
    """Replace the computed E by the one in `path`: an .npy float64 array of E's shape
    (checked from its header before its data is read), finite."""
    from dataclasses import replace

    from rasp_sim.compiler import NpyFile, WeightsError, in_file

    check_regular(path, "embedding")  # a FIFO would block the reader
    try:
        with NpyFile(path, "embedding") as stored:
            expected = embedding.matrix.shape
            if stored.info.shape != expected or stored.info.dtype != "float64":
                raise WeightsError(f"embedding: holds a {stored.info.dtype} array of shape "
                                   f"{stored.info.shape}, expected float64 of shape {expected} "
                                   "(d x m)")
            matrix = stored.read()
        if not np.all(np.isfinite(matrix)):
            raise WeightsError("embedding: contains non-finite values")
    except WeightsError as error:
        raise in_file(error, path) from None
    return replace(embedding, matrix=matrix)


def parse_lengths(text: str) -> range | tuple[int, ...]:
    """'1-32' (a range, never expanded here) or '1,5,9' -> lengths (an argparse type)."""
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-", 1))
            if not 1 <= low <= high:
                raise ValueError
            return range(low, high + 1)
        lengths = tuple(int(part) for part in text.split(","))
        if min(lengths) < 1:
            raise ValueError
        return lengths
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid lengths {text!r}: use a range such as 1-32 or a list such as 1,5,9") from None


def verify_command(args: argparse.Namespace) -> int:
    from rasp_sim.compiler.universal import verify_embedding as verify

    loaded = _load(args)
    ut, _, model, target = loaded
    if model is not target:
        return _verify_compiled(args, loaded)
    if args.program or args.name or args.max_inputs is not None:
        raise UsageError("--program, --name and --max-inputs apply to a model written by "
                         f"`rasp-sim compile`; {args.target} is not one")
    lengths = args.lengths or range(1, 33)
    seed = 0 if args.seed is None else args.seed
    batch = args.batch or 4
    longest = lengths[-1] if isinstance(lengths, range) else max(lengths)
    embedding, seconds = _embed(args, loaded, batch, longest)
    if args.embedding:
        embedding = _load_embedding(args.embedding, embedding)
    result = verify(ut, embedding, model, lengths=tuple(lengths), batch=batch, seed=seed)
    _emit({**_embedding_facts(embedding, seconds),
           "max_error": result.max_error, "scale": result.scale,
           "relative_error": result.relative_error, "tolerance": result.tolerance,
           "passed": result.passed, "sequences": result.sequences,
           "lengths": f"{min(result.lengths)}..{max(result.lengths)}",
           "verify_seconds": round(result.seconds, 4)}, args.json)
    return 0 if result.passed else 1




def _verify_compiled(args: argparse.Namespace, loaded) -> int:
    """verify for a compiled model: every input of its domain (exhaustive.py)."""
    from rasp_sim.compiler.universal import check_domain_size, check_every_input, expected_error

    if args.lengths is not None or args.seed is not None:
        raise UsageError("--lengths and --seed choose random inputs; a compiled model is "
                         "verified on every input of its domain (its compile record's "
                         "vocabulary and lengths)")
    if bool(args.program) != bool(args.name):
        raise UsageError("--program FILE and --name NAME go together")
    ut, _, model, _ = loaded
    limit = DEFAULT_MAX_INPUTS if args.max_inputs is None else args.max_inputs
    batch = args.batch or COMPILED_BATCH
    _, longest = check_domain_size(model, limit)
    root, source = _program_of(args, model)
    embedding, seconds = _embed(args, loaded, batch, longest)
    if args.embedding:
        embedding = _load_embedding(args.embedding, embedding)
    check = check_every_input(ut, embedding, model, root, batch)
    result: dict[str, Any] = _embedding_facts(embedding, seconds)
    if embedding.residual is not None:
        result["expected_error"] = expected_error(embedding)
    result.update(inputs=check.inputs, agree_with_model=check.agree_with_model)
    if root is not None:
        result.update(agree_with_program=check.agree_with_program,
                      outside_program_domain=check.undefined)
    result.update(program=source, max_numeric_error=check.max_numeric_error,
                  passed=check.passed, verify_seconds=round(check.seconds, 4))
    if check.disagreement is not None:
        result["first_disagreement"] = check.disagreement.describe()
    elif not check.compared_with_program:
        result["failure"] = (f"the program fails on all {check.inputs} inputs of the "
                             "domain: it is not the program the model was compiled from")
    _emit(result, args.json)
    return 0 if check.passed else 1


def _program_of(args: argparse.Namespace, model) -> tuple[Any, str]:
    """The s-op to compare with, and a line saying which program ran: --program/--name,
    else the compile record's program file and name when the model may name that file
    (rasp_sim/compiled/model_files.py: a weights file is untrusted input, it never makes rasp-sim
    run a program outside the model's folder and the library); None if there is none."""
    from rasp_sim.compiler import compile_info
    from rasp_sim.core.graph import SOp
    from rasp_sim.compiled.model_files import ModelFiles, Refused

    from .compile import load_sop

    if args.program:
        return load_sop(args.program, args.name, args.sandbox), \
            f"{args.name} ({args.program}, from --program)"
    info = compile_info(model)
    file, name = info.get("program"), info.get("name")
    try:
        if not (isinstance(file, str) and file and isinstance(name, str) and name):
            raise Refused("the compile record names no program and s-op")
        _, node = ModelFiles.of(args.target).run_program(file).node(name)
    except Refused as refusal:
        return None, (f"none: the compile record's program {file!r} is not run: {refusal}; "
                      "compared with the compiled model only (--program FILE --name NAME "
                      "adds the interpreter)")
    if not isinstance(node, SOp):
        raise RaspError(f"'{name}' in {file} is a selector; only s-ops are compiled",
                        node.span)
    return node, f"{name} ({file}, from the compile record)"


DEFAULT_MAX_INPUTS = 100_000  # as many as `rasp-sim compile` validates one by one
COMPILED_BATCH = 256  # inputs per forward pass when checking a whole domain


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "universal", help="fixed universal transformers: build, embed a target, verify",
        description="One transformer with fixed weights simulates every target of a class "
        "T(d, k, c, H, L) once its input embedding E encodes the target (Liu, Andoni, Hsu).")
    commands = parser.add_subparsers(dest="universal_command", metavar="ACTION", required=True)

    build_parser = commands.add_parser("build", help="write a fixed universal transformer")
    build_parser.add_argument("--like", metavar="MODEL.npz",
                              help="take the shape (d, k, c, H, L, residual, mask) from a "
                              "model written by `rasp-sim compile`, instead of the shape "
                              "options")
    _shape_options(build_parser, required=False)
    build_parser.add_argument("--tied", action="store_true",
                              help="looped: the same weights in every layer")
    build_parser.add_argument("--random", type=seed_number, metavar="SEED",
                              help="i.i.d. Gaussian weights from SEED instead of the sparse "
                              "{0,1} construction")
    build_parser.add_argument("--m", type=positive, metavar="M",
                              help="width of a random UT (default: the constraint count C)")
    _output_options(build_parser, "the universal transformer (.npz)")
    build_parser.set_defaults(handler=build)

    target_parser = commands.add_parser("target", help="write a random target transformer")
    _shape_options(target_parser)
    target_parser.add_argument("--seed", type=seed_number, required=True, help="random seed")
    _output_options(target_parser, "the target (.npz)")
    target_parser.set_defaults(handler=target)

    for name, handler, help_text in (
            ("embed", embed_command, "compute the embedding E of a target"),
            ("verify", verify_command, "check UT(X; E) = T(X) on random inputs, or a "
             "compiled model on every input of its domain")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("target", metavar="TARGET.npz", help="the target, in the weight format")
        sub.add_argument("--ut", required=True, metavar="UT.npz", help="the universal transformer")
        if name == "embed":
            _output_options(sub, "E (.npy)")
        else:
            sub.add_argument("--embedding", metavar="E.npy",
                             help="verify this E instead of computing it")
            sub.add_argument("--lengths", type=parse_lengths, default=None,
                             help="sequence lengths, e.g. 1-32 (default) or 1,5,9")
            sub.add_argument("--batch", type=positive, default=None,
                             help="sequences per length (default 4); for a compiled model, "
                             f"inputs per forward pass (default {COMPILED_BATCH})")
            sub.add_argument("--seed", type=seed_number, default=None,
                             help="seed of the random inputs (default 0)")
            sub.add_argument("--program", metavar="FILE",
                             help="a compiled model: the .rasp program to compare with "
                             "(default: the one its compile record names, if present)")
            add_name_option(sub, "a compiled model: the s-op of --program")
            sub.add_argument("--max-inputs", type=positive, default=None, metavar="N",
                             help="a compiled model: refuse a domain of more than N inputs "
                             f"(default {DEFAULT_MAX_INPUTS:,})")
            add_sandbox_option(sub)
            add_json_option(sub)
            add_memory_limit_option(sub, "working set (the files read, E, the forward pass), "
                                    "estimated before any work")
        sub.set_defaults(handler=handler)
