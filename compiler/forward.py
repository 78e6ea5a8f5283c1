"""Batched forward pass of the weight format (compiler/weights.py), float64.

Every function is a pure function of arrays and takes the array module `xp` (NumPy by
default), so the same code can run under `jax.numpy` for the embedding-training
experiments. Shapes: inputs (B, N, d_in) features or (B, N) token ids; the residual stream
(B, N, D); outputs (B, N, c).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable

import numpy as np

from .planned_products import (RightProduct, distinct_labels, distinct_pairs,
                               shared_pattern_values)
from .weights import (AttentionBlock, AttentionHead, LayerNorm, Matrix, MLPBlock, SparseMatrix,
                      Transformer, WeightsError, as_dense)

Array = Any  # an xp array


def matmul(x: Array, w: Matrix, xp: ModuleType = np) -> Array:
    """x @ w over the last axis of x, for a dense or a sparse w."""
    if not isinstance(w, SparseMatrix):
        # One 2-D GEMM over all B*N rows: NumPy runs a stacked (B, N, D) @ (D, k) as B
        # small products, several times slower on the batches the compiled models see.
        flat = x.reshape(-1, x.shape[-1])
        out = _dense_numpy(flat, w) if xp is np else flat @ xp.asarray(w)
        return out.reshape(*x.shape[:-1], out.shape[-1])
    flat = x.reshape(-1, w.shape[0])
    contributions = flat[:, w.rows] * xp.asarray(w.values)
    if xp is np:
        out = np.zeros((flat.shape[0], w.shape[1]))
        order, columns, starts = w.column_runs
        if columns.size:
            out[:, columns] = np.add.reduceat(contributions[:, order], starts, axis=1)
    else:  # functional update (jax.numpy)
        out = xp.zeros((flat.shape[0], w.shape[1])).at[:, w.cols].add(contributions)
    return out.reshape(*x.shape[:-1], w.shape[1])


def _dense_numpy(flat: np.ndarray, w: np.ndarray) -> np.ndarray:
    """flat @ w, skipping w's all-zero rows and columns when they are most of it.

    Compiled (tracr) blocks read a few residual directions and write a few: their dense
    matrices are mostly zero rows and columns. Leaving out a zero row drops terms x * 0 = 0
    (exact for finite x); the sum of the remaining terms may be ordered differently by BLAS
    (ulp-level). Dense matrices without such structure take the plain product."""
    w = np.asarray(w)
    rows = np.flatnonzero(w.any(axis=1))
    cols = np.flatnonzero(w.any(axis=0))
    if 2 * rows.size > w.shape[0] and 2 * cols.size > w.shape[1]:
        return flat @ w
    product = flat[:, rows] @ w[np.ix_(rows, cols)]
    if cols.size == w.shape[1]:
        return product
    out = np.zeros((flat.shape[0], w.shape[1]))
    out[:, cols] = product
    return out


def layer_norm(x: Array, norm: LayerNorm, xp: ModuleType = np) -> Array:
    if norm.columns is not None:
        return layer_norm_columns(x, norm, xp)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / xp.sqrt(var + norm.eps) * norm.gain + norm.bias


def layer_norm_columns(x: Array, norm: LayerNorm, xp: ModuleType = np) -> Array:
    """x with the residual columns `norm.columns` replaced by their LayerNorm; the other
    columns pass through unchanged (a new array: x is the residual stream itself)."""
    columns = np.asarray(norm.columns)
    normed = layer_norm(x[..., columns], replace(norm, columns=None), xp)
    if xp is np:
        out = x.copy()
        out[..., columns] = normed
        return out
    return x.at[..., columns].set(normed)  # functional update (jax.numpy)


def softmax_attention(q: Array, k: Array, scale: float, causal: bool,
                      xp: ModuleType = np) -> Array:
    """Row-stochastic attention matrix softmax(scale q k^T), shape (B, N, N)."""
    scores = scale * (q @ xp.swapaxes(k, -1, -2))
    if causal:
        n = scores.shape[-1]
        scores = xp.where(xp.tril(xp.ones((n, n), dtype=bool)), scores, -xp.inf)
    if xp is np:  # the same operations in place on the fresh scores array
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        return scores
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = xp.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def head_pattern(x: Array, head: AttentionHead, scale: float, causal: bool,
                 xp: ModuleType = np) -> Array:
    """One head's attention pattern (B, N queries, N keys) on the block's input x."""
    return softmax_attention(matmul(x, head.w_q, xp), matmul(x, head.w_k, xp), scale, causal, xp)


def head_output(x: Array, pattern: Array, head: AttentionHead, xp: ModuleType = np) -> Array:
    """What one head adds to the residual stream: pattern x W_V (W_O)."""
    out = pattern @ matmul(x, head.w_v, xp)
    return out if head.w_o is None else matmul(out, head.w_o, xp)


def attention(x: Array, block: AttentionBlock, causal: bool, xp: ModuleType = np) -> Array:
    """Sum over heads of A_h x W_V W_O (without the residual)."""
    total = None
    for head in block.heads:
        out = head_output(x, head_pattern(x, head, block.scale, causal, xp), head, xp)
        if total is None:
            total = out
        elif xp is np:  # every head's output is a fresh array: accumulate in place
            total += out
        else:
            total = total + out
    return total


ACTIVATION_FUNCTIONS = {
    "relu": lambda z, xp: xp.maximum(z, 0.0),
    # GPT-2's tanh approximation of GELU (the frozen random MLPs of docs/universal.md).
    "gelu": lambda z, xp: 0.5 * z * (1.0 + xp.tanh(0.7978845608028654 * (z + 0.044715 * z ** 3))),
    "linear": lambda z, xp: z,  # with a gate: the bilinear block
}

_HIDDEN_CHUNK = 1 << 18  # hidden-layer elements per chunk: 2 MiB of float64 (about L2)


def mlp_hidden(x: Array, block: MLPBlock, xp: ModuleType = np) -> Array:
    """The MLP's hidden activations act(x W1 + b1), times the gate (x W_gate + b_gate) when
    gated: what W2 reads."""
    hidden = ACTIVATION_FUNCTIONS[block.activation](matmul(x, block.w1, xp) + block.b1, xp)
    if block.gated:
        assert block.w_gate is not None  # a gated block has its gate (weights.py)
        hidden = hidden * (matmul(x, block.w_gate, xp) + block.b_gate)
    return hidden


def mlp(x: Array, block: MLPBlock, xp: ModuleType = np) -> Array:
    """act(x W1 + b1) W2 + b2, the hidden layer times (x W_gate + b_gate) when gated."""
    if xp is not np:
        return matmul(mlp_hidden(x, block, xp), block.w2, xp) + block.b2
    # NumPy: row chunks whose hidden layer (the largest array) stays in cache, the same
    # operations in place. Rows are independent: chunking changes at most BLAS's order of
    # summation within a row (ulp-level).
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty((flat.shape[0], block.b2.shape[0]))
    step = max(256, _HIDDEN_CHUNK // max(block.b1.shape[0], 1))
    for start in range(0, flat.shape[0], step):
        pre = matmul(flat[start:start + step], block.w1, np)
        pre += block.b1
        hidden = np.maximum(pre, 0.0, out=pre) if block.activation == "relu" \
            else ACTIVATION_FUNCTIONS[block.activation](pre, np)
        if block.gated:
            assert block.w_gate is not None
            gate = matmul(flat[start:start + step], block.w_gate, np)
            gate += block.b_gate
            hidden *= gate  # hidden is fresh (pre, or a new array; "linear" returns pre)
        out[start:start + step] = matmul(hidden, block.w2, np)
    out += block.b2
    return out.reshape(*x.shape[:-1], out.shape[-1])


def block_input(x: Array, block: AttentionBlock | MLPBlock, xp: ModuleType = np) -> Array:
    """What the block's sublayer reads: the residual stream, after its pre-LayerNorm."""
    return x if block.norm is None else layer_norm(x, block.norm, xp)


def apply_block(x: Array, block: AttentionBlock | MLPBlock, causal: bool,
                xp: ModuleType = np) -> Array:
    """One block: optional pre-LayerNorm, the sublayer, optional residual."""
    inner = block_input(x, block, xp)
    out = attention(inner, block, causal, xp) if isinstance(block, AttentionBlock) \
        else mlp(inner, block, xp)
    if not block.residual:
        return out
    if xp is np:  # out is fresh (never x itself): add the residual in place
        out += x
        return out
    return out + x


def embed_features(model: Transformer, features: Array, xp: ModuleType = np) -> Array:
    """The residual stream at layer 0 for real input features (B, N, d_in): their
    projection plus the position embedding when the model has one (compiled numeric-input
    models do; the fixed universal transformers do not)."""
    features = xp.asarray(features, dtype=xp.float64)
    _check_features(model, features)
    stream = features if model.input_proj is None else matmul(features, model.input_proj, xp)
    return _add_positions(model, stream, xp)


def _check_features(model: Transformer, features: Array) -> None:
    if model.input_proj is None:
        if features.shape[-1] != model.width:
            raise WeightsError(f"input: feature dimension {features.shape[-1]} differs from the "
                               f"model width D = {model.width} and the model has no input_proj")
    elif features.shape[-1] != model.input_proj.shape[0]:
        raise WeightsError(f"input: feature dimension {features.shape[-1]} differs from "
                           f"input_proj rows d_in = {model.input_proj.shape[0]}")
    if features.ndim >= 2:
        _check_length(model, features.shape[-2])


def _check_length(model: Transformer, n: int) -> None:
    if model.pos_embed is not None and n > model.pos_embed.shape[0]:
        raise WeightsError(f"pos_embed: sequence length {n} exceeds max_len "
                           f"{model.pos_embed.shape[0]}")


def embed_tokens(model: Transformer, ids: Array, xp: ModuleType = np) -> Array:
    """The residual stream at layer 0 for token ids (B, N): token plus position embedding."""
    if model.token_embed is None:
        raise WeightsError("token_embed: the model has no token embedding")
    if isinstance(ids, (np.ndarray, list, tuple)):  # concrete ids (not traced by JAX):
        # NumPy would raise IndexError for a large id and wrap a negative one
        ids = np.asarray(ids)
        vocabulary = model.token_embed.shape[0]
        if not _ids_within(ids, vocabulary):
            bad = int(ids.min()) if ids.min() < 0 else int(ids.max())
            raise WeightsError(f"input: token id {bad} is outside the model's vocabulary "
                               f"of {vocabulary} ids (0..{vocabulary - 1})")
    return _add_positions(model, xp.asarray(model.token_embed)[ids], xp)


def _ids_within(ids: np.ndarray, vocabulary: int) -> bool:
    """Whether every token id indexes a vocabulary of that size (0..vocabulary - 1)."""
    return not ids.size or (ids.min() >= 0 and ids.max() < vocabulary)


def _add_positions(model: Transformer, stream: Array, xp: ModuleType) -> Array:
    """stream (B, N, D) + pos_embed[:N], or stream itself for a model without positions."""
    if model.pos_embed is None:
        return stream
    n = stream.shape[-2]
    _check_length(model, n)
    return stream + xp.asarray(model.pos_embed)[:n]


def residual_stream(model: Transformer, stream: Array, xp: ModuleType = np) -> list[Array]:
    """The residual stream before the first block and after each block."""
    states = [stream]
    for block in model.layers:
        states.append(apply_block(states[-1], block, model.causal, xp))
    return states


def readout(model: Transformer, stream: Array, xp: ModuleType = np) -> Array:
    if model.final_norm is not None:
        stream = layer_norm(stream, model.final_norm, xp)
    return matmul(stream, model.unembed, xp)


# ----------------------------------------------------------------- the planned NumPy forward
#
# A compiled (tracr) block reads a few residual directions and writes a few. Which ones,
# and the weights restricted to them, are worked out once per model (`_plan`, cached for
# the model object's lifetime; a Transformer is immutable, and `replace` makes a new one
# with its own plan: arrays changed in place after a first pass would not be seen), not
# on every call: each block then gathers the columns it
# reads once, runs its products on them and adds its output to the columns it writes, in
# place. An attention block projects every head's queries, keys and values with one
# product, takes the softmax of all its heads in one call and writes through one stacked
# output product. Leaving out a zero row or column drops terms x * 0 = 0 (exact for finite
# x); the products' sums may be ordered differently by BLAS (ulp-level, far below the
# 1e-9 validation tolerance). Blocks of other kinds (sparse, normed, without residual, and
# any kind added later) run whole through `apply_block`: a new kind needs nothing here to
# work, and gets a planned step only where that pays.

Columns = Any  # a slice (a view of the stream) or an int64 index array (a gather)


def _columns(indices: np.ndarray) -> Columns:
    """Column indices as a slice where they are one contiguous run: reading and writing a
    slice of the stream is a strided view, an index array a gather and a scatter."""
    if indices.size and np.array_equal(indices, np.arange(indices[0], indices[0] + indices.size)):
        return slice(int(indices[0]), int(indices[0]) + indices.size)
    return indices


@dataclass(frozen=True)
class _Runs:
    """Written columns as a few contiguous runs: (stream slice, output slice) pairs, so
    adding a block's output is a few in-place slice additions instead of a scatter."""

    runs: tuple[tuple[slice, slice], ...]


_MAX_RUNS = 4


def _written(indices: np.ndarray) -> Columns:
    """Written columns as a slice, a few runs (_Runs) or an index array."""
    if not indices.size:
        return indices
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    if breaks.size == 0:
        return slice(int(indices[0]), int(indices[0]) + indices.size)
    if breaks.size >= _MAX_RUNS:
        return indices
    bounds = [0, *breaks.tolist(), indices.size]
    return _Runs(tuple((slice(int(indices[a]), int(indices[a]) + b - a), slice(a, b))
                       for a, b in zip(bounds, bounds[1:])))


def _add(flat: np.ndarray, columns: Columns, out: np.ndarray) -> None:
    """flat[:, columns] += out, in place."""
    if isinstance(columns, _Runs):
        for stream_part, out_part in columns.runs:
            flat[:, stream_part] += out[:, out_part]
    else:
        flat[:, columns] += out


def _read(flat: np.ndarray, columns: Columns) -> np.ndarray:
    """flat[:, columns]; np.take gathers index arrays several times faster than indexing."""
    return flat[:, columns] if isinstance(columns, slice) else np.take(flat, columns, axis=1)


def _nonzero_rows(*matrices: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.any([np.any(m != 0, axis=1) for m in matrices], axis=0))


class _Step:
    """One block of the plan: `apply(stream, causal, fixed_columns)` returns the stream
    after the block (updated in place where the step allows), `apply_distinct` the same
    for a stream held as distinct rows (planned steps only). `fixed_columns` marks the
    model's residual columns whose value at each position is the same on every input of
    this batch (None: unknown)."""

    name: str

    def apply(self, stream: np.ndarray, causal: bool,
              fixed_columns: np.ndarray | None) -> np.ndarray:
        raise NotImplementedError

    def apply_distinct(self, state: "_DistinctRows", causal: bool,
                       fixed_columns: np.ndarray | None) -> "_DistinctRows":
        raise NotImplementedError


@dataclass
class _WholeBlock(_Step):
    """Any block, run whole (`apply_block`)."""

    block: Any
    name: str

    def apply(self, stream: np.ndarray, causal: bool,
              fixed_columns: np.ndarray | None) -> np.ndarray:
        stream = apply_block(stream, self.block, causal, np)
        _check_finite(stream, self.name)
        return stream


@dataclass
class _MLPStep(_Step):
    """A dense residual MLP on the columns it reads, its hidden units that write, and the
    columns it writes."""

    reads: Columns
    writes: Columns
    block: MLPBlock  # w1 (reads x hidden), w2 (hidden x writes): the restricted weights
    output: RightProduct  # hidden @ w2
    name: str

    def apply(self, stream: np.ndarray, causal: bool,
              fixed_columns: np.ndarray | None) -> np.ndarray:
        # row chunks whose hidden layer stays in cache, as `mlp` runs them
        flat = stream.reshape(-1, stream.shape[-1])
        step = max(256, _HIDDEN_CHUNK // max(self.block.b1.shape[0], 1))
        for start in range(0, flat.shape[0], step):
            rows = flat[start:start + step]
            _add(rows, self.writes, self._outputs(_read(rows, self.reads)))
        return stream

    def apply_distinct(self, state: "_DistinctRows", causal: bool,
                       fixed_columns: np.ndarray | None) -> "_DistinctRows":
        """Position-wise: each distinct row once, every row equal to it shares the result."""
        self.apply(state.table[None], causal, fixed_columns)
        return state

    def _outputs(self, x: np.ndarray) -> np.ndarray:
        """What the block adds to the written columns, for rows x of the columns read."""
        block = self.block
        hidden = x @ block.w1
        hidden += block.b1
        hidden = np.maximum(hidden, 0.0, out=hidden) if block.activation == "relu" \
            else ACTIVATION_FUNCTIONS[block.activation](hidden, np)
        if block.gated:
            gate = x @ block.w_gate
            gate += block.b_gate
            hidden *= gate
        out = self.output(hidden)
        out += block.b2
        return out


@dataclass(frozen=True)
class _DistinctRows:
    """A batch's residual stream (inputs, N, plan columns) held as its distinct rows:
    stream[b, p] = table[index[b, p]]. A block computes each distinct row once, which
    for the compiled models' batches is a small fraction of the rows (`distinct_pairs`)."""

    table: np.ndarray  # (distinct rows, plan columns)
    index: np.ndarray  # (inputs, N) rows of the table

    def updated(self, writes: Columns, out: np.ndarray) -> "_DistinctRows":
        """The rows after adding out (inputs * N, written columns) to each position's row."""
        index = self.index.reshape(-1)
        found = distinct_pairs(index, out)
        first, inverse = found if found is not None else (np.arange(index.size),) * 2
        table = self.table[index[first]]
        _add(table, writes, out[first])
        return _DistinctRows(table, inverse.reshape(self.index.shape))


@dataclass(frozen=True)
class _HeadLayout:
    """Which projection columns an attention step computes on every input and which on
    the first input only, for one set of heads whose patterns are fixed in the batch.

    A head whose queries and keys read only fixed columns has the same pattern on every
    input of the batch: its queries and keys are projected for the first input alone, and
    heads with equal patterns share one product with all their values."""

    every_row: np.ndarray  # (read columns, other heads' q | k, every head's v)
    first_row: np.ndarray  # (read columns, fixed heads' q | k)
    varying: list[tuple[slice, slice]]  # per varying head: its q, k of every_row
    fixed: list[tuple[slice, slice]]  # per fixed head: q, k of first_row
    varying_heads: list[int]
    fixed_heads: list[int]
    values: list[slice]  # per head: its value columns of every_row[:, value_start:]
    value_start: int  # every_row's columns from here on are the heads' values
    slots: np.ndarray  # per head h: its columns of the block's values, slots[h]:slots[h + 1]


@dataclass
class _AttentionStep(_Step):
    """A dense residual attention block: every head's q, k and v from one product of the
    columns read, the heads' scores softmaxed together, one output product."""

    reads: Columns
    writes: Columns
    projection: np.ndarray  # (read columns, every head's q | k | v columns)
    parts: list[tuple[slice, slice, slice]]  # per head: its q, k, v columns of a projection
    output: RightProduct  # (every head's v columns, written columns): W_O (or I) stacked
    scale: float
    name: str
    qk_rows: list[np.ndarray]  # per head: the model's residual columns its q and k read
    layouts: dict[tuple[bool, ...], _HeadLayout] = field(default_factory=dict)
    last_groups: tuple[Any, list] | None = None  # _shared_patterns' last key and groups

    def apply(self, stream: np.ndarray, causal: bool,
              fixed_columns: np.ndarray | None) -> np.ndarray:
        batch, n, width = stream.shape
        flat = stream.reshape(-1, width)
        layout = self._layout_for(fixed_columns)
        read = _read(flat, self.reads)
        projected = (read @ layout.every_row).reshape(batch, n, -1)
        patterns = list(_softmax(_scores(projected, layout.varying), self.scale,
                                 causal).swapaxes(0, 1)) if layout.varying else []
        _add(flat, self.writes, self._outputs(layout, projected[..., layout.value_start:],
                                              read[:n], causal, patterns))
        return stream

    def apply_distinct(self, state: "_DistinctRows", causal: bool,
                       fixed_columns: np.ndarray | None) -> "_DistinctRows":
        """Queries, keys and values projected once per distinct row and gathered to every
        position; the scores and values per input; then the rows after the block, again
        as distinct rows."""
        layout = self._layout_for(fixed_columns)
        read = _read(state.table, self.reads)
        distinct = read @ layout.every_row
        index = state.index
        batch, n = index.shape
        patterns = []
        for q, k in layout.varying:
            # a head's queries and keys take a few distinct values (they read a few
            # columns): every score of the batch is one product of those (the same dot
            # products, summed by a GEMM), exponentiated once and gathered per input
            queries, query_of = _distinct_rows(distinct[:, q])
            keys, key_of = _distinct_rows(distinct[:, k])
            if len(queries) * len(keys) <= batch * n:
                pairs = (query_of[index] * len(keys))[:, :, None] + key_of[index][:, None, :]
                patterns.append(_table_softmax(queries @ keys.T, pairs, self.scale, causal))
            else:
                patterns.append(_softmax(_scores(distinct[:, :layout.value_start][index],
                                                 [(q, k)]), self.scale, causal)[:, 0])
        values = np.take(distinct[:, layout.value_start:], index, axis=0)
        out = self._outputs(layout, values, read[index[0]], causal, patterns)
        return state.updated(self.writes, out)

    def _layout_for(self, fixed_columns: np.ndarray | None) -> _HeadLayout:
        return self._layout(tuple(fixed_columns is not None and bool(fixed_columns[rows].all())
                                  for rows in self.qk_rows))

    def _outputs(self, layout: _HeadLayout, projected: np.ndarray, first_input: np.ndarray,
                 causal: bool, patterns: list[np.ndarray]) -> np.ndarray:
        """What the block adds to the written columns, (inputs * N, written), from every
        input's projected values (inputs, N, every_row's value columns), the varying
        heads' attention `patterns` (inputs, N, N) each and the first input's rows of
        the columns read (for the fixed heads' patterns)."""
        batch, n = projected.shape[:2]
        slots = layout.slots
        values = np.empty((batch, n, slots[-1]))
        for pattern, h in zip(patterns, layout.varying_heads):
            np.matmul(pattern, projected[..., layout.values[h]],
                      out=values[..., slots[h]:slots[h + 1]])
        if layout.fixed:
            for pattern, columns, targets in self._shared_patterns(layout, first_input, causal):
                values[..., targets] = shared_pattern_values(pattern, projected[..., columns])
        return self.output(values.reshape(batch * n, -1))

    def _shared_patterns(self, layout: _HeadLayout, first_input: np.ndarray,
                         causal: bool) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The fixed heads grouped by equal pattern: (pattern, their value columns of
        every_row, their slots of the values), from the first input's queries and keys.
        Consecutive passes (a validation, a proof's chunks) mostly have the same ones: the
        last groups are kept, keyed by those queries and keys, of which they are a function."""
        first = first_input @ layout.first_row
        key = (id(layout), causal, first.shape, first.tobytes())
        last = self.last_groups  # read once: another thread may replace it
        if last is not None and last[0] == key:
            return last[1]
        patterns = _softmax(_scores(first[None], layout.fixed), self.scale, causal)[0]
        members: dict[bytes, list[int]] = {}
        for i, pattern in enumerate(patterns):
            members.setdefault(pattern.tobytes(), []).append(layout.fixed_heads[i])
        groups = []
        for heads in members.values():
            pattern = patterns[layout.fixed_heads.index(heads[0])]
            columns = np.concatenate([np.arange(layout.values[h].start, layout.values[h].stop)
                                      for h in heads])
            targets = np.concatenate([np.arange(layout.slots[h], layout.slots[h + 1])
                                      for h in heads])
            groups.append((pattern.copy(), columns, targets))
        self.last_groups = (key, groups)
        return groups

    def _layout(self, fixed: tuple[bool, ...]) -> _HeadLayout:
        layout = self.layouts.get(fixed)
        if layout is None:
            layout = self.layouts[fixed] = self._make_layout(fixed)
        return layout

    def _make_layout(self, fixed: tuple[bool, ...]) -> _HeadLayout:
        def take(columns: list[slice]) -> tuple[np.ndarray, list[slice]]:
            """The projection's `columns` side by side, and where each landed."""
            starts = np.cumsum([0] + [c.stop - c.start for c in columns])
            chosen = [self.projection[:, c] for c in columns]
            matrix = np.concatenate(chosen, axis=1) if chosen else self.projection[:, :0]
            return np.ascontiguousarray(matrix), [slice(int(a), int(b))
                                                  for a, b in zip(starts, starts[1:])]

        varying_heads = [h for h, f in enumerate(fixed) if not f]
        fixed_heads = [h for h, f in enumerate(fixed) if f]
        every_row, placed = take([c for h in varying_heads for c in self.parts[h][:2]]
                                 + [part[2] for part in self.parts])
        first_row, placed_first = take([c for h in fixed_heads for c in self.parts[h][:2]])
        q_k = len(varying_heads) * 2
        values = [slice(v.start - placed[q_k].start, v.stop - placed[q_k].start)
                  for v in placed[q_k:]]
        return _HeadLayout(every_row, first_row,
                           [(placed[2 * i], placed[2 * i + 1]) for i in range(len(varying_heads))],
                           [(placed_first[2 * i], placed_first[2 * i + 1])
                            for i in range(len(fixed_heads))],
                           varying_heads, fixed_heads, values, placed[q_k].start,
                           np.cumsum([0] + [v.stop - v.start for v in values]))


def _scores(projected: np.ndarray, heads: list[tuple[slice, slice]]) -> np.ndarray:
    """q.k (rows, heads, N, N) of the heads' (q, k) columns of `projected` (rows, N, columns)."""
    rows, n = projected.shape[:2]
    scores = np.empty((rows, len(heads), n, n))
    for i, (q, k) in enumerate(heads):
        np.matmul(projected[..., q], projected[..., k].swapaxes(-1, -2), out=scores[:, i])
    return scores


def _softmax(scores: np.ndarray, scale: float, causal: bool) -> np.ndarray:
    """The attention patterns of q.k `scores` (rows, heads, N, N), in place: one softmax
    for all heads."""
    n = scores.shape[-1]
    scores *= scale
    if causal:
        scores[..., ~np.tri(n, dtype=bool)] = -np.inf
    scores -= _last_axis(np.maximum, scores)
    np.exp(scores, out=scores)
    scores /= _last_axis(np.add, scores)
    return scores


def _distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a 2-D array and, per row, which of them it is."""
    found = distinct_pairs(np.zeros(len(rows), dtype=np.intp), rows)
    if found is None:  # a key collision or nan: the rows one by one
        return rows, np.arange(len(rows))
    first, inverse = found
    return rows[first], inverse


def _table_softmax(table: np.ndarray, pairs: np.ndarray, scale: float,
                   causal: bool) -> np.ndarray:
    """The attention patterns (inputs, N, N) of one head whose q.k `table` (query row, key
    row) holds every score of the batch: input b's query q scores key k with
    table.flat[pairs[b, q, k]].

    A softmax is the same for any shift of a query's scores; shifted by the maximum over
    the table's whole row rather than over the input's keys, exp runs once per pair of
    rows, not per input. That differs from shifting by the input's own maximum only in
    rounding, unless the input's maximum is so far below the row's that its terms lose
    precision or underflow (tracr's hard attention scales scores by hundreds): where a
    query's total falls below _TABLE_SOFTMAX_FLOOR, its largest term is below
    _TABLE_SOFTMAX_FLOOR / N, and that query's softmax is computed again the usual way."""
    scores = table * scale
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    patterns = np.take(weights.reshape(-1), pairs, mode="clip")  # in range: no check
    n = pairs.shape[-1]
    if causal:
        patterns[:, ~np.tri(n, dtype=bool)] = 0.0
    total = _last_axis(np.add, patterns)
    low = np.flatnonzero(total < _TABLE_SOFTMAX_FLOOR)  # (input, query) pairs, flattened
    if low.size:
        inputs, queries = np.divmod(low, n)
        rows = scores.reshape(-1)[pairs[inputs, queries]]  # (low, N)
        if causal:
            rows[np.arange(n)[None, :] > queries[:, None]] = -np.inf
        rows = _softmax(rows[:, None, None, :], 1.0, False)[:, 0, 0]
        patterns[inputs, queries] = rows
        total[inputs, queries] = 1.0
    patterns /= total
    return patterns


# Far above the smallest normal float (2.2e-308): a query whose total is at least this has
# a term of at least 1e-100 / N, so every term that weighs more than 1e-200 of it is a
# normal float, computed with the same relative rounding as under the input's own shift.
_TABLE_SOFTMAX_FLOOR = 1e-100


def _last_axis(combine: np.ufunc, values: np.ndarray) -> np.ndarray:
    """combine.reduce(values, axis=-1, keepdims=True) (max or sum over the keys): for a
    short last axis (a compiled model's few positions) as one element-wise `combine` per
    key, which NumPy runs 2-4x faster than a reduction over rows of a few elements. The
    maxima are the same; a sum may be ordered differently (ulp-level)."""
    n = values.shape[-1]
    if n == 0 or n > 32:
        return combine.reduce(values, axis=-1, keepdims=True)
    total = values[..., 0].copy()
    for key in range(1, n):
        combine(total, values[..., key], out=total)
    return total[..., None]


def _dense_residual(block: Any) -> bool:
    """A block the planned steps take: dense weights, residual, no LayerNorm."""
    if isinstance(block, MLPBlock):
        matrices = [block.w1, block.w2, block.w_gate]
    elif isinstance(block, AttentionBlock):
        matrices = [w for head in block.heads for w in (head.w_q, head.w_k, head.w_v, head.w_o)]
    else:
        return False
    return (block.residual and block.norm is None
            and not any(isinstance(w, SparseMatrix) for w in matrices))


def _plan_mlp(block: MLPBlock, name: str) -> _Step | None:
    w1, w2 = as_dense(block.w1), as_dense(block.w2)
    hidden = np.flatnonzero(np.any(w2 != 0, axis=1))  # units that write something
    writes = np.flatnonzero(np.any(w2 != 0, axis=0) | (block.b2 != 0))
    if not writes.size:
        return None  # writes nothing
    w_gate = None if block.w_gate is None else as_dense(block.w_gate)
    reads = _nonzero_rows(w1[:, hidden], *([] if w_gate is None else [w_gate[:, hidden]]))
    gate = {} if w_gate is None or block.b_gate is None else {
        "w_gate": w_gate[np.ix_(reads, hidden)], "b_gate": block.b_gate[hidden]}
    w2 = w2[np.ix_(hidden, writes)]
    narrowed = replace(block, w1=w1[np.ix_(reads, hidden)], b1=block.b1[hidden], w2=w2,
                       b2=block.b2[writes], **gate)
    return _MLPStep(reads, writes, narrowed, RightProduct.of(w2), name)


def _plan_attention(block: AttentionBlock, name: str) -> _Step | None:
    heads = [(as_dense(h.w_q), as_dense(h.w_k), as_dense(h.w_v),
              np.eye(as_dense(h.w_v).shape[1]) if h.w_o is None else as_dense(h.w_o))
             for h in block.heads]  # (W_Q, W_K, W_V, W_O), W_O = I where the head has none
    # a head without W_O writes through W_V (its W_O is I, whose columns are all non-zero)
    writes = np.flatnonzero(np.any([np.any((w_v if h.w_o is None else w_o) != 0, axis=0)
                                    for h, (_, _, w_v, w_o) in zip(block.heads, heads)], axis=0))
    if not writes.size:
        return None
    reads = _nonzero_rows(*[w for w_q, w_k, w_v, _ in heads for w in (w_q, w_k, w_v)])
    columns, outs, parts, qk_rows, start = [], [], [], [], 0
    for w_q, w_k, w_v, w_o in heads:
        qk_rows.append(_nonzero_rows(w_q, w_k))
        # a q.k term whose query or key column is zero adds 0 to every score: left out
        qk = np.flatnonzero(np.any(w_q != 0, axis=0) & np.any(w_k != 0, axis=0))
        v = np.flatnonzero(np.any(w_v != 0, axis=0) & np.any(w_o[:, writes] != 0, axis=1))
        columns += [w_q[np.ix_(reads, qk)], w_k[np.ix_(reads, qk)], w_v[np.ix_(reads, v)]]
        outs.append(w_o[np.ix_(v, writes)])
        parts.append((slice(start, start + qk.size), slice(start + qk.size, start + 2 * qk.size),
                      slice(start + 2 * qk.size, start + 2 * qk.size + v.size)))
        start += 2 * qk.size + v.size
    return _AttentionStep(reads, writes, np.concatenate(columns, axis=1), parts,
                          RightProduct.of(np.concatenate(outs, axis=0)), block.scale, name,
                          qk_rows)


# Planned steps by block kind; any other kind runs whole (_WholeBlock).
_PLANNERS: dict[type, Callable[[Any, str], "_Step | None"]] = {
    MLPBlock: _plan_mlp, AttentionBlock: _plan_attention}


@dataclass
class _Plan:
    steps: list[_Step]
    model: Transformer
    embedding: Transformer  # the model, or a copy embedding into the plan's columns
    readout_rows: Columns | None  # the unembedding's non-zero rows (None: read whole)
    unembed: Any
    order: np.ndarray | None = None  # the model's residual column of each plan column
    embedding_table: np.ndarray | None = None  # _embedding_table
    unwritten: np.ndarray | None = None  # per model column: no block writes it (all planned)

    def embed(self, inputs: Array) -> np.ndarray:
        """The embedded stream, a fresh C-ordered float64 array of the plan's columns."""
        inputs = np.asarray(inputs)
        integer = np.issubdtype(inputs.dtype, np.integer)
        rows = self._table_rows(inputs)
        if rows is not None:
            assert self.embedding_table is not None  # _table_rows checked it
            return np.take(self.embedding_table.reshape(-1, self.embedding_table.shape[-1]),
                           rows, axis=0)
        if self.order is not None and not integer and self.embedding.input_proj is None:
            # the residual stream itself is given: checked whole, then its plan columns
            return np.take(_embedded(self.model, inputs, np), self.order, axis=-1)
        if not integer and self.embedding.input_proj is not None \
                and not isinstance(self.embedding.input_proj, SparseMatrix):
            return self._embed_features(np.asarray(inputs, dtype=np.float64))
        return np.array(_embedded(self.embedding, inputs, np), dtype=np.float64, order="C")

    def _embed_features(self, features: np.ndarray) -> np.ndarray:
        """embed_features's numbers, built in one fresh array: the positions, plus the
        features' projection on the columns the input projection writes (the others
        get + 0, which changes nothing), not a dense product and a sum of whole streams."""
        model = self.embedding
        _check_features(model, features)
        projection = np.asarray(model.input_proj)
        columns = np.flatnonzero(projection.any(axis=0))
        stream = np.zeros((*features.shape[:-1], model.width))
        if model.pos_embed is not None:
            stream[...] = np.asarray(model.pos_embed)[:features.shape[-2]]
        stream[..., columns] += features @ projection[:, columns]
        return stream

    def _table_rows(self, inputs: np.ndarray) -> np.ndarray | None:
        """Per input and position, its row of the embedding table flattened to
        (position * token, D), where token ids index the table; else None (no table, not
        ids, too long, or an id outside the vocabulary: `_embedded` says which)."""
        table = self.embedding_table
        if table is None or inputs.ndim != 2 or not np.issubdtype(inputs.dtype, np.integer) \
                or inputs.shape[1] > table.shape[0] \
                or not _ids_within(inputs, table.shape[1]):
            return None
        return np.arange(inputs.shape[1]) * table.shape[1] + inputs

    def distinct_rows(self, inputs: Array) -> _DistinctRows | None:
        """The embedded batch of token ids as distinct rows (one per position and token
        present), where every step is planned and the embedding is a table; else None."""
        inputs = np.asarray(inputs)
        rows = self._table_rows(inputs)
        if rows is None or self.readout_rows is None:
            return None
        assert self.embedding_table is not None  # _table_rows checked it
        table = self.embedding_table.reshape(-1, self.embedding_table.shape[-1])
        used, number = distinct_labels(rows, len(table))
        return _DistinctRows(np.take(table, used, axis=0), number)

    def fixed_columns(self, inputs: Array) -> np.ndarray | None:
        """Per residual column of the model: whether its value at each position is the same
        on every input of this batch (then so is the pattern of a head that reads only such
        columns). It is where no block writes the column, the input projection does not
        either, and the token embedding gives it one value for all the tokens the batch has
        at each position: a column of the position, or of BOS, which every input has at
        position 0 and none elsewhere. None where unknown (a block run whole, or the
        residual stream given as the input)."""
        inputs = np.asarray(inputs)
        model = self.model
        if self.unwritten is None:
            return None
        fixed = self.unwritten.copy()
        if np.issubdtype(inputs.dtype, np.integer):
            if model.token_embed is None or inputs.ndim != 2:
                return None
            embed = np.asarray(model.token_embed)
            if not _ids_within(inputs, len(embed)):
                return None  # the embedding refuses such ids
            present = np.zeros((inputs.shape[1], len(embed)), dtype=bool)  # (position, token)
            present[np.arange(inputs.shape[1]), inputs] = True
            for tokens in present:
                rows = embed[tokens]
                fixed &= np.all(rows == rows[:1], axis=0)
            return fixed
        if model.input_proj is None:
            return None
        return fixed & ~np.any(as_dense(model.input_proj) != 0, axis=0)


_PLANS: "weakref.WeakKeyDictionary[Transformer, _Plan]" = weakref.WeakKeyDictionary()


def _plan(model: Transformer) -> _Plan:
    """The model's plan, made on its first forward pass and kept with the model object."""
    plan = _PLANS.get(model)
    if plan is None:
        plan = _PLANS[model] = _make_plan(model)
    return plan


def _make_plan(model: Transformer) -> _Plan:
    steps: list[_Step] = []
    for index, block in enumerate(model.layers):
        name = _block_name(index, block)
        planner = _PLANNERS.get(type(block)) if _dense_residual(block) else None
        if planner is None:
            steps.append(_WholeBlock(block, name))
        elif (step := planner(block, name)) is not None:
            steps.append(step)
    planned = [step for step in steps if isinstance(step, (_MLPStep, _AttentionStep))]
    unwritten = None
    if len(planned) == len(steps):
        unwritten = np.ones(model.width, dtype=bool)
        for step in planned:
            unwritten[step.writes] = False
    if len(planned) < len(steps) or model.final_norm is not None \
            or isinstance(model.unembed, SparseMatrix):
        for step in planned:
            step.reads, step.writes = _columns(step.reads), _written(step.writes)
        return _Plan(steps, model, model, None, model.unembed, unwritten=unwritten)
    # Every block is planned: the residual's columns are reordered (exactly: a relabelling)
    # so that each block's written columns are one run, added to in place as a slice, and
    # the columns nothing reads or writes are left out of the stream.
    rows = np.flatnonzero(np.any(model.unembed != 0, axis=1))
    order = _write_order(model.width, [step.writes for step in planned],
                         [rows] + [step.reads for step in planned])
    position = np.full(model.width, -1, dtype=np.int64)
    position[order] = np.arange(order.size)
    for step in planned:
        step.reads = _columns(position[step.reads])
        step.writes = _written(position[step.writes])
    embedding = model.replace(**{name: as_dense(getattr(model, name))[:, order]
                                 for name in ("token_embed", "pos_embed", "input_proj")
                                 if getattr(model, name) is not None},
                              layers=(), residual_labels=None,
                              unembed=np.zeros((order.size, model.unembed.shape[1])))
    return _Plan(steps, model, embedding, _columns(position[rows]), model.unembed[rows], order,
                 _embedding_table(embedding), unwritten)


def _embedding_table(model: Transformer) -> np.ndarray | None:
    """token_embed[t] + pos_embed[p] for every position p and token t, (P, T, D), so that
    embedding a batch is one gather: the same additions, done once. None where the model
    has no token and position embeddings or the table would be large."""
    if model.token_embed is None or model.pos_embed is None \
            or model.pos_embed.size * model.token_embed.shape[0] > _EMBEDDING_TABLE_LIMIT:
        return None
    table = model.token_embed[None, :, :] + model.pos_embed[:, None, :]
    return table if np.isfinite(table).all() else None


_EMBEDDING_TABLE_LIMIT = 1 << 21  # floats (16 MiB)


def _write_order(width: int, writes: list[np.ndarray], reads: list[np.ndarray]) -> np.ndarray:
    """The residual's columns that are written or read: each block's written columns
    together in block order (those a block shares with an earlier one stay where that one
    put them), then the columns only read (written by the embedding)."""
    placed = np.zeros(width, dtype=bool)
    order = []
    for columns in writes:
        new = columns[~placed[columns]]
        placed[new] = True
        order.append(new)
    read = np.zeros(width, dtype=bool)
    for columns in reads:
        read[columns] = True
    order.append(np.flatnonzero(read & ~placed))
    return np.concatenate(order)


def floats_per_position(model: Transformer, length: int) -> int:
    """About how many floats a forward pass keeps per input position, for sizing passes:
    where the stream runs as distinct rows (token models whose blocks are all planned),
    the widest attention block's values (gathered and weighted), score rows and output,
    which are per position; else the residual width."""
    plan = _plan(model)
    if plan.embedding_table is None or plan.readout_rows is None:
        return model.width
    return max([1] + [2 * sum(v.stop - v.start for _, _, v in step.parts)
                      + 2 * len(step.parts) * length + 2 * step.output.shape[1]
                      for step in plan.steps if isinstance(step, _AttentionStep)])


def _planned_forward(model: Transformer, inputs: Array) -> np.ndarray:
    """The outputs (B, N, c) for token ids or features, by the model's plan: on the
    distinct rows of the stream where every block is planned and the input is token ids
    (`_DistinctRows`), else row by row.

    A planned step only adds to the stream, so a value that overflows stays non-finite to
    the end: the stream is checked once, before any whole block (which may replace it)
    and at the end, and only when that check fails is the pass run again checking after
    every step, to name the block where the value first appears."""
    plan = _plan(model)
    state = plan.distinct_rows(inputs)
    if state is not None:
        fixed_columns = plan.fixed_columns(inputs)
        for step in plan.steps:
            state = step.apply_distinct(state, model.causal, fixed_columns)
        if np.isfinite(state.table).all():
            assert plan.readout_rows is not None  # distinct_rows checked it
            return (state.table[:, plan.readout_rows] @ plan.unembed)[state.index]
        _run_steps(plan, model, inputs, checked=True)  # raises, naming the block
    stream = _run_steps(plan, model, inputs, checked=False)
    if not np.isfinite(stream).all():
        _run_steps(plan, model, inputs, checked=True)  # raises, naming the block
    if plan.readout_rows is None:
        return readout(model, stream, np)
    flat = stream.reshape(-1, stream.shape[-1])
    return (flat[:, plan.readout_rows] @ plan.unembed).reshape(*stream.shape[:-1], -1)


def _run_steps(plan: "_Plan", model: Transformer, inputs: Array, checked: bool) -> np.ndarray:
    stream = plan.embed(inputs)
    if checked or plan.embedding_table is None:  # the table is finite (checked once)
        _check_finite(stream, "the embedded input")
    fixed_columns = plan.fixed_columns(inputs)
    for step in plan.steps:
        if isinstance(step, _WholeBlock) and not checked:
            _check_finite(stream, "a block before " + step.name)
        stream = step.apply(stream, model.causal, fixed_columns)
        if checked:
            _check_finite(stream, step.name)
    return stream


def _block_name(index: int, block: AttentionBlock | MLPBlock) -> str:
    return f"block {index} ({'attention' if isinstance(block, AttentionBlock) else 'MLP'})"


def _check_finite(values: np.ndarray, where: str) -> None:
    """A value that overflowed (inf) or became nan would decode to some answer: refuse it,
    naming where it first appeared."""
    if not np.isfinite(values).all():
        raise WeightsError(f"{where}: the forward pass overflowed (an infinite or nan value in "
                           "the residual stream): the weights or inputs are too large for "
                           "float64")


def forward(model: Transformer, inputs: Array, xp: ModuleType = np) -> Array:
    """Outputs (B, N, c) for features (B, N, d_in) (float) or token ids (B, N) (integer).
    With NumPy, a value that overflows is a WeightsError naming the block where it first
    appears, and NumPy's floating-point warnings never reach the user."""
    if xp is not np:
        return readout(model, residual_stream(model, _embedded(model, inputs, xp), xp)[-1], xp)
    inputs = np.asarray(inputs)
    if inputs.size == 0 and inputs.ndim == (2 if np.issubdtype(inputs.dtype, np.integer) else 3):
        if inputs.ndim == 3:
            _check_features(model, inputs)
        else:
            _check_length(model, inputs.shape[1])
        return np.zeros((*inputs.shape[:2], model.unembed.shape[1]))  # no input or no position
    with np.errstate(all="ignore"):
        out = _planned_forward(model, inputs)
        _check_finite(out, "the readout (unembedding)")
    return out


def _embedded(model: Transformer, inputs: Array, xp: ModuleType) -> Array:
    inputs = xp.asarray(inputs)
    if xp.issubdtype(inputs.dtype, xp.integer):
        return embed_tokens(model, inputs, xp)
    return embed_features(model, inputs, xp)
