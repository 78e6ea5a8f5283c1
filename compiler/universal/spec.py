"""What a universal transformer is, recorded in (and read back from) its metadata."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..weights import Transformer
from .errors import UniversalError
from .target import Shape


@dataclass(frozen=True)
class Spec:
    """kind: "sparse" or "random"; layout: the sparse block layout (compact, tied, residual),
    or for random UTs "tied"/"untied"; seed: the random UT's seed (None when sparse)."""

    shape: Shape
    kind: str
    layout: str
    tied: bool
    seed: int | None = None


def write_spec(spec: Spec, extra: dict) -> dict:
    return {"universal": {**asdict(spec.shape), "kind": spec.kind, "layout": spec.layout,
                          "tied": spec.tied, "seed": spec.seed, **extra}}


def read_spec(ut: Transformer) -> Spec:
    info = ut.metadata.get("universal")
    if not isinstance(info, dict):
        raise UniversalError("metadata.universal: this model is not a fixed universal "
                             "transformer (build one with `rasp-sim universal build`)")
    try:
        shape = Shape(*(info[name] for name in
                        ("dim", "head_dim", "out_dim", "heads", "layers", "residual", "causal")))
        return Spec(shape, info["kind"], info["layout"], info["tied"], info["seed"])
    except KeyError as missing:
        raise UniversalError(f"metadata.universal: missing field {missing}") from None


def check_tied(shape: Shape, tied: bool) -> None:
    """Tied (looped) weights cannot serve residual targets: R^V_h is the same in every layer,
    so paths taking the same heads but skipping different layers cannot be told apart
    (UNIVERSAL.md 5; for Gaussian weights their columns of M coincide)."""
    if tied and shape.residual:
        raise UniversalError("tied: a looped (weight-tied) universal transformer cannot "
                             "simulate residual targets (paths that skip different layers "
                             "collide); drop --tied or --residual")
