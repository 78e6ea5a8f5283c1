"""Frozen backbones of docs/universal.md in the shared weight format, with what trains.

Every variant is a `Transformer` (compiler/weights.py) whose token embedding, position
embedding and unembedding are the trainable program (E = [E_tok; E_pos] and U); everything
else is frozen, except in the fully trained baseline F.

| variant | backbone |
|---|---|
| S-A   | sparse {0,1} tree UT (compact layout), attention-only, causal |
| R-A   | Gaussian UT with the same m, H, L (an ordinary random transformer's attention scale) |
| S-RL, R-RL | as above plus residual stream and pre-LayerNorm (gain 1, bias 0, frozen) before
  each attention sublayer and before the unembedding |
| S-RLM, R-RLM | as *-RL plus a frozen random GPT-2 MLP (width 4m, GELU) in every layer |
| F     | the R-RLM architecture, every parameter trained |

The arrays are addressed by dotted names ("layers.0.heads.1.w_q", "token_embed", ...):
`named_arrays` lists them and `rebuild_blocks` puts (possibly traced JAX) arrays back, so
the training step runs the project's forward pass (compiler/forward.py) unchanged.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from rasp_sim.compiler.universal.gaussian import build_random
from rasp_sim.compiler.universal.sparse import build_sparse
from rasp_sim.compiler.universal.target import Shape
from rasp_sim.compiler.weights import (AttentionBlock, Block, LayerNorm, MLPBlock, SparseMatrix, Transformer)
from .errors import ExperimentError

VARIANTS = ("S-A", "R-A", "S-RL", "R-RL", "S-RLM", "R-RLM", "F")
EMBED_STD = 0.02  # GPT-2's initialisation of the trainable embeddings and unembedding


@dataclass(frozen=True)
class Sizes:
    """The target shape a UT stands for: heads H, layers L, head dim k, read-out width c."""

    heads: int
    layers: int
    head_dim: int
    out_dim: int

    def shape(self) -> Shape:
        return Shape(dim=max(self.head_dim, self.out_dim), head_dim=self.head_dim,
                     out_dim=self.out_dim, heads=self.heads, layers=self.layers,
                     residual=False, causal=True)


@dataclass(frozen=True, eq=False)
class Backbone:
    variant: str
    model: Transformer          # initial weights: frozen backbone + initial embeddings
    trainable: frozenset[str]   # dotted names of the trained arrays

    @property
    def m(self) -> int:
        return self.model.width

    def parameter_counts(self) -> dict[str, int]:
        """Stored numbers (sparse fixed matrices count their non-zeros) and trained ones."""
        arrays = named_arrays(self.model)
        size = {name: (a.nnz if isinstance(a, SparseMatrix) else int(np.size(a)))
                for name, a in arrays.items()}
        return {"parameters": sum(size.values()),
                "trainable": sum(size[name] for name in self.trainable)}


def named_arrays(model: Transformer) -> dict:
    """Every weight array of `model` by dotted name (LayerNorm gains and biases included)."""
    arrays: dict = {"token_embed": model.token_embed, "pos_embed": model.pos_embed,
                    "unembed": model.unembed}
    for index, block in enumerate(model.layers):
        prefix = f"layers.{index}"
        if isinstance(block, AttentionBlock):
            for h, head in enumerate(block.heads):
                for name in ("w_q", "w_k", "w_v", "w_o"):
                    arrays[f"{prefix}.heads.{h}.{name}"] = getattr(head, name)
        else:
            for name in ("w1", "b1", "w2", "b2"):
                arrays[f"{prefix}.{name}"] = getattr(block, name)
        if block.norm is not None:
            arrays[f"{prefix}.norm.gain"], arrays[f"{prefix}.norm.bias"] = block.norm.gain, block.norm.bias
    if model.final_norm is not None:
        arrays["final_norm.gain"], arrays["final_norm.bias"] = model.final_norm.gain, model.final_norm.bias
    return {name: value for name, value in arrays.items() if value is not None}


def _norm(norm: LayerNorm | None, prefix: str, arrays: dict) -> LayerNorm | None:
    if norm is None:
        return None
    return LayerNorm(arrays.get(f"{prefix}.gain", norm.gain), arrays.get(f"{prefix}.bias", norm.bias),
                     norm.eps)


def rebuild_blocks(model: Transformer, arrays: dict) -> tuple[tuple[Block, ...], LayerNorm | None]:
    """`model`'s blocks and final norm with the arrays in `arrays` swapped in (no checks, so
    JAX tracers are fine); names missing from `arrays` keep the model's own."""
    blocks: list[Block] = []
    for index, block in enumerate(model.layers):
        prefix = f"layers.{index}"
        norm = _norm(block.norm, f"{prefix}.norm", arrays)
        if isinstance(block, AttentionBlock):
            heads = tuple(replace(head, **{name: arrays.get(f"{prefix}.heads.{h}.{name}",
                                                            getattr(head, name))
                                           for name in ("w_q", "w_k", "w_v", "w_o")})
                          for h, head in enumerate(block.heads))
            blocks.append(replace(block, heads=heads, norm=norm))
        else:
            blocks.append(replace(block, norm=norm, **{name: arrays.get(f"{prefix}.{name}",
                                                                        getattr(block, name))
                                                       for name in ("w1", "b1", "w2", "b2")}))
    return tuple(blocks), _norm(model.final_norm, "final_norm", arrays)


def with_arrays(model: Transformer, arrays: dict) -> Transformer:
    """A checked copy of `model` with NumPy arrays from `arrays` (e.g. trained ones)."""
    host = {name: np.asarray(value, dtype=np.float64) for name, value in arrays.items()}
    blocks, final_norm = rebuild_blocks(model, host)
    return model.replace(layers=blocks, final_norm=final_norm,
                         **{name: host[name] for name in ("token_embed", "pos_embed", "unembed")
                            if name in host})


def _unit_norm(width: int) -> LayerNorm:
    return LayerNorm(np.ones(width), np.zeros(width))


def _mlp(width: int, layers: int, rng: np.random.Generator) -> MLPBlock:
    """GPT-2's MLP at initialisation: N(0, 0.02), output projection scaled by 1/sqrt(2L)."""
    hidden = 4 * width
    return MLPBlock(rng.normal(scale=0.02, size=(width, hidden)), np.zeros(hidden),
                    rng.normal(scale=0.02 / np.sqrt(2 * layers), size=(hidden, width)),
                    np.zeros(width), activation="gelu", residual=True, norm=_unit_norm(width))


def universal_machine(variant: str, sizes: Sizes, seed: int, dim: int | None = None) -> Transformer:
    """The universal transformer a backbone freezes: the sparse one for S-*, else a random
    one of the same m. `dim` is the input width its metadata records for `embed` (a trained
    embedding of token and position rows is E for one-hot inputs of width vocab + seq_len);
    no weight depends on it."""
    shape = sizes.shape() if dim is None else replace(sizes.shape(), dim=dim)
    sparse = build_sparse(shape)
    return sparse if variant.startswith("S") else build_random(shape, seed=seed, m=sparse.width)


def build_backbone(variant: str, sizes: Sizes, vocab: int, seq_len: int, seed: int,
                   embed_std: float = EMBED_STD) -> Backbone:
    """The `variant` backbone for `sizes`, with trainable embeddings drawn from `seed`:
    the token and position embeddings' entries with standard deviation `embed_std`, the
    unembedding's with EMBED_STD, so that `embed_std` varies the input's scale alone."""
    if variant not in VARIANTS:
        raise ExperimentError(f"backbone: unknown backbone {variant!r}; "
                              f"known backbones: {', '.join(VARIANTS)}")
    ut = universal_machine(variant, sizes, seed)
    m = ut.width
    normed = variant not in ("S-A", "R-A")
    # Pre-softmax scores O(1) on a stream of unit-variance coordinates (what LayerNorm
    # gives): the random machine is built that way (gaussian.build_random: weights of
    # variance 1/m, scale 1/sqrt(k)); a 0/1 selector gives scores of std sqrt(k), so the
    # sparse machine takes 1/sqrt(k) under LayerNorm. Without it the trained E sets the
    # sparse machine's scale (as built: 1).
    sparse_scale = 1.0 / np.sqrt(sizes.head_dim) if normed else 1.0
    rng = np.random.default_rng([seed, 1])
    layers: list[Block] = []
    for block in ut.layers:
        assert isinstance(block, AttentionBlock)  # universal machines are attention-only
        scale = sparse_scale if variant.startswith("S") else block.scale
        layers.append(replace(block, scale=scale, residual=normed,
                              norm=_unit_norm(m) if normed else None))
        if variant.endswith("M") or variant == "F":
            layers.append(_mlp(m, sizes.layers, rng))
    model = Transformer(
        layers=tuple(layers), causal=True,
        token_embed=rng.normal(scale=embed_std, size=(vocab, m)),
        pos_embed=rng.normal(scale=embed_std, size=(seq_len, m)),
        unembed=rng.normal(scale=EMBED_STD, size=(m, vocab)),
        final_norm=_unit_norm(m) if normed else None,
        metadata={"experiment_backbone": variant, "universal": ut.metadata["universal"]})
    names = named_arrays(model)
    trainable = frozenset(names) if variant == "F" else \
        frozenset({"token_embed", "pos_embed", "unembed"})
    return Backbone(variant, model, trainable)


def estimate_bytes(sizes: Sizes, m: int, variant: str, batch: int, seq_len: int) -> int:
    """A generous estimate of training memory (float32): activations kept for the backward
    pass, the weights and, for trained arrays, gradients and two Adam moments."""
    tokens = batch * seq_len
    heads, layers = sizes.heads, sizes.layers
    mlp = variant.endswith("M") or variant == "F"
    per_layer = heads * (tokens * (2 * sizes.head_dim + 2 * m) + 2 * batch * seq_len ** 2) \
        + 3 * tokens * m + (10 * tokens * m if mlp else 0)
    activations = layers * per_layer + 2 * tokens * m
    weights = _layer_matrices(sizes, m, variant)
    trained = weights if variant == "F" else 0
    return 4 * (2 * activations + weights + 3 * trained)


def _layer_matrices(sizes: Sizes, m: int, variant: str) -> int:
    """The entries of the layers' matrices: per head a query and key map (m x k) and a
    value-output map (m x m), and an MLP's two m x 4m maps."""
    mlp = variant.endswith("M") or variant == "F"
    return sizes.layers * (sizes.heads * (m * m + 2 * m * sizes.head_dim)
                           + (8 * m * m if mlp else 0))


def trained_count(sizes: Sizes, m: int, variant: str, vocab: int, seq_len: int) -> int:
    """At least as many numbers as `variant`'s backbone trains, known before it is built:
    the embeddings and unembedding; for F also the layers' matrices, 16 m a layer for its
    LayerNorms' gains and biases and its MLP's biases (9 m in build_backbone), and the
    final norm's 2 m."""
    embeddings = (2 * vocab + seq_len) * m
    if variant != "F":
        return embeddings
    return embeddings + _layer_matrices(sizes, m, variant) + 16 * m * sizes.layers + 2 * m


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (Linux), else None (no check)."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_memory(sizes: Sizes, m: int, variant: str, batch: int, seq_len: int) -> None:
    """ExperimentError before building anything that would not fit in memory."""
    need, have = estimate_bytes(sizes, m, variant, batch, seq_len), available_bytes()
    limit = os.environ.get("RASP_SIM_MEMORY_LIMIT")
    have = int(limit) if limit else have
    if have is not None and need > 0.8 * have:
        raise ExperimentError(
            f"sizes: {variant} with H={sizes.heads}, L={sizes.layers}, k={sizes.head_dim}, "
            f"c={sizes.out_dim} has m = {m} and needs about {need / 2**30:.1f} GiB to train "
            f"with batch {batch} x length {seq_len}, but only {have / 2**30:.1f} GiB are "
            f"available; lower H, L, k, c or the batch size")


def universal_m(sizes: Sizes) -> int:
    """m of the compact sparse UT for `sizes` (the random UTs use the same m), by formula
    (docs/universal.md) so it is known before anything is built."""
    h, l, k, c = sizes.heads, sizes.layers, sizes.head_dim, sizes.out_dim
    views = sum(h ** j for j in range(l))
    return 2 * h * k * views + c * h ** l
