"""A compiled model compressed to a narrower residual stream, and its whole-domain
certificate (docs/compiler.md#compression-with-a-certificate).

`compress_weights` learns W (states.py, train.py), builds the compressed weights
(algebra.py) and checks them against the program on every input of the model's domain
with the compiler's proof machinery (compiler/tracr_backend/proof.py, counting every
input the compressed model gets wrong). The result is marked validated only when it is
exact on all of them.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..compiler.tracr_backend.proof import Proof, prove
from ..compiler.tracr_backend.runtime import COMPILE_KEY, NUMERIC, compile_info, size
from ..compiler.weights import Transformer, computation_digest
from ..core.graph import SOp
from .algebra import CompressionError, compress_weights, refusal
from .states import Principal, model_inputs, principal_directions
from .train import train_basis

COMPRESSION_KEY = "compression"  # the metadata record of a compressed model
DEFAULT_STEPS = 300
# Inputs the basis is trained on at most (a seeded sample of a larger domain); the
# principal directions and the certificate use every input of the domain.
TRAIN_INPUTS = 1024

Report = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    """How to compress: training steps, the seed of the training sample, an orthonormal
    or free W, and where the certificate's proof runs (proof.prove's workers, scheduler)."""

    steps: int = DEFAULT_STEPS
    seed: int = 0
    orthogonal: bool = False
    workers: int | None = None
    scheduler: str | None = None


def check_compressible(weights: Transformer, width: int) -> None:
    """A CompressionError for a model or width that cannot be compressed and certified."""
    if compile_info(weights)["tokens_kind"] == NUMERIC:
        raise CompressionError("a numeric-input model reads real numbers: its domain is "
                               "infinite, so no compression of it can be certified")
    problem = refusal(weights, width)
    if problem is not None:
        raise CompressionError(problem)


def domain_principal(weights: Transformer) -> Principal:
    """The principal directions of the residual states over the whole domain; their rank
    is the width at and above which they compress exactly, without training."""
    return principal_directions(weights, model_inputs(weights))


def compress_weights_certified(weights: Transformer, root: SOp, width: int,
                               settings: Settings = Settings(),
                               report: Report = lambda line: None,
                               principal: Principal | None = None) -> Transformer:
    """`weights` compressed to `width` dims and certified against the s-op `root` on every
    input of the domain: marked validated only if exact on all of them
    (docs/compiler.md#compression-with-a-certificate). `principal`: the domain's
    principal directions where the caller has them (`domain_principal`)."""
    check_compressible(weights, width)
    start = time.perf_counter()
    principal = principal or domain_principal(weights)
    initial = principal.basis[:, :width]
    if width >= principal.rank:  # W W^T is the identity on every state: exact as it is
        basis, losses, steps = initial, None, 0
        method = "principal directions (width >= the rank bound: no training)"
    elif settings.steps == 0:
        basis, losses, steps = initial, None, 0
        method = "principal directions (no training: 0 steps)"
    else:
        sample = model_inputs(weights, TRAIN_INPUTS, settings.seed)
        trained = train_basis(weights, sample, initial, settings.steps, settings.orthogonal)
        basis, losses, steps = trained.basis, trained.losses, settings.steps
        method = (f"principal directions, then {'orthonormal' if settings.orthogonal else 'free'}"
                  f" W trained on {sample.count:,} inputs (output loss + residual MSE)")
    train_seconds = time.perf_counter() - start
    compressed = compress_weights(weights, basis)
    proof = certify(compressed, root, settings, report)
    info = compile_info(weights)
    record = {"source": {"name": info.get("name"), "program": info.get("program"),
                         "digest": computation_digest(weights)},
              "source_width": weights.width, "width": width, "rank_bound": principal.rank,
              "method": method, "orthogonal": settings.orthogonal, "seed": settings.seed,
              "steps": steps, "losses": losses, "seconds": round(train_seconds, 3),
              "certificate": certificate(proof)}
    return marked(compressed, proof, record)


def certify(weights: Transformer, root: SOp, settings: Settings, report: Report) -> Proof:
    """The whole-domain comparison of `weights` with the program, counting every input
    they get wrong (proof.prove with count_all; its chunk records in a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="rasp-sim-compress-") as folder:
        proof, _ = prove(weights, root, Path(folder), workers=settings.workers,
                         scheduler=settings.scheduler, report=report, resume=False,
                         count_all=True, resume_hint="the proof folder was temporary")
    return proof


def certificate(proof: Proof) -> dict:
    """The certificate a compressed model records: exact or the count of wrong inputs,
    the first disagreement of each chunk (up to proof.MAX_EXAMPLES), the proof's time."""
    return {"exact": proof.ok, "inputs": proof.total, "compared": proof.compared,
            "undefined": proof.undefined, "wrong": proof.wrong, "examples": proof.examples,
            "seconds": round(proof.seconds, 3), "cpu_seconds": round(proof.cpu_seconds, 3)}


def describe(record: dict) -> str:
    """The certificate line of a compression record."""
    cert = record["certificate"]
    head = f"width {record['width']} (of {record['source_width']})"
    if cert["exact"]:
        return (f"{head}: exact on all {cert['inputs']:,} inputs of the domain "
                f"({cert['undefined']:,} outside the program's domain), certified in "
                f"{cert['seconds']:.1f} s")
    example = ""
    if cert["examples"]:
        d = cert["examples"][0]
        example = (f"; e.g. on input {d['input']!r} at position {d['position']}: the "
                   f"program gives {d['expected']!r}, the compressed model {d['actual']!r}")
    return (f"{head}: NOT exact: wrong on {cert['wrong']:,} of {cert['inputs']:,} inputs"
            f"{example}")


def marked(weights: Transformer, proof: Proof, record: dict) -> Transformer:
    """The compressed weights with their compression record, their compile record's sizes,
    proof and validation replaced by the certificate's, validated only if it is exact."""
    metadata = dict(weights.metadata)
    info = {key: value for key, value in metadata[COMPILE_KEY].items() if key != "forced"}
    info.update(size(weights),
                proof=proof.as_metadata(), validated=proof.ok,
                validation={"mode": "exhaustive (compression certificate)",
                            "inputs": proof.total, "compared": proof.compared,
                            "undefined": proof.undefined, "ok": proof.ok,
                            "seed": record["seed"]})
    metadata.update({COMPILE_KEY: info, COMPRESSION_KEY: record, "validated": proof.ok})
    return weights.replace(metadata=metadata)

