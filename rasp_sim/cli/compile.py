"""`rasp-sim compile` and `rasp-sim verify`: RASP programs to validated transformer weights.

Both need the `compile` extra (tracr, jax, dm-haiku); it is imported inside the handlers,
so the rest of the CLI starts without it. See docs/compiler.md and docs/cli.md, "Compile to weights".
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from ..base.dask_cluster import PROBE_SECONDS
from ..base.errors import RaspError
from ..core.graph import SOp
from ..base.counts import positive, sample_count, seed_number
from ..base.program_files import check_regular
from . import EXIT_INTERRUPTED, UsageError
from .json_text import json_text
from .options import (
    add_json_option, add_memory_limit_option, add_name_option, add_sandbox_option,
    add_unvalidated_option, checked_scheduler, check_output,
)
from ..language.call_sites import at_call_site, binding_span
from .program import load_named_node
from .stages import StageLine


def register(subparsers: argparse._SubParsersAction) -> None:
    compile_parser = subparsers.add_parser(
        "compile", help="compile an s-op to transformer weights through tracr, validated",
        description="Translate the s-op NAME of FILE to tracr, compile it, fix the assembly, "
        "validate the weights against the interpreter on every input of the declared domain "
        "(sampled above 100000 inputs; --check-tracr adds tracr's own model as a second "
        "oracle) and write them to an .npz or .safetensors file. A model that disagrees is "
        "not written (exit 1) unless --force.")
    compile_parser.add_argument("file", help="the .rasp program")
    add_name_option(compile_parser, "the s-op to compile (default: the last one assigned)")
    tokens = compile_parser.add_mutually_exclusive_group(required=True)
    tokens.add_argument("--vocab", metavar="V1,V2,...",
                        help="the input vocabulary, comma-separated, as the program's tokens "
                        "read it (e.g. 1,2,3 for tokens_int)")
    tokens.add_argument("--numeric-tokens", action="store_true",
                        help="real-valued tokens: each token's value enters the residual "
                        "stream linearly (read them with tokens_float); maps of them are "
                        "lowered as exact polynomials, sums and softmax as heads")
    compile_parser.add_argument("--max-len", required=True, type=int, metavar="N",
                                help="the longest input sequence")
    compile_parser.add_argument("--min-len", type=int, default=None, metavar="N",
                                help="the shortest input sequence (default 1; numeric "
                                "models default to --max-len): the model is built and "
                                "validated for lengths min-len..max-len only")
    compile_parser.add_argument("--token-range", metavar="LO,HI", default="-1000,1000",
                                help="with --numeric-tokens: the values the model accepts "
                                "(default -1000,1000); it bounds the softmax heads' scores, "
                                "and run --weights refuses values outside it")
    compile_parser.add_argument("--causal", action="store_true",
                                help="causal attention: every selector only sees keys k <= q "
                                "(validated against that program)")
    compile_parser.add_argument("--float64", action="store_true",
                                help="float64 weights and validation (the default and only "
                                "precision; accepted for explicitness)")
    compile_parser.add_argument("-o", "--output", metavar="MODEL.npz",
                                help="where to write the weights: safetensors for a "
                                ".safetensors suffix, otherwise .npz (default: NAME.npz)")
    compile_parser.add_argument("--force", action="store_true",
                                help="write the model even if validation fails, marked "
                                "unvalidated in its metadata (run and verify refuse it "
                                "without --allow-unvalidated)")
    compile_parser.add_argument("--check-tracr", action="store_true",
                                help="also validate against tracr's own assembled model (JAX "
                                "and haiku: several seconds more)")
    _add_validation_options(compile_parser, seed_help="seed of the random sample (default 0)",
                            seed_default=0)
    _add_proof_options(compile_parser, "OUTPUT.proof")
    compile_parser.set_defaults(handler=run_compile)

    verify_parser = subparsers.add_parser(
        "verify", help="re-run the validation of compiled weights against a program",
        description="Check MODEL (from rasp-sim compile) against the s-op NAME of FILE on "
        "the domain recorded in the model: every input where the compile checked every "
        "input, else a new random sample (by default independent of the compile's).")
    verify_parser.add_argument("model", help="the weights (.npz or .safetensors)")
    verify_parser.add_argument("file", help="the .rasp program")
    add_name_option(verify_parser, "the s-op the model computes", required=True)
    add_unvalidated_option(verify_parser)
    add_memory_limit_option(verify_parser, "weights file read, estimated before any work")
    _add_validation_options(verify_parser, seed_default=None, seed_help="seed of the random "
                            "sample (default: the compile's seed + 1, so that verify draws a "
                            "sample independent of the one the compile checked)")
    _add_proof_options(verify_parser, "MODEL.proof")
    verify_parser.set_defaults(handler=run_verify)


def _add_validation_options(parser: argparse.ArgumentParser, seed_help: str,
                            seed_default: int | None) -> None:
    parser.add_argument("--samples", type=sample_count, default=None, metavar="K",
                        help="random inputs to validate on when the domain has more than "
                        "100000 (default 10000; numeric-token models: 300 per length range, "
                        "their domain is never exhausted)")
    parser.add_argument("--seed", type=seed_number, default=seed_default, help=seed_help)
    add_json_option(parser)
    add_sandbox_option(parser)


def _add_proof_options(parser: argparse.ArgumentParser, default_folder: str) -> None:
    proof = parser.add_argument_group(
        "exhaustive proof", "check every input of the declared domain, whatever its size, in "
        "chunks on Dask; an interrupted proof (Ctrl-C) resumes when the command is run again, "
        "from the records that check out (--no-resume: none)")
    proof.add_argument("--exhaustive", action="store_true",
                       help="compare the weights with the interpreter on every input of the "
                       "domain (printing its size and an estimate of the time first) and "
                       "record the proof in the model file; a map that tells near-equal "
                       "floats apart compiles on a domain above 10^6 inputs only with it")
    proof.add_argument("--workers", type=positive, default=None, metavar="N",
                       help="with --exhaustive: processes of the local Dask cluster (default: "
                       "this machine's cores; 1 runs the proof in this process)")
    proof.add_argument("--scheduler", metavar="ADDRESS",
                       help="with --exhaustive: run the chunks on an existing Dask scheduler, "
                       f"e.g. tcp://host:8786 (refused before any work unless it answers as "
                       f"one within {PROBE_SECONDS:g} s)")
    proof.add_argument("--proof-dir", metavar="DIR",
                       help=f"with --exhaustive: where finished chunks are recorded (default "
                       f"{default_folder}, next to the model; the records are removed once "
                       "the proof is in the model, the folder too if rasp-sim created it)")
    proof.add_argument("--no-resume", action="store_true",
                       help="with --exhaustive: prove every chunk again, using none of the "
                       "records in the proof folder (for a folder someone else could write: "
                       "a record's checksum is no signature)")


def _check_proof_options(args: argparse.Namespace) -> None:
    if args.exhaustive:
        if args.scheduler is not None:
            checked_scheduler(args.scheduler)
        return
    for option, value in (("--workers", args.workers), ("--scheduler", args.scheduler),
                          ("--proof-dir", args.proof_dir),
                          ("--no-resume", args.no_resume or None)):
        if value is not None:
            raise UsageError(f"{option} is for an exhaustive proof: add --exhaustive")


def _prove(args: argparse.Namespace, driver: Any, weights: Any, root: SOp,
           model_path: str) -> Any:
    """The whole-domain proof of `weights` and its records (proof.prove), progress on
    stderr, or None when Ctrl-C stopped it (then the message says how to resume)."""
    from pathlib import Path

    folder = Path(args.proof_dir) if args.proof_dir else Path(f"{model_path}.proof")
    try:
        return driver.prove(weights, root, folder, workers=args.workers,
                            scheduler=args.scheduler, resume=not args.no_resume,
                            report=lambda line: print(line, file=sys.stderr, flush=True))
    except driver.ProofInterrupted as stopped:
        args.handles_interrupts = True  # said here: main() need not say "interrupted" too
        print(f"interrupted: {stopped.message}", file=sys.stderr)
        return None


def _proof_line(proof: Any) -> str:
    rate = proof.inputs / proof.cpu_seconds if proof.cpu_seconds else 0.0
    return (f"proven on all {proof.total:,} inputs of the domain in {proof.seconds:.1f} s "
            f"({proof.cpu_seconds:.1f} s of CPU, {rate:,.0f} inputs/s per core"
            f"{f'; {proof.resumed} chunks resumed' if proof.resumed else ''})")


def describe_proof(proof: Any) -> str:
    """A model's recorded proof in words (the compile record's "proof"). The model's
    hash is a checksum, not a signature, so a record that is not what rasp-sim writes is
    said to be so rather than described."""
    problem = _recorded_proof_problem(proof)
    if problem is not None:
        return (f"a recorded proof that is not rasp-sim's ({problem}); verify --exhaustive "
                "proves the model again")
    domain = proof["domain"]
    where = (f"lengths {domain['min_len']}..{domain['max_len']} over "
             f"{len(domain['vocab'])} tokens")
    if not proof["ok"]:
        return (f"exhaustive proof FAILED on the domain of {proof['inputs']:,} inputs "
                f"({where}): {proof.get('disagreement')}")
    error = proof.get("max_numeric_error", 0)  # a number, or "inf" / "nan" (JSON has none)
    error_text = f"{error:.3g}" if isinstance(error, (int, float)) else repr(error)
    return (f"proven on every input: {proof['inputs']:,} inputs ({where}, "
            f"{proof['undefined']:,} outside the program's domain), "
            f"{' against '.join(proof['oracles'])}, max numerical error {error_text}")


def _recorded_proof_problem(proof: Any) -> str | None:
    """Why `proof` is not a proof record as proof.Proof.as_metadata writes it (None if
    it is one): the fields describe_proof reads, of their types, counts >= 0."""
    if not isinstance(proof, dict):
        return "not a record"
    domain = proof.get("domain")
    if not (isinstance(domain, dict) and isinstance(domain.get("vocab"), list)
            and all(_is_count(domain.get(k)) for k in ("min_len", "max_len"))):
        return "its domain is not a vocabulary and lengths"
    if not all(_is_count(proof.get(k)) for k in ("inputs", "undefined")):
        return "its counts are not whole numbers >= 0"
    oracles = proof.get("oracles")
    if not (isinstance(oracles, list) and all(isinstance(o, str) for o in oracles)):
        return "its oracles are not names"
    if not isinstance(proof.get("ok"), bool):
        return "it says neither proven nor failed"
    return None


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def load_sop(file: str, name: str, sandbox: bool) -> SOp:
    """The s-op `name` of the program `file` (a selector is refused)."""
    return named_sop(file, name, sandbox)[1]


def named_sop(file: str, name: str | None, sandbox: bool) -> tuple[str, SOp]:
    """(name, s-op) of the program `file`: `name`, or the last name it assigns (as `run`
    takes it); a selector is refused."""
    name, node = load_named_node(file, name, sandbox=sandbox)
    if not isinstance(node, SOp):
        raise RaspError(f"'{name}' in {file} is a selector; only s-ops can be compiled",
                        node.span)
    return name, node


def _backend():  # type: ignore[no-untyped-def]
    try:
        from rasp_sim.compiler import tracr_driver as driver
    except ImportError as error:
        raise RaspError(f"compiling needs the 'compile' extra (tracr, jax, dm-haiku): "
                        f"pip install 'rasp-sim[compile]' ({error})") from None
    return driver


def run_compile(args: argparse.Namespace) -> int:
    _check_proof_options(args)
    if args.exhaustive and args.numeric_tokens:
        raise UsageError("--exhaustive: a --numeric-tokens model reads real numbers, so its "
                         "domain is infinite and cannot be enumerated (its validation is "
                         "sampled: --samples)")
    driver = _backend()
    name, root = named_sop(args.file, args.name, args.sandbox)
    output = f"{name}.npz" if args.output is None else args.output
    check_output(output, args.file)
    numeric = None
    if args.numeric_tokens:
        low, high = _token_range(args.token_range)
        min_len = args.max_len if args.min_len is None else args.min_len
        numeric = driver.NumericDomain(min_len, args.max_len, low, high)
        vocab: list = []
        samples = args.samples or driver.NUMERIC_SAMPLES
    else:
        entries = args.vocab.split(",") if args.vocab else []  # --vocab "" is empty
        vocab = driver.parse_vocab(entries, driver.tokens_kind(root))
        samples = args.samples or driver.DEFAULT_SAMPLES
    line = StageLine("compile")

    def stage(step: str) -> None:  # the validation shows its own bar: the line goes
        line.close() if step == "validating" else line.stage(step)

    try:
        with line:
            result = driver.compile_program(root, vocab, args.max_len, causal=args.causal,
                                            samples=samples, seed=args.seed,
                                            progress=sys.stderr.isatty(), program=args.file,
                                            name=name, tracr_oracle=args.check_tracr,
                                            min_len=args.min_len or 1, numeric=numeric,
                                            whole_domain=args.exhaustive, stage=stage)
    except driver.Unsupported as refusal:
        if numeric is None and driver.tokens_kind(root) == "float":
            refusal.notes.append("  hint: the program reads tokens_float; --numeric-tokens "
                                 "compiles it for real-valued tokens (any value in "
                                 "--token-range, length --max-len) instead of the --vocab "
                                 "values")
        raise at_call_site(refusal, binding_span(args.file, name)) from None
    proof = None
    if args.exhaustive and result.report.ok:  # a failed validation needs no proof
        proven = _prove(args, driver, result.weights, root, output)
        if proven is None:
            return EXIT_INTERRUPTED
        proof, records = proven
        result = driver.proven(result, proof)
        records.remove()  # the result is in the model (or in the refusal) from here on
    driver.write(result, output, force=args.force)
    record = result.weights.metadata[driver.COMPILE_KEY]
    summary = {**{k: record[k] for k in ("layers", "heads", "residual_width", "parameters")},
               "compile_seconds": round(result.seconds, 3), "output": output,
               "validated": result.report.ok, "tracr_oracle": args.check_tracr,
               "validation": result.report.as_metadata()}
    if proof is not None:
        summary["proof"] = proof.as_metadata()
    if args.json:
        print(json_text(summary))
    else:
        v = result.report
        print(f"{name}: {summary['layers']} layers, {summary['heads']} heads, residual "
              f"width {summary['residual_width']}, {summary['parameters']} parameters, "
              f"graph to weights in {summary['compile_seconds']} s")
        checked = (f"{v.mode} on {v.compared} inputs ({v.undefined} outside the program's "
                   f"domain){' with the tracr oracle' if args.check_tracr else ''}, max "
                   f"numerical error {v.max_numeric_error:.3g} -> {output}")
        print(f"validated {checked}" if v.ok else f"UNVALIDATED (--force): checked {checked}")
        if proof is not None and proof.ok:
            print(_proof_line(proof))
    outside = _mostly_outside(result.report.compared, result.report.undefined)
    if outside:
        print(outside, file=sys.stderr)
    if not result.report.ok:  # written only with --force: the model is still wrong
        print(f"warning: written UNVALIDATED (--force): {result.report.disagreement.describe()}"
              if result.report.disagreement else "warning: written UNVALIDATED (--force)",
              file=sys.stderr)
        return 1
    return 0


def _mostly_outside(compared: int, undefined: int) -> str | None:
    """A warning when more than half of the inputs checked are outside the program's
    domain (the interpreter fails on them): the model was checked on few inputs, and the
    declared domain is mostly inputs the program does not take."""
    checked = compared + undefined
    if undefined * 2 <= checked:
        return None
    return (f"warning: {undefined} of the {checked} inputs checked "
            f"({100 * undefined / checked:.0f}%) are outside the program's domain (the "
            f"interpreter fails on them), so the model was checked on {compared} only; "
            "narrow the declared domain to the inputs the program takes (--min-len for the "
            "shortest length, --vocab for the tokens)")


def _token_range(text: str) -> tuple[float, float]:
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"--token-range {text!r}: expected LO,HI, two numbers") from None
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise UsageError(f"--token-range {text!r}: expected finite LO <= HI")
    return low, high


def run_verify(args: argparse.Namespace) -> int:
    _check_proof_options(args)
    driver = _backend()
    root = load_sop(args.file, args.name, args.sandbox)
    from rasp_sim.compiler import load_compiled

    check_regular(args.model, "weights")  # a FIFO would block the loader
    model, warning = load_compiled(args.model, args.allow_unvalidated, args.memory_limit)
    if warning:
        print(warning, file=sys.stderr)
    if args.exhaustive:
        return _verify_exhaustive(args, driver, model, root)
    compile_seed = driver.compile_seed(model)
    report = driver.verify(model, root, samples=args.samples, seed=args.seed,
                           progress=sys.stderr.isatty())
    info = driver.compile_info(model)
    recorded = info.get("proof")
    needs_proof = info.get("proof_required") or []
    if args.json:
        print(json_text({**report.as_metadata(), "compile_seed": compile_seed,
                         "proof_required": needs_proof}))
        return 0
    print(f"{args.model}: agrees with {args.name} ({args.file}) {report.mode} on "
          f"{report.compared} inputs{_sample_note(report.seed, compile_seed)}, max "
          f"numerical error {report.max_numeric_error:.3g}")
    if isinstance(recorded, dict):
        print(f"{args.model}: {describe_proof(recorded)} (recorded in the model)")
    if needs_proof and report.mode != "exhaustive":
        print(f"{args.model}: note: {', '.join(map(str, needs_proof))} compiled on the "
              "strength of a whole-domain proof (a map of near-equal floats), which a "
              "sample cannot stand in for: "
              + ("the recorded proof above is what shows the model exact"
                 if isinstance(recorded, dict) else
                 "no proof is recorded in the model; verify --exhaustive proves it"))
    return 0


def _verify_exhaustive(args: argparse.Namespace, driver: Any, model: Any, root: SOp) -> int:
    """verify --exhaustive: prove the model on its whole domain and record the proof in
    its file (a failed proof also marks it not validated)."""
    if driver.is_numeric_input(model):
        raise UsageError("--exhaustive: this model reads real numbers, so its domain is "
                         "infinite and cannot be enumerated (verify samples it: --samples)")
    proven = _prove(args, driver, model, root, args.model)
    if proven is None:
        return EXIT_INTERRUPTED
    proof, records = proven
    try:
        driver.save(driver.with_proof(model, proof), args.model)
    except OSError as error:
        raise RaspError(f"cannot record the proof in {args.model}: {error.strerror}") from None
    records.remove()
    if not proof.ok:
        found = (f"the model disagrees with the program {proof.describe_disagreement()}"
                 if proof.disagreement is not None else "the program fails on every input, "
                 "so there is nothing to compare")
        raise driver.VerifyFailed(f"{found} (verify checked every input; the failed proof "
                                  f"is recorded in {args.model}, which is now marked not "
                                  "validated)")
    if args.json:
        print(json_text(proof.as_metadata()))
    else:
        print(f"{args.model}: agrees with {args.name} ({args.file}); {_proof_line(proof)}; "
              "recorded in the model")
    return 0


def _sample_note(seed: int | None, compile_seed: int) -> str:
    """Which sample verify drew, against the compile's ("" where both checked every input)."""
    if seed is None:
        return ""
    if seed == compile_seed:
        return f" (seed {seed}: the compile's own sample, so nothing new is checked)"
    return f" (seed {seed}, independent of the compile's sample, seed {compile_seed})"
