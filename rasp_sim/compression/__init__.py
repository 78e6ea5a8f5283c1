"""Compression of a compiled model's residual stream with a whole-domain certificate
(docs/compiler.md#compression-with-a-certificate): `compress` (the API's
`rasp_sim.compress`) and the width search of `rasp-sim compress --find-width`
(search.py).

Needs jax and optax (the `train` extra) for training; imported inside the functions.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from ..base import api_arguments as arguments
from ..base.counts import positive, seed_number
from ..base.errors import RaspTypeError
from ..compiled.model import Model
from ..compiled.model_files import ModelFiles, Refused
from ..compiler.tracr_backend.runtime import compile_info
from ..core.graph import SOp
from ..language.program import Program
from .algebra import CompressionError
from .certified import DEFAULT_STEPS, Settings, compress_weights_certified

__all__ = ["compress", "CompressionError", "program_sop", "require_training"]

MAX_STEPS = 10**6


def compress(model: Model, width: int, *, program: Program | None = None,
             seed: int = 0, steps: int = DEFAULT_STEPS, orthogonal: bool = False,
             workers: int | None = None, scheduler: str | None = None) -> Model:
    """`model` with its residual stream compressed to `width` dims (1..`model.width`),
    certified on every input of its domain (docs/compiler.md#compression-with-a-certificate).

    W (D x width) starts from the principal directions of the residual states over the
    whole domain; below their rank it is trained for `steps` Adam steps (free, or orthonormal
    with `orthogonal=True`; a larger domain's training inputs are a sample drawn with `seed`)
    on the output loss plus each layer's residual MSE. The compressed model is then
    compared with the program on every input of the domain (the proof's chunks run here,
    or on a local Dask cluster of `workers` processes, or on the Dask `scheduler`): its
    metadata's "compression" record holds the certificate, and it is validated only if it
    is exact on every input. The program is `program` (a `rasp_sim.load` result) or, by
    default, the file the model's compile record names, read relative to the current
    folder. Needs jax and optax (`pip install "rasp-sim[train]"`)."""
    if not isinstance(model, Model):
        raise RaspTypeError("compress takes a Model (from rasp_sim.compile or "
                                      f"rasp_sim.load_model), not {arguments.shown(model)}")
    width = arguments.integer("compress", width, "width", 1)
    if program is not None and not isinstance(program, Program):
        raise RaspTypeError("compress: program must be a Program (from "
                                      f"rasp_sim.load) or None, not {arguments.shown(program)}")
    settings = Settings(
        steps=arguments.integer("compress", steps, "steps", 0, MAX_STEPS),
        seed=arguments.option_integer("compress", seed, "seed", 0, seed_number),
        orthogonal=arguments.flag("compress", orthogonal, "orthogonal"),
        workers=None if workers is None else arguments.option_integer(
            "compress", workers, "workers", 1, positive),
        scheduler=arguments.scheduler("compress", scheduler))
    require_training()
    root = program_sop(model.weights, program, Path.cwd())
    return Model(compress_weights_certified(model.weights, root, width, settings))


def require_training() -> None:
    """A CompressionError naming the extra when jax or optax is missing."""
    for module in ("jax", "optax"):
        if importlib.util.find_spec(module) is None:
            raise CompressionError(f"compression trains with jax and optax, and {module} is "
                                   "not installed: pip install 'rasp-sim[train]'")


def program_sop(weights: Any, program: Program | None, folder: Path) -> SOp:
    """The s-op the model was compiled from: the compile record's name in `program`, or in
    the record's program file read under the model-files rule from `folder`
    (compiled/model_files.py)."""
    info = compile_info(weights)
    name = info.get("name")
    if program is None:
        source = info.get("program")
        if not isinstance(source, str) or not isinstance(name, str):
            raise CompressionError("the model's compile record names no program file and "
                                   "s-op to certify against: give the program")
        try:
            program = ModelFiles(folder.resolve()).run_program(source)
        except Refused as refusal:
            raise CompressionError(f"the model's program {source!r} cannot be read ({refusal}): "
                                   "give the program (rasp-sim compress --program FILE, or "
                                   "compress(..., program=rasp_sim.load(FILE)))") from None
    node = program.node(name if isinstance(name, str) else None)[1]
    if not isinstance(node, SOp):
        raise CompressionError(f"{name!r} in {program.source} is a selector, not the s-op "
                               "the model computes")
    return node
