"""Training the compression basis W (D x d) in JAX and optax
(docs/compiler.md#compression-with-a-certificate, "Method").

The loss is the tracr paper's (Lindner et al. 2023, section 5): the output loss of the
compressed model against the original model's decoded output (cross-entropy against its
arg-max for a categorical output, squared error for a numerical one; BOS excluded) plus,
for the stream after the embedding and after every block, the mean squared error between
the compressed model's decompressed residual r W^T and the original's h. The compressed
model runs its own trajectory: block k computes f_k(r W^T) W (algebra.py), with the
original block f_k under jax.numpy (compiler/forward.py).

W is orthonormal (W = Q of the QR decomposition of a free D x d parameter, the signs of
R's diagonal moved into Q so it is continuous) or free; full-batch Adam, float32, from the
principal directions. Deterministic on the CPU: no randomness is drawn here.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compiler import forward
from ..compiler.weights import AttentionBlock, Transformer, as_dense
from .states import Inputs, layer_states

# Higher rates leave good bases for worse ones (docs/compiler.md, compression, "Method").
LEARNING_RATE = 1e-4


@dataclass(frozen=True)
class Trained:
    """The basis (float64, D x d) and its losses (the best seen in training)."""

    basis: np.ndarray
    losses: dict[str, float]


def orthonormal(parameter: Any, xp: Any = np) -> Any:
    """Q of parameter = QR with R's diagonal made positive: the orthonormal basis of the
    parameter's column space closest to following it continuously."""
    q, r = xp.linalg.qr(parameter)
    signs = xp.sign(xp.diagonal(r))
    return q * xp.where(signs == 0, 1.0, signs)


def train_basis(weights: Transformer, inputs: Inputs, initial: np.ndarray, steps: int,
                orthogonal: bool = True) -> Trained:
    """W trained for `steps` full-batch Adam steps on `inputs` from `initial` (D x d)."""
    # At most 2 compute threads on shared machines, set before JAX starts (as
    # experiments/device.py does for training).
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                       "intra_op_parallelism_threads=1")
    import jax
    import jax.numpy as jnp
    import optax

    categorical = weights.output_encoder is not None and weights.output_encoder.values is not None
    data = []
    for ids in inputs.batches:
        states = layer_states(weights, ids)
        logits = np.asarray(forward.readout(weights, states[-1]))[:, 1:]
        target = logits.argmax(axis=-1) if categorical else logits[..., 0]
        data.append((jnp.asarray(ids), [jnp.asarray(s, dtype=jnp.float32) for s in states],
                     jnp.asarray(target), len(ids) / inputs.count))
    unembed = jnp.asarray(as_dense(weights.unembed), dtype=jnp.float32)

    def basis_of(parameter: Any) -> Any:
        return orthonormal(parameter, jnp) if orthogonal else parameter

    def batch_losses(w: Any, ids: Any, states: list, target: Any) -> tuple[Any, Any]:
        r = states[0] @ w  # the embedding is the original's, compressed
        mse = jnp.mean((r @ w.T - states[0]) ** 2)
        for block, h in zip(weights.layers, states[1:]):
            x = r @ w.T
            out = (forward.attention(x, block, weights.causal, jnp)
                   if isinstance(block, AttentionBlock) else forward.mlp(x, block, jnp))
            r = (r + out @ w) if block.residual else out @ w
            mse = mse + jnp.mean((r @ w.T - h) ** 2)
        logits = ((r @ w.T) @ unembed)[:, 1:]
        if categorical:
            out_loss = optax.softmax_cross_entropy_with_integer_labels(logits, target).mean()
        else:
            out_loss = jnp.mean((logits[..., 0] - target) ** 2)
        return out_loss, mse

    def loss(parameter: Any) -> tuple[Any, tuple[Any, Any]]:
        w = basis_of(parameter)
        out_total, mse_total = 0.0, 0.0
        for ids, states, target, share in data:
            out_loss, mse = batch_losses(w, ids, states, target)
            out_total, mse_total = out_total + share * out_loss, mse_total + share * mse
        return out_total + mse_total, (out_total, mse_total)

    optimiser = optax.adam(LEARNING_RATE)

    @jax.jit
    def step(parameter: Any, state: Any) -> tuple[Any, Any, Any]:
        (value, parts), grads = jax.value_and_grad(loss, has_aux=True)(parameter)
        updates, state = optimiser.update(grads, state, parameter)
        return optax.apply_updates(parameter, updates), state, (value, parts)

    # The loss is rough (softmax heads with large logit scales): an Adam step can leave a
    # good basis for a worse one, so the best parameter seen is kept, the initial one
    # (the principal directions) included.
    parameter = jnp.asarray(initial, dtype=jnp.float32)
    state = optimiser.init(parameter)
    best, best_value, best_parts = parameter, np.inf, None
    for _ in range(steps + 1):
        updated, state, (value, parts) = step(parameter, state)  # value: at `parameter`
        if float(value) < best_value:
            best, best_value, best_parts = parameter, float(value), parts
        parameter = updated
    assert best_parts is not None  # the first step's value is finite or the loss is nan
    final = np.asarray(best, dtype=np.float64)
    basis = orthonormal(final) if orthogonal else final  # orthonormal in float64 again
    return Trained(basis, {"total": best_value, "output": float(best_parts[0]),
                           "residual_mse": float(best_parts[1])})
