"""The run plans of `rasp-sim experiment TASK --budget ci|small|medium|long|paper`.

- paper: the precursors' settings (docs/universal.md): Dyck-1 as Zhong & Andreas
  (H=4, L=2, k=4, c=16, m=416; AdamW lr 1e-3, wd 1e-3, 500 warm-up steps, cosine, batch
  1000, 10,000 steps, clip 1.0, seed 43); k-hop as Sanford et al. (AdamW lr 1e-4, batch 32,
  100,001 steps, 1,000 linear warm-up steps then linear decay, data seed 4444) over
  max_hops in {1, 2, 4, 8} with L = ceil(log2 max_hops) + 2 (k = 16 would need L = 6,
  outside the protocol's L <= 5) and H in {1, 2}.
- small: every backbone, both tasks, 3 seeds: smaller UTs, fewer steps and a larger
  learning rate than the paper (measured: 42 runs in 33 minutes on 2 shared CPU cores with
  --workers 2). Its numbers are rasp-sim's own and are not comparable step for step with
  the paper's; its learning curves are still rising at the end.
- medium: the small budget trained longer: k-hop 4 times (1,600 steps), Dyck-1 8 times
  (4,000 steps), batch 32, warm-up scaled too, plus k-hop at max_hops = 4 (L = 4) with one
  seed. Longer rather than larger, because the one longer run we had (S-A Dyck-1 at the
  small sizes continued to 4,000 steps: 86.6%, from 71.0% at 500) gained from steps alone.
  Dyck-1 was 2,000 steps until the training shortcuts (shortcuts.py) made its steps 2.4-3
  times cheaper; 2,000 left S-A and R-A short of 95% (90.3% and 93.1%), and doubling them
  (the long budget of the time) passed it, so medium spends the time saved on steps.
  One seed at max_hops = 4 keeps k-hop near two hours: its runs with MLPs (S-RLM, R-RLM,
  F) take about 1,000-1,300 s each, so three seeds of every backbone (63 runs) come to
  about 3 h 20 min; the five backbones we ran there with two or three seeds varied by at
  most 1.6 points between seeds. Measured (docs/experiments.md): Dyck-1's 21 runs in 22
  minutes and k-hop's 28 in 135 minutes of wall time on 2 CPU cores with --workers 2,
  before k-hop's set-up (below) doubled m; at the set-up `--dry-run` estimates k-hop's
  28 runs at 3.8 CPU hours, 2.2 of them the seven max_hops = 4 runs. The
  paper budget (batch 1,000 x 10,000 steps at m = 416, about 2.7 CPU-seconds a step) is
  some 7.5 CPU-hours per Dyck-1 run: a GPU's.
- long: where medium left a question open, the same machines trained longer. Dyck-1: S-A and
  R-A for 8,000 steps (2x medium), 3 seeds: what twice the steps give the two machines
  whose seeds differ most. k-hop: the residual machines S-RL and R-RL at max_hops = 2 and
  k-hop's set-up (below) for 8,000 steps (5x medium, curve points every 400), 3 seeds:
  whether they reach the second hop on every seed, which medium's 1,600 steps give S-RL
  on one seed of three and R-RL on none. Measured: 23-34 minutes a k-hop run (wall, with
  one to three other training runs on the 2 cores).
- k-hop's set-up (small, medium and long): the paper's head width 4 and a learning rate per
  kind of machine (KHOP_LR_TIMES), each change measured alone first; docs/experiments.md
  has the search. Before it every machine trained at head width 2 and 3e-3, and the
  long budget was S-RL and R-RL with one seed for 30,000 steps.
- ci: one short run per task (the CI smoke test of docs/universal.md: 200 Dyck-1 steps).
"""
from __future__ import annotations

import math
from dataclasses import replace

from .backbones import VARIANTS, Sizes
from .config import RunConfig
from .errors import ExperimentError

TASKS = ("dyck1", "khop")

# A budget's settings for one task: each base run with the seeds it is repeated over.
Setting = tuple[RunConfig, tuple[int, ...]]
THREE_SEEDS = (0, 1, 2)
PAPER_SEEDS = (43, 44, 45)


def _paper(task: str) -> list[Setting]:
    if task == "dyck1":
        return [(RunConfig("dyck1", "S-A", Sizes(4, 2, 4, 16), steps=10_000, batch=1000,
                           lr=1e-3, weight_decay=1e-3, warmup=500, schedule="cosine",
                           clip=1.0, data_seed=43, eval_every=250, checkpoint_every=500),
                 PAPER_SEEDS)]
    plans: list[Setting] = []
    for max_hops in (1, 2, 4, 8):
        layers = math.ceil(math.log2(max_hops)) + 2
        for heads in (1, 2):
            plans.append((RunConfig("khop", "S-A", Sizes(heads, layers, 4, 8),
                                    task_options={"max_hops": max_hops, "test_size": 2000},
                                    steps=100_001, batch=32, lr=1e-4, weight_decay=1e-3,
                                    warmup=1000, schedule="linear", clip=1.0, data_seed=4444,
                                    eval_every=2000, checkpoint_every=5000), PAPER_SEEDS))
    return plans


def _small(task: str) -> list[Setting]:
    if task == "dyck1":
        return [(RunConfig("dyck1", "S-A", Sizes(4, 2, 2, 2), steps=500, batch=32, lr=3e-3,
                           warmup=50, schedule="cosine", data_seed=43, eval_every=100,
                           checkpoint_every=250), THREE_SEEDS)]
    return [(RunConfig("khop", "S-A", Sizes(2, 3, 2, 4), steps=400, batch=32, lr=3e-3,
                       warmup=40, schedule="linear", data_seed=4444, eval_every=100,
                       checkpoint_every=200, task_options={"max_hops": 2, "test_size": 500}),
             THREE_SEEDS)]


# How many times small's steps a medium run trains (see the docstring).
MEDIUM_LENGTH = {"dyck1": 8, "khop": 4}
# k-hop's long runs: 5x medium, where S-RL at the set-up below had reached k = 2 at 88.9%
# in medium's 1,600 steps and R-RL had not started the second hop (52.4%).
LONG_KHOP_STEPS = 8000

# k-hop's set-up below the paper budget, each change measured alone on medium's max_hops = 2
# runs first (docs/experiments.md, "k-hop: what the machines can represent"): every
# machine at the paper's head width (Sanford et al.'s query/key width 4, c = 8: m = 176 at
# H = 2, L = 3), and a learning rate per kind of machine, as a multiple of small's 3e-3.
# The attention-only machines need far larger steps (S-A 28.8% -> 55.1% at 10x alone; the
# exact embedding that solves the task has entries up to 1.6e4), the residual ones 3x
# (alone it changed nothing; with width 4, S-RL 90.1% -> 96.5%).
KHOP_HEAD_DIM, KHOP_OUT_DIM = 4, 8
KHOP_LR_TIMES = {"S-A": 10, "R-A": 10, "S-RL": 3, "R-RL": 3, "S-RLM": 3, "R-RLM": 3, "F": 1}


def khop_setup(run: RunConfig) -> RunConfig:
    """`run` (a k-hop run of the small, medium or long budget) at k-hop's set-up for its
    backbone (above)."""
    sizes = replace(run.sizes, head_dim=KHOP_HEAD_DIM, out_dim=KHOP_OUT_DIM)
    return replace(run, sizes=sizes, lr=run.lr * KHOP_LR_TIMES[run.variant])


def _medium(task: str) -> list[Setting]:
    # Same machines, sizes, learning rate and data as small, more steps; curve points every
    # 200 steps (20 for Dyck-1, 8 for k-hop). k-hop adds max_hops = 4, one layer deeper
    # (L = ceil(log2 max_hops) + 2, the paper's rule), with one seed (see the docstring).
    times = MEDIUM_LENGTH[task]
    settings = [(replace(run, steps=times * run.steps, warmup=times * run.warmup,
                         eval_every=200, checkpoint_every=times // 2 * run.checkpoint_every),
                 seeds)
                for run, seeds in _small(task)]
    if task == "khop":
        two_hops = settings[0][0]
        settings.append((replace(two_hops, sizes=replace(two_hops.sizes, layers=4),
                                 task_options={**two_hops.task_options, "max_hops": 4}), (0,)))
    return settings


def _long(task: str) -> list[Setting]:
    (medium, seeds), *_ = _medium(task)  # the max_hops = 2 setting for k-hop
    if task == "dyck1":
        return [(with_steps([medium], 2 * medium.steps)[0], seeds)]
    longer = replace(with_steps([medium], LONG_KHOP_STEPS)[0], eval_every=400,
                     checkpoint_every=1000)
    return [(longer, seeds)]


def _ci(task: str) -> list[Setting]:
    if task == "dyck1":
        return [(RunConfig("dyck1", "R-A", Sizes(2, 2, 2, 4), steps=200, batch=32, lr=3e-3,
                           warmup=20, data_seed=43, eval_every=50,
                           task_options={"test_size": 1000}), (0,))]
    return [(RunConfig("khop", "R-A", Sizes(1, 2, 2, 4), steps=200, batch=16, lr=3e-3,
                       warmup=20, schedule="linear", data_seed=4444, eval_every=50,
                       task_options={"max_hops": 1, "test_size": 250}), (0,))]


BUILDERS = {"ci": _ci, "small": _small, "medium": _medium, "long": _long, "paper": _paper}
BUDGETS = tuple(BUILDERS)


def default_variants(task: str, budget: str) -> tuple[str, ...] | None:
    """The backbones a budget trains for `task` (None: each setting's own, as in ci)."""
    if budget == "ci":
        return None
    if budget == "long":
        return ("S-A", "R-A") if task == "dyck1" else ("S-RL", "R-RL")
    return VARIANTS


def with_steps(runs: list[RunConfig], steps: int) -> list[RunConfig]:
    """`runs` trained for `steps` steps each: the warm-up and a length curriculum's phases
    keep their share of the schedule, and the curve points and checkpoints their number."""
    def scaled(interval: int, run: RunConfig) -> int:
        return max(1, round(interval * steps / run.steps)) if interval else 0
    return [replace(run, steps=steps, warmup=round(run.warmup * steps / run.steps),
                    eval_every=scaled(run.eval_every, run),
                    checkpoint_every=scaled(run.checkpoint_every, run),
                    length_curriculum=tuple((length, scaled(phase, run))
                                            for length, phase in run.length_curriculum))
            for run in runs]


def plan(task: str, budget: str, variants: tuple[str, ...] | None = None,
         seeds: tuple[int, ...] | None = None) -> list[RunConfig]:
    """Every run of `budget` for `task` ("all" for both), one per variant, seed and setting."""
    if budget not in BUDGETS:
        raise ExperimentError(f"budget: unknown budget {budget!r}; known: {', '.join(BUDGETS)}")
    if task not in (*TASKS, "all"):
        raise ExperimentError(f"task: unknown task {task!r}; known tasks: "
                              f"{', '.join(TASKS)}, all")
    for variant in variants or ():
        if variant not in VARIANTS:
            raise ExperimentError(f"backbone: unknown backbone {variant!r}; "
                                  f"known backbones: {', '.join(VARIANTS)}")
    builder = BUILDERS[budget]
    runs = []
    for name in (TASKS if task == "all" else (task,)):
        for base, setting_seeds in builder(name):
            chosen = variants or default_variants(name, budget) or (base.variant,)
            set_up = name == "khop" and budget in ("small", "medium", "long")
            for variant in chosen:
                for seed in (seeds if seeds is not None else setting_seeds):
                    run = replace(base, variant=variant, seed=seed)
                    runs.append(khop_setup(run) if set_up else run)
    return runs
