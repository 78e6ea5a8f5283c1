"""Train the embedding and unembedding of a frozen backbone (or everything, for F) in JAX.

jit-compiled steps; AdamW after global-norm clipping, linear warm-up then cosine or linear
decay to 0 (optax); float32 on the CPU or a GPU (device.py), deterministic on the CPU for
fixed seeds. A non-finite loss stops
the run with the step and the cause; a run can stop early or be interrupted and resumed
from its checkpoint bit for bit.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .device import describe, device, full_float32  # noqa: E402  (before JAX starts)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from tqdm import tqdm  # noqa: E402

from rasp_sim.base.atomic_write import replacing  # noqa: E402
from rasp_sim.compiler import forward  # noqa: E402
from rasp_sim.compiler.weights import AttentionBlock, SparseMatrix, as_dense  # noqa: E402
from .shortcuts import at_rows, attend_from, first_block_by_table, last_attention  # noqa: E402
from .backbones import (Backbone, build_backbone, check_memory, named_arrays,  # noqa: E402
                        rebuild_blocks, universal_m, with_arrays)
from .config import RunConfig  # noqa: E402
from .curriculum import first_position, phase_tasks, task_at  # noqa: E402
from . import stopping  # noqa: E402
from .checkpoints import CHECKPOINT, read_checkpoint, restored_rng  # noqa: E402
from .errors import ExperimentError  # noqa: E402
from .tasks import make_task  # noqa: E402
from .tasks.batch import Batch, grouped_accuracy, majority_accuracy  # noqa: E402

EVAL_CHUNK = 250
CURVE_EVAL_SIZE = 1000  # the curves use the first 1000 test samples; final results all
DENSE_LIMIT = 2048


def logits_fn(backbone: Backbone):
    """(params, ids, rows=None) -> logits (B, N, vocab): the project's forward pass under
    jax.numpy, its first block computed by table; with `rows` (B,), the logits at those
    positions only, (B, 1, vocab), the last attention block and what follows computed there
    alone (shortcuts.py)."""
    model = backbone.model
    # XLA's CPU scatter (the sparse product) is far slower than a dense product while the
    # dense matrix is small: densify the fixed 0/1 matrices up to m = DENSE_LIMIT.
    dense = {name: as_dense(value) for name, value in named_arrays(model).items()
             if isinstance(value, SparseMatrix) and model.width <= DENSE_LIMIT}

    def logits(params: dict, ids, rows=None):
        blocks, final_norm = rebuild_blocks(model, {**dense, **params})
        last = len(blocks) if rows is None else last_attention(blocks)
        if last == 0:  # one attention block, read at the answer only
            stream = params["token_embed"][ids] + params["pos_embed"][: ids.shape[-1]]
        else:
            first = blocks[0]
            assert isinstance(first, AttentionBlock)  # every backbone starts with attention
            stream = first_block_by_table(params, first, ids, model.causal)
        for block in blocks[1:last]:
            stream = forward.apply_block(stream, block, model.causal, jnp)
        if rows is not None:
            answer_block = blocks[last]
            assert isinstance(answer_block, AttentionBlock)  # last_attention found it
            stream = attend_from(stream, answer_block, rows, model.causal)
            for block in blocks[last + 1:]:  # position-wise: MLPs
                stream = forward.apply_block(stream, block, model.causal, jnp)
        if final_norm is not None:
            stream = forward.layer_norm(stream, final_norm, jnp)
        return forward.matmul(stream, params["unembed"], jnp)

    return logits


def _loss_and_hits(logits, targets, weights):
    losses = optax.softmax_cross_entropy_with_integer_labels(logits, targets)
    hits = (jnp.argmax(logits, axis=-1) == targets).astype(jnp.float32)
    return losses * weights, hits * weights


def schedule(config: RunConfig) -> optax.Schedule:
    warmup = min(config.warmup, max(config.steps - 1, 0))
    if config.schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(0.0, config.lr, warmup, config.steps, 0.0)
    if config.schedule == "linear":
        return optax.join_schedules(
            [optax.linear_schedule(0.0, config.lr, warmup),
             optax.linear_schedule(config.lr, 0.0, max(config.steps - warmup, 1))], [warmup])
    raise ExperimentError(f"schedule: unknown schedule {config.schedule!r}; known: cosine, linear")


def optimiser(config: RunConfig) -> optax.GradientTransformation:
    return optax.chain(optax.clip_by_global_norm(config.clip),
                       optax.adamw(schedule(config), weight_decay=config.weight_decay))


class Trainer:
    """One run: builds the task and backbone, then steps, evaluates and checkpoints."""

    def __init__(self, config: RunConfig, device_name: str | None = None):
        """`device_name`: "cpu", "gpu" or None (a GPU if JAX sees one, else the CPU)."""
        self.config = config
        self.device = device(device_name)
        self.task = make_task(config.task, **config.task_options)
        self.phases = phase_tasks(config, self.task)  # the training batches' tasks
        m = universal_m(config.sizes)
        check_memory(config.sizes, m, config.variant, config.batch, self.task.seq_len)
        self.backbone = build_backbone(config.variant, config.sizes, self.task.vocab_size,
                                       self.task.seq_len, config.seed, config.embed_std)
        arrays = named_arrays(self.backbone.model)
        self.params = jax.device_put({name: np.asarray(arrays[name], dtype=np.float32)
                                      for name in sorted(self.backbone.trainable)}, self.device)
        self.tx = optimiser(config)
        self.opt_state = self.tx.init(self.params)
        self.rng = np.random.default_rng([config.data_seed, config.seed])
        self.step = 0
        self.curves: list[dict] = []
        # (loss, accuracy) of the steps since the last curve point, averaged into the next
        # one; checkpointed, so that a run resumed between curve points has the same curve
        self.window: list[tuple[float, float]] = []
        self.elapsed = 0.0
        self.test = self.task.test_set()
        self.curve_set = Batch(*(a[:CURVE_EVAL_SIZE] for a in (
            self.test.inputs, self.test.targets, self.test.weights, self.test.groups)))
        model_logits = logits_fn(self.backbone)

        def logits(params, inputs, targets, weights):
            """(logits, targets, weights) where the loss reads: at the one answer per row
            for a task that has one (shortcuts.py), else everywhere."""
            if not self.task.one_answer:
                return model_logits(params, inputs), targets, weights
            rows = jnp.argmax(weights, axis=1)  # a padded evaluation row (weights 0) reads 0
            return (model_logits(params, inputs, rows), at_rows(targets, rows),
                    at_rows(weights, rows))

        def loss(params, inputs, targets, weights, first_position):
            # the batch's positions: rows first_position.. of the position embedding
            shifted = {**params, "pos_embed": jax.lax.dynamic_slice_in_dim(
                params["pos_embed"], first_position, inputs.shape[1])}
            losses, hits = _loss_and_hits(*logits(shifted, inputs, targets, weights))
            total = weights.sum()
            return losses.sum() / total, hits.sum() / total

        def train_step(params, opt_state, inputs, targets, weights, first_position):
            (value, accuracy), grads = jax.value_and_grad(loss, has_aux=True)(
                params, inputs, targets, weights, first_position)
            updates, opt_state = self.tx.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state, value, accuracy,
                    optax.tree.norm(grads))

        def evaluate(params, inputs, targets, weights):
            losses, hits = _loss_and_hits(*logits(params, inputs, targets, weights))
            return losses.sum(axis=1), hits.sum(axis=1)

        self._step = jax.jit(full_float32(train_step, self.device))
        self._evaluate = jax.jit(full_float32(evaluate, self.device))

    # ------------------------------------------------------------ evaluation
    def evaluate(self, batch: Batch | None = None) -> dict:
        """Loss and accuracy on the test set (padded to whole chunks), per group too."""
        batch = self.test if batch is None else batch
        size = len(batch)
        pad = -size % EVAL_CHUNK
        arrays = [np.concatenate([a, np.zeros((pad, *a.shape[1:]), a.dtype)])
                  for a in (batch.inputs, batch.targets, batch.weights)]
        losses, hits = [], []
        for start in range(0, size + pad, EVAL_CHUNK):
            chunk = [a[start:start + EVAL_CHUNK] for a in arrays]
            loss, hit = self._evaluate(self.params, *chunk)
            losses.append(np.asarray(loss))
            hits.append(np.asarray(hit))
        loss, hit = np.concatenate(losses)[:size], np.concatenate(hits)[:size]
        return {"loss": float(loss.sum() / batch.weights.sum()),
                **grouped_accuracy(hit, batch)}

    # ------------------------------------------------------------ checkpoints
    def save_checkpoint(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        leaves = jax.tree_util.tree_leaves((self.params, self.opt_state))
        header = {"config": self.config.to_dict(), "step": self.step, "curves": self.curves,
                  "window": self.window,
                  "elapsed": self.elapsed, "rng": self.rng.bit_generator.state}
        path = directory / CHECKPOINT
        arrays: dict[str, Any] = {f"leaf{i}": np.asarray(leaf) for i, leaf in enumerate(leaves)}
        with replacing(path) as handle:  # a crash never leaves half a checkpoint
            np.savez(handle, __header__=np.frombuffer(json.dumps(header).encode(), np.uint8),
                     **arrays)
        return path

    def load_checkpoint(self, directory: Path) -> None:
        """Continue from `directory`'s checkpoint. UnreadableCheckpoint if it is not a
        regular file, too large, cut short, corrupt, forged or another run's (nothing of it
        is used then); ExperimentError if there is none."""
        path = directory / CHECKPOINT
        if not path.exists():
            raise ExperimentError(f"resume: no checkpoint {path}; this run cannot be resumed "
                                  f"(start it again without --resume)")
        current_leaves, treedef = jax.tree_util.tree_flatten((self.params, self.opt_state))
        header, leaves = read_checkpoint(path, self.config,
                                         [np.asarray(leaf) for leaf in current_leaves])
        self.params, self.opt_state = jax.tree_util.tree_unflatten(
            treedef, jax.device_put(leaves, self.device))
        self.step, self.curves, self.elapsed = header["step"], header["curves"], header["elapsed"]
        self.window = [tuple(pair) for pair in header.get("window", [])]
        self.rng = restored_rng(header)  # read_checkpoint checked that it is one

    # ------------------------------------------------------------ training
    def _diverged(self, loss: float, grad_norm: float) -> ExperimentError:
        worst = max(float(jnp.max(jnp.abs(p))) for p in self.params.values())
        if not np.isfinite(grad_norm):
            cause = f"the gradient overflowed (norm {grad_norm})"
        elif not np.isfinite(worst):
            cause = "the trained parameters became non-finite"
        else:
            cause = f"the logits overflowed (largest |parameter| {worst:.3g})"
        return ExperimentError(f"step {self.step}: non-finite training loss ({loss}); {cause}. "
                               f"Lower the learning rate (lr = {self.config.lr:g}) or the "
                               f"clipping threshold (clip = {self.config.clip:g})")

    def run(self, out_dir: Path | None = None, progress: bool = True,
            stop_after: int | None = None) -> dict:
        """Train to `config.steps` (or stop after `stop_after` steps of this call and write a
        checkpoint); returns the result dict (results.py writes it)."""
        config = self.config
        end = config.steps if stop_after is None else min(config.steps, self.step + stop_after)
        bar = tqdm(total=config.steps, initial=self.step, disable=not progress,
                   desc=config.name(), leave=False)
        started = time.perf_counter()
        try:
            while self.step < end and not stopping.requested():
                rng_state = self.rng.bit_generator.state
                try:
                    task = task_at(self.phases, self.step)
                    batch = task.train_batch(config.batch, self.rng)
                    params, opt_state, loss, accuracy, grad_norm = self._step(
                        self.params, self.opt_state, batch.inputs, batch.targets,
                        batch.weights, first_position(config, task, self.task, self.rng))
                except KeyboardInterrupt:  # this step did not happen: its checkpoint
                    self.rng.bit_generator.state = rng_state  # resumes bit for bit
                    raise
                # one statement without a call: an interrupt lands before it or after it
                self.params, self.opt_state, self.step = params, opt_state, self.step + 1
                loss, accuracy = float(loss), float(accuracy)
                if not np.isfinite(loss):
                    raise self._diverged(loss, float(grad_norm))
                self.window.append((loss, accuracy))
                bar.update(1)
                if self.step % 10 == 0 or self.step == end:
                    bar.set_postfix(loss=f"{loss:.3f}", acc=f"{accuracy:.3f}")
                if self.step % config.eval_every == 0 or self.step == config.steps:
                    self.curves.append({"step": self.step,
                                        "train_loss": float(np.mean([w[0] for w in self.window])),
                                        "train_accuracy": float(np.mean([w[1] for w in
                                                                         self.window])),
                                        **{f"test_{k}": v for k, v in
                                           self.evaluate(self.curve_set).items()
                                           if k in ("loss", "accuracy")}})
                    self.window = []
                if out_dir is not None and config.checkpoint_every and \
                        self.step % config.checkpoint_every == 0:
                    self.elapsed += time.perf_counter() - started
                    started = time.perf_counter()
                    self.save_checkpoint(out_dir)
        except KeyboardInterrupt:  # a second Ctrl-C (stopping.py), or none installed
            interrupted = True
        else:
            interrupted = stopping.requested() and self.step < end
        finally:
            bar.close()
        self.elapsed += time.perf_counter() - started
        if interrupted:
            raise self._interrupted(out_dir)
        if self.step < config.steps:
            if out_dir is not None:
                self.save_checkpoint(out_dir)
            return {"config": config.to_dict(), "finished": False, "step": self.step}
        return self.result()

    def _interrupted(self, out_dir: Path | None) -> stopping.Interrupted:
        """Ctrl-C: the checkpoint of the last whole step is written (atomically), so that
        --resume continues from it."""
        if out_dir is None:
            return stopping.Interrupted(f"interrupted at step {self.step}; no output "
                                        "directory, so no checkpoint: this run cannot be "
                                        "resumed")
        path = self.save_checkpoint(out_dir)
        return stopping.Interrupted(f"interrupted at step {self.step}; checkpoint written to "
                                    f"{path}; continue with --resume")

    def result(self) -> dict:
        final = self.evaluate()
        return {"config": self.config.to_dict(), "finished": True, "step": self.step,
                "m": self.backbone.m, **self.backbone.parameter_counts(),
                "majority_baseline": majority_accuracy(self.test),
                "test_size": len(self.test), "final": final, "curves": self.curves,
                "wall_time_s": self.elapsed, "device": describe(self.device)}

    def trained_model(self):
        """The backbone with the trained arrays, as a checked weight-format Transformer."""
        return with_arrays(self.backbone.model, {k: np.asarray(v) for k, v in self.params.items()})


def train(config: RunConfig, out_dir: Path | None = None, resume: bool = False,
          progress: bool = True, stop_after: int | None = None,
          device_name: str | None = None) -> dict:
    """Run `config` on `device_name` (see Trainer), resuming from `out_dir`'s checkpoint if
    asked (a checkpoint that cannot be used is refused, never trained over); the result
    dict."""
    trainer = Trainer(config, device_name)
    if resume:
        if out_dir is None:
            raise ExperimentError("resume: needs the run's output directory")
        trainer.load_checkpoint(Path(out_dir))
    return trainer.run(None if out_dir is None else Path(out_dir), progress, stop_after)
