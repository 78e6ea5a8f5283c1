"""Assembly, both ways (docs/compiler.md).

`to_weights`: rasp-sim's own assembler, from tracr's craft model to the project's weight
format (compiler/weights.py). Every head keeps its own query/key width and value width, so
nothing is padded to a shared key size (tracr's key_size ignores the OV width and crashes,
docs/compiler.md), and the logit scale is 1, so every head has its craft block's coldness
(tracr divides by sqrt(key_size), docs/compiler.md). The unembedding, the residual labels
and the encoders are part of the result.

`tracr_model`: tracr's `assemble.assemble_craft_model` as an independent oracle, with the
two fixes applied from outside: the key size is raised to cover every head's OV width, and
every query weight is multiplied by sqrt(key_size) after assembly.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np
from tracr.compiler import assemble as tracr_assemble
from tracr.craft import bases, transformers
from tracr.transformer import encoder

from ..weights import (AttentionBlock, AttentionHead, InputEncoder, LayerNorm, MLPBlock,
                       OutputEncoder, Transformer)
from .bases import plain
from .blocks import REGLU, NormedMLP
from .pipeline import BOS, PAD, Compiled


def residual_space(compiled: Compiled) -> bases.VectorSpaceWithBasis:
    """tracr's residual space: the craft model's plus tokens, indices and output."""
    # A gated model also gates its plain ReLU units, by `one` (_mlp): it must be there.
    one = bases.VectorSpaceWithBasis([bases.BasisDirection("one")] if compiled.gated else [])
    return bases.join_vector_spaces(compiled.craft_model.residual_space, compiled.tokens_space,
                                    compiled.indices_space, compiled.output_space, one)


def _projection(space: bases.VectorSpaceWithBasis,
                residual: bases.VectorSpaceWithBasis) -> np.ndarray:
    """The (D x |space|) matrix reading `space` out of the residual stream."""
    matrix = np.zeros((residual.num_dims, space.num_dims))
    index = residual.index_by_direction
    for column, direction in enumerate(space.basis):
        if direction in index:
            matrix[index[direction], column] = 1.0
    return matrix


def _read(space: bases.VectorSpaceWithBasis, residual: bases.VectorSpaceWithBasis,
          matrix: np.ndarray) -> np.ndarray:
    """_projection(space, residual) @ matrix, by placing each row of `matrix` at its
    direction's residual row: the same numbers (the projection selects), without a dense
    (D x |space|) product per block."""
    out = np.zeros((residual.num_dims, matrix.shape[1]))
    index = residual.index_by_direction
    rows = [(index[d], i) for i, d in enumerate(space.basis) if d in index]
    if rows:
        targets, sources = zip(*rows)
        out[list(targets)] = matrix[list(sources)]
    return out


def to_weights(compiled: Compiled, metadata: dict[str, Any]) -> Transformer:
    residual = residual_space(compiled)
    layers: list[Any] = []
    for block in compiled.craft_model.blocks:
        if isinstance(block, transformers.MLP):
            layers.append(_mlp(block, residual))
        else:
            heads = [_head(head, residual) for head in block.as_multi().heads()]
            layers.append(AttentionBlock(tuple(heads), scale=1.0))
    tokens = compiled.tokens_space
    one = bases.BasisDirection("one")
    # Position 0 is BOS and has no index; position p > 0 is index p - 1.
    pos_embed = np.vstack([np.zeros((1, residual.num_dims)),
                           _projection(compiled.indices_space, residual).T])  # vstack: C order
    if compiled.numeric is not None:
        # The token's value enters linearly (input_proj); BOS and `one` come with the position
        index = residual.index_by_direction
        input_proj = np.ascontiguousarray(_projection(
            bases.VectorSpaceWithBasis([tokens.basis[0]]), residual).T)
        pos_embed[0, index[tokens.basis[1]]] = 1.0
        if one in residual:
            pos_embed[:, index[one]] = 1.0
        token_embed, input_encoder = None, None
    else:
        input_proj = None
        # C order (not transposed views): the forward's gathers and reshapes stay copy-free
        token_embed = np.ascontiguousarray(_projection(tokens, residual).T)
        if one in residual:  # every position, BOS included, carries the constant 1
            token_embed[:, residual.index_by_direction[one]] = 1.0
        input_encoder = InputEncoder(tuple(plain(d.value) for d in tokens.basis), BOS, PAD)
    output = compiled.output_space
    return Transformer(
        layers=tuple(layers),
        unembed=_projection(output, residual),
        causal=compiled.causal,
        input_proj=input_proj,
        token_embed=token_embed,
        pos_embed=pos_embed,
        residual_labels=tuple(str(d) for d in residual.basis),
        input_encoder=input_encoder,
        output_encoder=OutputEncoder(tuple(plain(d.value) for d in output.basis)
                                     if compiled.categorical_output else None),
        metadata=metadata)


def _head(head: transformers.AttentionHead,
          residual: bases.VectorSpaceWithBasis) -> AttentionHead:
    """One head, W_QK = W_Q W_K^T and W_OV = W_V W_O, without the columns of the key
    space that no query reads or no key writes (a term q_c k_c with a zero factor adds 0
    to every score: exact for a finite stream), nor the value columns that read nothing
    or write nothing. tracr spans a head's key space by a whole s-op's values (every
    position, for a select on indices), of which a compiled head uses a few: dropping the
    rest leaves its scores and outputs as they were and its parameters a fraction."""
    w_q = _read(head.w_qk.left_space, residual, head.w_qk.matrix)
    w_k = _projection(head.w_qk.right_space, residual)
    w_v = _read(head.w_ov.input_space, residual, head.w_ov.matrix)
    w_o = _projection(head.w_ov.output_space, residual).T
    qk = _kept(np.any(w_q != 0, axis=0) & np.any(w_k != 0, axis=0))
    v = _kept(np.any(w_v != 0, axis=0) & np.any(w_o != 0, axis=1))
    return AttentionHead(w_q=np.ascontiguousarray(w_q[:, qk]), w_k=np.ascontiguousarray(w_k[:, qk]),
                         w_v=np.ascontiguousarray(w_v[:, v]), w_o=np.ascontiguousarray(w_o[v]))


def _kept(used: np.ndarray) -> np.ndarray:
    """The used columns' indices; one zero column where none is (a head of width 0 is
    not a head the weight format's readers take)."""
    return np.flatnonzero(used) if used.any() else np.arange(min(1, used.size))


def _mlp(block: transformers.MLP, residual: bases.VectorSpaceWithBasis) -> MLPBlock:
    """A craft MLP (several combined in parallel) as one weight-format MLP.

    A gated unit (blocks.reglu_mlp) is a pair of hidden directions, "act" and "gate": the
    pair becomes one unit relu(x W1) * (x W_gate). If the layer has any, its plain ReLU
    units get the gate `one` (1 at every position), which leaves them unchanged."""
    w1 = _read(block.fst.input_space, residual, block.fst.matrix)
    w2 = _read(block.snd.output_space, residual, block.snd.matrix.T).T
    hidden = block.fst.output_space
    gate_of = {d: hidden.index_by_direction[bases.BasisDirection(d.name, (d.value[0], "gate"))]
               for d in hidden.basis if d.name.startswith(REGLU) and d.value[1] == "act"}
    units = [i for i, d in enumerate(hidden.basis)
             if not (d.name.startswith(REGLU) and d.value[1] == "gate")]
    # Hidden units that write nothing (a zero row of W2: e.g. the table entries of a
    # sequence map whose output is 0) are dropped; relu(.) * 0 adds exactly 0, so the
    # output is unchanged and dyck1's 786-unit MLP keeps 10 units.
    live = [i for i in units if np.any(w2[i] != 0)]
    norm = _layer_norm(block, residual)
    if not gate_of:
        return MLPBlock(w1[:, live], np.zeros(len(live)), w2[live], np.zeros(residual.num_dims),
                        norm=norm)
    def gate(i: int) -> np.ndarray:
        if hidden.basis[i] in gate_of:
            return w1[:, gate_of[hidden.basis[i]]]
        one = np.zeros(residual.num_dims)  # in a gated model's residual (residual_space)
        one[residual.index_by_direction[bases.BasisDirection("one")]] = 1.0
        return one
    gates = (np.stack([gate(i) for i in live], axis=1) if live
             else np.zeros((residual.num_dims, 0)))
    return MLPBlock(w1[:, live], np.zeros(len(live)), w2[live], np.zeros(residual.num_dims),
                    norm=norm, w_gate=np.ascontiguousarray(gates), b_gate=np.zeros(len(live)))


def _layer_norm(block: transformers.MLP, residual: bases.VectorSpaceWithBasis
                ) -> LayerNorm | None:
    """A NormedMLP's LayerNorm of its residual columns (gain 1, bias 0), else None."""
    if not isinstance(block, NormedMLP):
        return None
    columns = tuple(sorted(residual.index_by_direction[d] for d in block.normalised))
    return LayerNorm(np.ones(len(columns)), np.zeros(len(columns)), block.eps, columns)


@contextlib.contextmanager
def _key_size_covering_ov(craft_model: transformers.SeriesWithResiduals) -> Iterator[None]:
    """Within the block, tracr's config computation also counts every head's OV width."""
    original = tracr_assemble._get_model_config_and_module_names
    widest = max((head.w_ov.matrix.shape[1] for block in craft_model.blocks
                  if not isinstance(block, transformers.MLP)
                  for head in block.as_multi().heads()), default=1)

    def patched(model: transformers.SeriesWithResiduals) -> Any:
        config, names = original(model)
        config.key_size = max(config.key_size, widest)
        return config, names

    tracr_assemble._get_model_config_and_module_names = patched
    try:
        yield
    finally:
        tracr_assemble._get_model_config_and_module_names = original


class _PlainDecoder(encoder.CategoricalEncoder):
    """tracr's output decoding by basis position: its own inverts a value -> id dict, in
    which True and 1 (False and 0) are one key."""

    def __init__(self, basis: list[bases.BasisDirection]):
        super().__init__(basis)
        self.values = [plain(d.value) for d in basis]

    def decode(self, encodings: list[int]) -> list[Any]:
        return [self.values[i] for i in encodings]


def _plain_basis(space: bases.VectorSpaceWithBasis) -> list[bases.BasisDirection]:
    """The basis with the program's values (bases.plain), for tracr's encoders to decode."""
    return [bases.BasisDirection(d.name, plain(d.value)) for d in space.basis]


def tracr_model(compiled: Compiled) -> tracr_assemble.AssembledTransformerModel:
    """tracr's assembled model with the key-size and logit-scale fixes and its encoders."""
    with _key_size_covering_ov(compiled.craft_model):
        model = tracr_assemble.assemble_craft_model(
            craft_model=compiled.craft_model, tokens_space=compiled.tokens_space,
            indices_space=compiled.indices_space, output_space=compiled.output_space,
            categorical_output=compiled.categorical_output, causal=compiled.causal)
    scale = np.sqrt(model.model_config.key_size)
    params = {module: dict(weights) for module, weights in model.params.items()}
    for module in params:
        if module.endswith("/attn/query"):
            params[module]["w"] = params[module]["w"] * scale
    model.params = params
    model.input_encoder = encoder.CategoricalEncoder(
        basis=_plain_basis(compiled.tokens_space), enforce_bos=True, bos_token=BOS,
        pad_token=PAD, max_seq_len=compiled.max_len + 1)
    model.output_encoder = (_PlainDecoder(basis=compiled.output_space.basis)
                            if compiled.categorical_output else encoder.NumericalEncoder())
    return model
