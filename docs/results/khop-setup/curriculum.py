"""A sequence-length curriculum for k-hop, the experiment of docs/experiments.md that asks
whether short sequences first let a machine keep its second hop at the paper's length 100:
medium's run of MACHINE at k-hop's set-up trained for 1,600 steps on sequences of length
30, then its embeddings (the first 30 position rows, every token row and the read-out)
carried into the same run at length 100, which trains for STEPS more (a fresh optimiser
and schedule). Run from the repository root:

    python docs/results/khop-setup/curriculum.py MACHINE SEED STEPS

One line goes to curriculum.jsonl beside this file: both phases' results (no curves)."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from rasp_sim.experiments.budgets import plan, with_steps
from rasp_sim.experiments.errors import ExperimentError
from rasp_sim.experiments.train import Trainer

HERE = Path(__file__).resolve().parent
SHORT = 30


def main(variant: str, seed: int, steps: int) -> None:
    (run,) = [r for r in plan("khop", "medium", (variant,), (seed,))
              if r.task_options["max_hops"] == 2]
    start = time.time()
    short = Trainer(replace(run, task_options={**run.task_options, "seq_len": SHORT}))
    first = short.run(None, progress=False)
    full = Trainer(with_steps([run], steps)[0])
    params = dict(full.params)
    for name, value in short.params.items():
        if params[name].shape == value.shape:
            params[name] = value
        else:  # the position rows: the short run trained the first SHORT
            params[name] = params[name].at[:value.shape[0]].set(value)
    full.params, full.opt_state = params, full.tx.init(params)
    second = full.run(None, progress=False)
    row = {"variant": variant, "seed": seed, "short_length": SHORT, "steps_at_100": steps,
           "seconds": time.time() - start,
           **{phase: {k: v for k, v in result.items() if k != "curves"}
              for phase, result in (("short", first), ("full", second))}}
    with (HERE / "curriculum.jsonl").open("a") as out:
        out.write(json.dumps(row) + "\n")
    final = second["final"]
    print(variant, seed, f"{100 * final['accuracy']:.1f}%", final["accuracy_by_group"])


if __name__ == "__main__":
    if len(sys.argv) != 4 or not (sys.argv[2].isdigit() and sys.argv[3].isdigit()):
        raise SystemExit(f"usage: python {sys.argv[0]} MACHINE SEED STEPS")
    try:
        main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    except ExperimentError as error:  # an unknown machine, named by plan()
        raise SystemExit(error.message) from None
