"""What a budget costs before it runs: FLOPs per training step, counted from the shapes,
and CPU time, from a rate measured here on a few real steps of each setting. The rate is
FLOPs per CPU-second of this process (all its threads), which a shared machine's load
changes far less than it changes wall time.

Counted: every matrix product of the forward pass as the training step runs it (2 n_in n_out
per row, dense: the sparse machines' 0/1 matrices are densified up to train.DENSE_LIMIT;
the causal mask does not halve the score products, which are computed in full; the first
block's maps once per (token, position) pair for the whole batch, and for a task with one
answer per row the last attention block, the MLP after it and the read-out at that row:
shortcuts.py), times 3 for the forward and backward pass of a fully trained model (the
backward pass costs about twice the forward; Kaplan et al. 2020, "Scaling laws", section
2.1) and times 2 for a frozen backbone (gradients with respect to the activations only).
LayerNorm, softmax, GELU and the optimiser are left out: linear in the width, not
quadratic.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .backbones import universal_m
from .config import RunConfig
from .curriculum import phase_tasks

TIMED_STEPS = 5  # their median: one step's time varies 2x on a shared machine
WARM_UP_STEPS = 2  # the first step compiles, and the second too (its inputs are JAX arrays)


def _maps(config: RunConfig, rows: int) -> float:
    """One head's query, key and value maps on `rows` rows of the stream."""
    m, k = universal_m(config.sizes), config.sizes.head_dim
    return rows * (2 * 2 * m * k + 2 * m * m)


def forward_flops(config: RunConfig, seq_len: int, vocab: int, one_answer: bool = False) -> float:
    """Matrix-product FLOPs of one sequence's forward pass, without the first block's maps
    (table_flops: once per batch); with `one_answer`, the last attention block and what
    follows it at one row."""
    s, n = config.sizes, seq_len
    m = universal_m(s)
    attend = 2 * n * n * s.head_dim + 2 * n * n * m  # the scores and the weighted sum
    # one query: every key, the scores and weighted sum of one row, one value row
    at_answer = 2 * n * m * s.head_dim + 2 * m * s.head_dim + 2 * n * s.head_dim \
        + 2 * n * m + 2 * m * m
    mlp = 2 * 2 * m * 4 * m if config.variant.endswith("M") or config.variant == "F" else 0
    total = 0.0
    for layer in range(s.layers):
        answer = one_answer and layer == s.layers - 1
        if answer:
            total += s.heads * at_answer + mlp
        else:
            total += s.heads * (attend + (0 if layer == 0 else _maps(config, n))) + mlp * n
    return float(total + 2 * (1 if one_answer else n) * m * vocab)


def table_flops(config: RunConfig, seq_len: int, vocab: int, one_answer: bool = False) -> float:
    """The first block's maps, once per (token, position) pair for the whole batch (none
    when that block is read at the answer only)."""
    if one_answer and config.sizes.layers == 1:
        return 0.0
    return config.sizes.heads * _maps(config, vocab * seq_len)


def step_flops(config: RunConfig, seq_len: int, vocab: int, one_answer: bool = False) -> float:
    """FLOPs of one training step (a batch, forward and backward)."""
    passes = 3 if config.variant == "F" else 2
    return passes * (config.batch * forward_flops(config, seq_len, vocab, one_answer)
                     + table_flops(config, seq_len, vocab, one_answer))


@dataclass(frozen=True)
class Estimate:
    config: RunConfig        # the backbone's first run in the setting
    runs: int                # runs of this backbone and setting in the plan
    flops_per_step: float
    rate: float              # FLOPs per CPU-second, measured on the costliest backbone
    measured_on: str         # that backbone

    @property
    def cpu_seconds_per_step(self) -> float:
        return self.flops_per_step / self.rate

    @property
    def run_seconds(self) -> float:
        return self.cpu_seconds_per_step * self.config.steps


def mean_step_flops(config: RunConfig, task: Any) -> float:
    """FLOPs per step over the whole run: a length curriculum's shorter phases cost less."""
    total, start = 0.0, 0
    for end, phase in phase_tasks(config, task):
        total += (end - start) * step_flops(config, phase.seq_len, task.vocab_size,
                                            task.one_answer)
        start = end
    return total / config.steps


def measure_rate(config: RunConfig, device_name: str | None = None) -> float:
    """FLOPs per CPU-second of `config`'s training steps here: the median of TIMED_STEPS
    steps after WARM_UP_STEPS compiling ones."""
    from .train import Trainer  # JAX loads only here
    # More steps than are run, so the run never finishes (no final evaluation); all of them
    # at the task's own length, whose FLOPs the rate divides.
    trainer = Trainer(replace(config, steps=WARM_UP_STEPS + TIMED_STEPS + 1, eval_every=10**9,
                              length_curriculum=(), shift_short=False), device_name)
    trainer.run(progress=False, stop_after=WARM_UP_STEPS)
    times = []
    for _ in range(TIMED_STEPS):
        started = time.process_time()
        trainer.run(progress=False, stop_after=1)
        times.append(time.process_time() - started)
    task = trainer.task
    return step_flops(config, task.seq_len, task.vocab_size, task.one_answer) / float(np.median(times))


def estimate(configs: list[RunConfig], device_name: str | None = None) -> list[Estimate]:
    """Per setting (task, sizes, options, batch) and backbone: FLOPs per step, and the CPU
    time they take at the rate measured on the setting's costliest backbone (one
    measurement per setting keeps a dry run to minutes; at a large batch the products
    dominate, so the rate carries over)."""
    from .tasks import make_task
    settings: dict[tuple, dict[str, list[RunConfig]]] = {}
    for config in configs:
        key = (config.task, config.sizes, tuple(sorted(config.task_options.items())),
               config.batch, config.length_curriculum)
        settings.setdefault(key, {}).setdefault(config.variant, []).append(config)
    out = []
    for backbones in settings.values():
        first = next(iter(backbones.values()))[0]
        task = make_task(first.task, **{**first.task_options, "test_size": 1})
        flops = {variant: mean_step_flops(runs[0], task) for variant, runs in backbones.items()}
        costliest = max(flops, key=flops.__getitem__)
        rate = measure_rate(backbones[costliest][0], device_name)
        out += [Estimate(runs[0], len(runs), flops[variant], rate, costliest)
                for variant, runs in backbones.items()]
    return out


def describe(estimates: list[Estimate]) -> str:
    lines = ["| setting | backbone | runs | steps | batch | GFLOP/step | "
             "GFLOP per CPU-s (measured on) | CPU-s/step | CPU hours/run |", "|---|---|---|---|---|---|---|---|---|"]
    for e in estimates:
        c, s = e.config, e.config.sizes
        hops = c.task_options.get("max_hops")
        label = f"{c.task} H={s.heads} L={s.layers} k={s.head_dim} c={s.out_dim}" + \
            ("" if hops is None else f" max_hops={hops}")
        lines.append(f"| {label} | {c.variant} | {e.runs} | {c.steps:,} | {c.batch} | "
                     f"{e.flops_per_step / 1e9:.2f} | {e.rate / 1e9:.1f} ({e.measured_on}) | "
                     f"{e.cpu_seconds_per_step:.3f} | {e.run_seconds / 3600:.2f} |")
    total, runs = sum(e.run_seconds * e.runs for e in estimates), sum(e.runs for e in estimates)
    lines.append(f"\nestimated: {total / 3600:.1f} CPU hours for {runs} run{'s' * (runs != 1)} "
                 f"on this machine (CPU time of the measured steps, all threads; curve "
                 f"evaluations not counted)")
    return "\n".join(lines) + "\n"
