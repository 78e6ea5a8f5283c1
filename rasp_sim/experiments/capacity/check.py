"""Score the exact target of a run's task on its frozen machine, without training.

The trainable arrays of an attention-only backbone (S-A, R-A) are its token and position
embeddings and its unembedding: E for one-hot inputs [token | position] (d = vocab +
seq_len) and P W for the machine's read-out P. So the project's `embed` gives, for the
target of capacity/khop.py or capacity/dyck.py, arrays that make the backbone compute the
target exactly (up to rounding); they are scored with the project's forward pass (float64)
and the task's test set, as training results are: accuracy where the loss counts, per
group (k-hop: hop count; Dyck-1: string length), and on the defined answers alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from rasp_sim.compiler.forward import forward
from rasp_sim.compiler.universal.embed import Embedding, embed
from rasp_sim.compiler.weights import Transformer, as_dense
from ..backbones import build_backbone, universal_machine, with_arrays
from ..config import RunConfig
from ..tasks import make_task
from ..tasks.batch import Batch, grouped_accuracy
from ..tasks.khop import LETTER_BASE, KHop
from . import dyck, khop
from .blocks import PathTarget, to_transformer

ATTENTION_ONLY = ("S-A", "R-A")  # the exact theory's machines (docs/universal.md)
CHUNK = 250
# per task: supports(H, L, k, c, task) -> why not | None, and target(H, L, k, c, task)
Build = Callable[..., tuple[PathTarget, np.ndarray]]
TARGETS: dict[str, tuple[Callable[..., str | None], Build]] = {
    "khop": (khop.supports, khop.khop_target), "dyck1": (dyck.supports, dyck.dyck_target)}


@dataclass(frozen=True)
class Ceiling:
    """Accuracy of the exact target embedded in `config`'s machine, or why there is none."""

    config: RunConfig
    all_answers: dict | None      # grouped_accuracy over every counted position
    defined_answers: dict | None  # the same over the positions whose answer is defined
    condition: float | None       # cond(M) of a solved (random) machine's embedding
    missing: str | None = None    # why no target was built


def check(config: RunConfig) -> Ceiling:
    """The ceiling of `config`'s machine on its task's test set."""
    if config.variant not in ATTENTION_ONLY:
        return Ceiling(config, None, None, None,
                       f"{config.variant} is outside the exact theory (residual, LayerNorm "
                       f"or MLP); only {' and '.join(ATTENTION_ONLY)} are checked")
    task = make_task(config.task, **config.task_options)
    sizes = config.sizes
    supports, build = TARGETS[config.task]
    why = supports(sizes.heads, sizes.layers, sizes.head_dim, sizes.out_dim, task)
    if why is not None:
        return Ceiling(config, None, None, None, f"no exact target built: {why}")
    views, out = build(sizes.heads, sizes.layers, sizes.head_dim, sizes.out_dim, task)
    model, embedding = installed(config, task, views, out)
    all_answers, defined = score(model, task, task.test_set())
    return Ceiling(config, all_answers, defined, embedding.condition)


def installed(config: RunConfig, task, views: PathTarget,
              out: np.ndarray) -> tuple[Transformer, Embedding]:
    """`config`'s backbone with the embedding of the target `views` (read out through `out`,
    out_dim x vocab) as its trained arrays, and that embedding."""
    machine = universal_machine(config.variant, config.sizes, config.seed,
                                dim=task.vocab_size + task.seq_len)
    embedding = embed(to_transformer(views), machine)
    backbone = build_backbone(config.variant, config.sizes, task.vocab_size, task.seq_len,
                              config.seed)
    model = with_arrays(backbone.model, {
        "token_embed": embedding.matrix[:task.vocab_size],
        "pos_embed": embedding.matrix[task.vocab_size:],
        "unembed": as_dense(machine.unembed) @ out})
    return model, embedding


def score(model: Transformer, task, batch: Batch) -> tuple[dict, dict]:
    """grouped_accuracy over every counted position of `batch`, and over its defined answers."""
    hits = correct(model, batch)
    defined = defined_answers(task, batch)
    return (grouped_accuracy((hits * batch.weights).sum(axis=1), batch),
            grouped_accuracy((hits * defined.weights).sum(axis=1), defined))


def correct(model, batch: Batch) -> np.ndarray:
    """(B, N): 1 where the model's most likely token is the target."""
    rows = [forward(model, batch.inputs[start:start + CHUNK]).argmax(axis=-1)
            for start in range(0, len(batch), CHUNK)]
    return (np.concatenate(rows) == batch.targets).astype(float)


def defined_answers(task, batch: Batch) -> Batch:
    """`batch` counting only answers that are defined: for k-hop, letters (not the null
    answer of a pointer with nowhere to hop, nor the blank before the first letter)."""
    if not isinstance(task, KHop):
        return batch
    letter = (batch.targets >= LETTER_BASE) & (batch.targets < LETTER_BASE + task.letters)
    return Batch(batch.inputs, batch.targets, batch.weights * letter, batch.groups)
