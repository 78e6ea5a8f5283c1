"""What a universal transformer is, recorded in (and read back from) its metadata."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..weights import AttentionBlock, Transformer, WeightsError
from ..weights_format import boolean, integer, nullable, one_of, record
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


_SIZES = ("dim", "head_dim", "out_dim", "heads", "layers")
_SPEC = record({**{name: integer(1) for name in _SIZES}, "residual": boolean, "causal": boolean,
                "kind": one_of("sparse", "random"), "tied": boolean, "seed": nullable(integer()),
                "layout": one_of("compact", "tied", "residual", "untied"), "m": integer(1)},
               optional={"blocks": integer()})


def read_spec(ut: Transformer) -> Spec:
    """The spec in `ut`'s metadata, checked field by field (WeightsError naming the field)
    and against `ut`'s own layers and widths, so a file cannot claim a shape it lacks."""
    info = ut.metadata.get("universal")
    if not isinstance(info, dict):
        raise UniversalError("metadata.universal: this model is not a fixed universal "
                             "transformer (build one with `rasp-sim universal build`)")
    _SPEC(info, "metadata.universal")
    shape = Shape(*(info[name] for name in (*_SIZES, "residual", "causal")))
    spec = Spec(shape, info["kind"], info["layout"], info["tied"], info["seed"])
    _check_layout(spec)
    _check_against(ut, spec, info["m"])
    return spec


def _check_layout(spec: Spec) -> None:
    if spec.kind == "random":
        expected = "tied" if spec.tied else "untied"
    else:
        expected = "residual" if spec.shape.residual else ("tied" if spec.tied else "compact")
    if spec.layout != expected:
        raise WeightsError(f"metadata.universal.layout: {spec.layout!r} does not fit a "
                           f"{spec.kind} universal transformer with tied {spec.tied} and "
                           f"residual {spec.shape.residual} (expected {expected!r})")


def _check_against(ut: Transformer, spec: Spec, m: int) -> None:
    shape = spec.shape
    facts = [("m", m, ut.width), ("out_dim", shape.out_dim, ut.out_dim),
             ("layers", shape.layers, len(ut.layers)), ("causal", shape.causal, ut.causal)]
    for index, block in enumerate(ut.layers):
        if not isinstance(block, AttentionBlock):
            raise WeightsError(f"layers.{index}: a universal transformer has attention blocks "
                               "only")
        facts += [("heads", shape.heads, len(block.heads)),
                  ("residual", shape.residual, block.residual)]
        facts += [("head_dim", shape.head_dim, head.w_q.shape[1]) for head in block.heads]
    for name, claimed, actual in facts:
        if claimed != actual:
            raise WeightsError(f"metadata.universal.{name}: says {claimed!r} but the weights "
                               f"have {actual!r}")


def check_tied(shape: Shape, tied: bool) -> None:
    """Tied (looped) weights cannot serve residual targets: R^V_h is the same in every layer,
    so paths taking the same heads but skipping different layers cannot be told apart
    (docs/universal.md; for Gaussian weights their columns of M coincide)."""
    if tied and shape.residual:
        raise UniversalError("tied: a looped (weight-tied) universal transformer cannot "
                             "simulate residual targets (paths that skip different layers "
                             "collide); drop --tied or --residual")
