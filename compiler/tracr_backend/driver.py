"""`compile` and `verify` end to end: program file -> validated weights file.

Importing this module does not import jax or haiku (about two seconds of start-up, and
haiku's initialisation of every model shape costs more): only tracr's own model, the
optional validation oracle (`tracr_oracle=True`, the CLI's `--check-tracr`), needs them,
and `_jax()` imports jax then, in float64 (`jax_enable_x64`, before any jax array exists),
so tracr's model is compared with the NumPy forward at the same precision.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import time
from dataclasses import dataclass, replace
from importlib import metadata as package_metadata
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Sequence


def _tracr_compiler_without_jax() -> None:
    """Make `tracr.compiler`'s modules importable without importing jax and haiku.

    tracr.compiler's __init__ imports its whole compiler, `tracr.compiler.assemble`
    included, which imports jax and haiku. The pipeline needs only jax-free modules
    (nodes, rasp_to_graph, expr_to_craft_graph, craft_graph_to_model); assemble serves
    only the oracle. So the package is registered without running its __init__ (its one
    export stays reachable, PEP 562) and assemble becomes a lazy module that runs (and
    imports jax) on first attribute access. A no-op when tracr.compiler is already loaded."""
    if "tracr.compiler" in sys.modules:
        return
    import tracr

    spec = importlib.util.find_spec("tracr.compiler")
    assert spec is not None, "tracr is installed (the import above succeeded)"
    package = importlib.util.module_from_spec(spec)

    def exported(name: str) -> Any:
        if name == "compile_rasp_to_model":
            from tracr.compiler.compiling import compile_rasp_to_model
            return compile_rasp_to_model
        raise AttributeError(f"module 'tracr.compiler' has no attribute {name!r}")

    setattr(package, "__getattr__", exported)
    sys.modules["tracr.compiler"] = package
    setattr(tracr, "compiler", package)
    # Only now: finding a submodule imports its parent package, which is registered above.
    lazy = importlib.util.find_spec("tracr.compiler.assemble")
    assert lazy is not None and lazy.loader is not None
    loader = importlib.util.LazyLoader(lazy.loader)
    lazy.loader = loader
    assemble = importlib.util.module_from_spec(lazy)
    sys.modules["tracr.compiler.assemble"] = assemble
    setattr(package, "assemble", assemble)
    loader.exec_module(assemble)


_tracr_compiler_without_jax()

import numpy as np  # noqa: E402
from tracr.craft import transformers  # noqa: E402

from rasp_sim.core import graph as g  # noqa: E402
from rasp_sim.core import semantics  # noqa: E402
from rasp_sim.base.errors import CompileError, RaspError  # noqa: E402

from ..weights import Transformer, WeightsError, load, save  # noqa: E402
from .assemble import to_weights, tracr_model  # noqa: E402
from .checks import Unsupported, tokens_kind  # noqa: E402,F401 (tokens_kind: for the CLI)
from .pipeline import Compiled, compile_graph  # noqa: E402
from .continuous import NumericDomain  # noqa: E402,F401 (for the CLI)
from .runtime import COMPILE_KEY, NUMERIC, compile_info, is_numeric_input, size  # noqa: E402,F401
from .proof import Proof, ProofInterrupted, prove  # noqa: E402,F401 (the last two: the CLI)
from .validate import BATCH, DEFAULT_SAMPLES, Disagreement, Report, validate  # noqa: E402
from .validate_numeric import NUMERIC_SAMPLES, validate_numeric  # noqa: E402,F401


def _jax() -> ModuleType:
    """jax, in float64: called before the oracle creates any jax array."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


class ValidationFailed(CompileError):
    """The compiled model disagrees with the interpreter (or tracr) on some input."""

    kind = "validation failed"


class VerifyFailed(ValidationFailed):
    """`verify`: a model file disagrees with a program on some input."""

    kind = "verify failed"


@dataclass
class Result:
    weights: Transformer
    report: Report
    compiled: Compiled
    seconds: float


def parse_vocab(entries: Sequence[str], kind: str) -> list[Any]:
    """Command-line vocabulary entries as the program's tokens see them."""
    out = []
    for entry in entries:
        if kind == "asis":
            try:
                value = json.loads(entry)
            except json.JSONDecodeError:
                value = entry
        else:
            try:
                value = semantics.convert_token(kind, entry)
            except RaspError as error:
                raise Unsupported("vocabulary", f"entry {entry!r} is not a valid token for "
                                  f"tokens_{kind}: {error.message}") from None
        out.append(value)
    return out


def tracr_forward(model: Any, categorical: bool, max_len: int) -> Any:
    """tracr's haiku model on (B, n+1) id rows -> decoded outputs.

    Every batch is padded to (BATCH, max_len + 1) with tracr's PAD token, which the
    model's own input mask hides from attention, so XLA compiles the forward once per
    program instead of once per shape."""
    jax = _jax()
    import haiku as hk

    pad = model.input_encoder.pad_encoding

    @hk.without_apply_rng
    @hk.transform
    def padded(ids: Any) -> Any:
        network = model.get_compiled_model()
        network.pad_token = pad
        return network(ids, use_dropout=False).unembedded_output

    apply = jax.jit(padded.apply)  # type: ignore[attr-defined]  # haiku's stubs lose it

    def run(ids: np.ndarray) -> list[list]:
        rows, width = ids.shape
        full = np.full((BATCH, max_len + 1), pad, dtype=np.int64)
        outputs: list[list] = []
        for start in range(0, rows, BATCH):
            chunk = ids[start:start + BATCH]
            full[:] = pad
            full[:len(chunk), :width] = chunk
            out = np.asarray(apply(model.params, full))[:len(chunk), 1:width].tolist()
            outputs += [model.output_encoder.decode(row) for row in out] if categorical else out
        return outputs
    return run


def _version(package: str) -> str:
    try:
        return package_metadata.version(package)
    except package_metadata.PackageNotFoundError:
        return "unknown"


def compile_program(root: g.SOp, vocab: Sequence[Any], max_len: int, *, causal: bool = False,
                    samples: int = DEFAULT_SAMPLES, seed: int = 0, progress: bool = False,
                    program: str = "", name: str = "", tracr_oracle: bool = True,
                    min_len: int = 1, numeric: NumericDomain | None = None,
                    whole_domain: bool = False,
                    stage: Callable[[str], None] = lambda name: None) -> Result:
    """Compile, export and validate; the weights are marked validated only if all agree.

    `tracr_oracle=False` leaves tracr's assembled model out of the validation, which then
    compares the written weights with the interpreter only: no jax, no haiku, so a compile
    takes a fraction of a second instead of seconds (the CLI's default; `--check-tracr`
    adds the oracle). `stage(name)` is told as each step starts (lowering, weights, tracr's
    model, validating), for a progress display. `whole_domain`: the caller proves the
    model on every input afterwards (`prove`, the CLI's --exhaustive), so a map that only
    such a proof can show exact is compiled (listed in the record's "proof_required")
    instead of refused (joint.py)."""
    start = time.perf_counter()
    if numeric is not None and tokens_kind(root) != "float":
        raise Unsupported("--numeric-tokens", f"the program reads its tokens as "
                          f"tokens_{tokens_kind(root)}; real-valued tokens are read with "
                          "tokens_float")
    stage("lowering to tracr's craft model")
    compiled = compile_graph(root, vocab, max_len, causal=causal, min_len=min_len,
                             numeric=numeric, whole_domain=whole_domain)
    if tracr_oracle and compiled.gated:
        raise Unsupported("--check-tracr", "this model has gated (ReGLU) MLPs or numeric "
                          "inputs, which tracr's model cannot express; it is validated by "
                          "the NumPy forward against the interpreter")
    record = {
        "program": program, "name": name, "vocab": list(compiled.vocab), "max_len": max_len,
        "min_len": compiled.min_len,
        "tokens_kind": compiled.translation.tokens_kind if numeric is None else NUMERIC,
        "causal": causal,
        "mlp_exactness": compiled.mlp_exactness,
        "tracr_oracle": tracr_oracle,  # whether the validation also ran tracr's own model
        "rasp_sim_version": _version("rasp-sim"), "tracr_version": _version("tracr-pypi"),
    }
    if compiled.proof_required:  # exact only where the whole-domain proof shows it
        record["proof_required"] = list(compiled.proof_required)
    # a product that overflows (a --token-range near 1e308) is refused with the weight it
    # made non-finite (the weights' own check), not printed as a NumPy RuntimeWarning
    stage("assembling the weights")
    with np.errstate(all="ignore"):
        weights = to_weights(compiled, {COMPILE_KEY: record})
    seconds = time.perf_counter() - start  # the compile proper: graph -> weights
    record.update(size(weights), compile_seconds=round(seconds, 4))
    record["layers"] = layer_count(compiled)
    record["blocks"] = compiled.block_operations()  # per weight-format layer, in order
    oracle = None
    if tracr_oracle:  # its first call in a process includes JAX start-up
        stage("building tracr's model (the oracle)")
        _jax()  # float64 before tracr_model's haiku initialisation creates arrays
        oracle = tracr_forward(tracr_model(compiled), compiled.categorical_output, max_len)
    stage("validating")
    if numeric is not None:
        record["token_range"] = [numeric.low, numeric.high]
        report = validate_numeric(root, weights, numeric, samples=samples, seed=seed)
    else:
        report = validate(root, weights, vocab, max_len, tracr_forward=oracle, samples=samples,
                          seed=seed, progress=progress, min_len=compiled.min_len)
    if report.output_type is not None:
        record["output_type"] = report.output_type
    return Result(_marked(weights, report, forced=False), report, compiled, seconds)


def layer_count(compiled: Compiled) -> int:
    """Layers as tracr counts them: each block takes the next free slot of its kind in
    attention, MLP, attention, MLP, ...; the count is the last slot's layer + 1."""
    slot = -1
    for block in compiled.craft_model.blocks:
        slot += 1
        if (slot % 2 == 1) != isinstance(block, transformers.MLP):
            slot += 1
    return slot // 2 + 1


def _marked(weights: Transformer, report: Report, forced: bool) -> Transformer:
    metadata = dict(weights.metadata)
    record = dict(metadata[COMPILE_KEY])
    record["validation"] = report.as_metadata()
    record["validated"] = report.ok
    if forced:
        record["forced"] = True
    metadata[COMPILE_KEY] = record
    metadata["validated"] = report.ok
    return weights.replace(metadata=metadata)


# What a refused compile says to do instead: the CLI's and the Python API's words.
CLI_REMEDY = "nothing written (--force writes it marked unvalidated)"
API_REMEDY = "force=True returns it marked unvalidated"


def final_weights(result: Result, *, force: bool = False, remedy: str = CLI_REMEDY
                  ) -> Transformer:
    """The weights to hand out, marked validated; a failed validation raises a
    ValidationFailed ending in `remedy` unless `force`, which marks them unvalidated."""
    if not result.report.ok and not force:
        raise _failure(result.report, remedy)
    return _marked(result.weights, result.report, forced=force and not result.report.ok)


def write(result: Result, path: str | Path, *, force: bool = False) -> None:
    """Write validated weights; a failed validation raises unless `force` (then the file
    is marked unvalidated)."""
    weights = final_weights(result, force=force)
    try:
        save(weights, path)
    except OSError as error:
        raise RaspError(f"cannot write the weights to {path}: {error.strerror}") from None


def _failure(report: Report, remedy: str = CLI_REMEDY) -> ValidationFailed:
    if report.disagreement is not None:
        return ValidationFailed("the compiled model disagrees with the program "
                                f"{report.disagreement.describe()}; {remedy}")
    return ValidationFailed("no input of the domain is in the program's domain (the "
                            f"interpreter fails on all {report.undefined}); nothing to validate")


def with_proof(weights: Transformer, proof: Proof) -> Transformer:
    """The weights with the proof recorded in their compile record ("proof"); a failed
    proof also marks them not validated."""
    metadata = dict(weights.metadata)
    record = {**metadata[COMPILE_KEY], "proof": proof.as_metadata()}
    if not proof.ok:
        record["validated"] = False
        metadata["validated"] = False
    metadata[COMPILE_KEY] = record
    return weights.replace(metadata=metadata)


def proven(result: Result, proof: Proof) -> Result:
    """A compile's result with its whole-domain proof: recorded in the weights, and a
    disagreement it found is the compile's (so the model is refused unless forced)."""
    report = result.report
    if proof.disagreement is not None:
        d = proof.disagreement
        report = replace(report, disagreement=Disagreement(
            d["input"], d["position"], d["expected"], d["actual"], "the interpreter",
            "the weights' NumPy forward (exhaustive proof)"))
    return replace(result, weights=with_proof(result.weights, proof), report=report)


def compile_seed(weights: Transformer) -> int:
    """The seed of the sample the compile validated on (0, the default, where the record
    predates it); a WeightsError if the file holds something else there."""
    validation = compile_info(weights).get("validation")
    seed = validation.get("seed", 0) if isinstance(validation, dict) else 0
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise WeightsError(f"metadata.{COMPILE_KEY}.validation.seed: expected an integer, "
                           f"got {seed!r}")
    return seed


def verify(path: str | Path | Transformer, root: g.SOp, *, samples: int | None = None,
           seed: int | None = None, progress: bool = False) -> Report:
    """Re-run the validation of a weights file (or loaded weights) against a program
    (NumPy and interpreter). A sampled domain is drawn with `seed`, by default the
    compile's seed + 1: a sample independent of the one the compile checked. Whether the
    file says validated is the caller's concern (`runtime.load_compiled`)."""
    weights = path if isinstance(path, Transformer) else load(path)
    info = compile_info(weights)
    if seed is None:
        seed = compile_seed(weights) + 1
    if info["tokens_kind"] == NUMERIC:
        low, high = info["token_range"]
        domain = NumericDomain(info["min_len"], info["max_len"], low, high)
        report = validate_numeric(root, weights, domain, samples=samples or NUMERIC_SAMPLES,
                                  seed=seed)
    else:
        report = validate(root, weights, info["vocab"], info["max_len"],
                          samples=samples or DEFAULT_SAMPLES,
                          seed=seed, progress=progress, min_len=info.get("min_len", 1))
    if report.disagreement is not None:
        drawn = "every input" if report.seed is None else f"a sample, seed {report.seed}"
        raise VerifyFailed(f"the model disagrees with the program "
                           f"{report.disagreement.describe()} (verify checked {drawn})")
    if not report.ok:
        raise VerifyFailed(f"the program fails on every input checked ({report.undefined}): "
                           "none is in its domain, so there is nothing to compare")
    return report
