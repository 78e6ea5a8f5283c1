"""Two exact shortcuts of the training forward pass (train.logits_fn), each computing the
same numbers as forward.apply_block up to float32 rounding, with fewer FLOPs.

The first block by table. The first attention block's sublayer input at a position is a
function of the token and the position alone (their embeddings' sum, then the block's
LayerNorm if it has one), so its queries, keys and values are computed once per (token,
position) pair, vocab x N rows, and gathered, instead of once per row of the batch, B x N
rows: at batch 32 and Dyck-1's 4 tokens, 8 times fewer rows for the value product, the
largest of the block (N m^2 per head).

The last block at the answer. For a task whose loss reads one position per row (Dyck-1:
the answer after `?`), the last attention block and what follows it run at that position
only. Under the causal mask the answer's output depends on every earlier position through the
blocks before the last attention block, but that block's other queries feed nothing the
loss reads. So it runs one query per row, and its value product is taken after the
attention average, (a X) W_V instead of a (X W_V): the same number up to float32
rounding, for 1/N of the value product (N the sequence length); the MLP, the final norm
and the unembedding after it run on one position. For the two-layer Dyck-1 machines that
is nearly half of a training step's FLOPs.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from rasp_sim.compiler import forward
from rasp_sim.compiler.weights import AttentionBlock, Block


def first_block_by_table(params: dict, block: AttentionBlock, ids, causal: bool):
    """`block` applied to the embedded `ids` (B, N), as forward.apply_block on
    token_embed[ids] + pos_embed[:N], its heads' maps computed per (token, position)."""
    n = ids.shape[-1]
    positions = jnp.arange(n)
    table = params["token_embed"][:, None, :] + params["pos_embed"][None, :n, :]  # (V, N, D)
    inner = forward.block_input(table, block, jnp)  # position-wise: LayerNorm or nothing
    total = None
    for head in block.heads:
        q, k, v = (forward.matmul(inner, w, jnp)[ids, positions]
                   for w in (head.w_q, head.w_k, head.w_v))
        out = forward.softmax_attention(q, k, block.scale, causal, jnp) @ v
        out = out if head.w_o is None else forward.matmul(out, head.w_o, jnp)
        total = out if total is None else total + out
    return total + table[ids, positions] if block.residual else total


def last_attention(blocks: tuple[Block, ...]) -> int:
    """The index of the last attention block (universal machines have at least one)."""
    return max(i for i, block in enumerate(blocks) if isinstance(block, AttentionBlock))


def at_rows(array, rows):
    """array (B, N, ...) at one position per row, rows (B,): (B, 1, ...)."""
    index = rows.reshape(-1, 1, *([1] * (array.ndim - 2)))
    return jnp.take_along_axis(array, index, axis=1)


def attend_from(stream, block: AttentionBlock, rows, causal: bool):
    """`block` (with its residual) applied to `stream` (B, N, D) for the query at `rows`
    only: (B, 1, D), what forward.apply_block gives at those positions."""
    inner = forward.block_input(stream, block, jnp)
    queries = at_rows(inner, rows)
    visible = jnp.arange(stream.shape[1]) <= rows[:, None] if causal \
        else jnp.ones(stream.shape[:2], dtype=bool)
    total = jnp.zeros_like(queries)
    for head in block.heads:
        q = forward.matmul(queries, head.w_q, jnp)
        k = forward.matmul(inner, head.w_k, jnp)
        scores = block.scale * (q @ jnp.swapaxes(k, -1, -2))
        pattern = jax.nn.softmax(jnp.where(visible[:, None, :], scores, -jnp.inf), axis=-1)
        out = forward.matmul(pattern @ inner, head.w_v, jnp)
        total = total + (out if head.w_o is None else forward.matmul(out, head.w_o, jnp))
    return total + at_rows(stream, rows) if block.residual else total
