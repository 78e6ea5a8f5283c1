"""Sizes of a universal transformer next to the reference bounds (docs/universal.md).

Only achieved sizes are reported as facts. The paper's stated bounds (as described, not
checked against its text) are shown as formulas without constant, with d the target's
embedding (input) width, as the paper states them (docs/universal.md: "the target T has ...
embedding dimension d").
"""
from __future__ import annotations

from ..weights import AttentionBlock, SparseMatrix, Transformer
from .paths import constraint_count
from .spec import read_spec


def nonzeros(matrix) -> int:
    if isinstance(matrix, SparseMatrix):
        return matrix.nnz
    return int((matrix != 0).sum())


def size_report(ut: Transformer) -> dict:
    spec = read_spec(ut)
    shape = spec.shape
    heads, layers, k, c = shape.heads, shape.layers, shape.head_dim, shape.out_dim
    paths = (heads + 1) ** layers if shape.residual else heads ** layers
    heads_of = [h for block in ut.layers if isinstance(block, AttentionBlock) for h in block.heads]
    return {
        "kind": spec.kind,
        "layout": spec.layout,
        "heads": heads, "layers": layers, "dim": shape.dim, "head_dim": k, "out_dim": c,
        "residual": shape.residual, "causal": shape.causal, "tied": spec.tied,
        "m": ut.width,
        "constraints_C": constraint_count(shape),
        "blocks": ut.metadata["universal"].get("blocks"),
        "nonzeros": {
            "R_Q": [nonzeros(h.w_q) for h in heads_of],
            "R_K": [nonzeros(h.w_k) for h in heads_of],
            "R_V": [nonzeros(h.w_v) for h in heads_of],
            "P": nonzeros(ut.unembed),
        },
        "reference": {
            "single_head_2kL_plus_c": 2 * k * layers + c,
            # The paper's stated O(Ld) (H = 1) / O(HLd) (H >= 2), evaluated without constant.
            "paper_stated_L_d" if heads == 1 else "paper_stated_H_L_d":
                layers * shape.dim * (1 if heads == 1 else heads),
            # docs/universal.md with c outputs: even for d = 1 the read-out coefficients
            # e R_p P (one c-vector per path p) must span every u (x) v_1 (x) ... (x) v_L, a
            # space of c * paths dimensions, so attention matching needs m >= c * paths.
            "attention_matching_lower_bound": c * paths,
        },
    }
