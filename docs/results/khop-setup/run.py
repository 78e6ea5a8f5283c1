"""The k-hop set-up search of docs/experiments.md: medium's k-hop runs (max_hops 2, 1,600
steps) with one change at a time, from the budgets as they were before the set-up (head
width 2, c = 4, small's learning rate 3e-3 for every machine). Run from the repository
root, e.g.

    python docs/results/khop-setup/run.py S-A:lr10:0 R-RL:k4+lr3:0

each argument MACHINE:CHANGES:SEED, CHANGES '+'-joined: k4 (head width 4, c = 8), lrX (the
learning rate times X), sX (the steps times X), nX (sequences of length X, not the
paper's 100), eX (the token and position embeddings drawn with standard deviation X, not
0.02), or base (none). One line per finished run
goes to results.jsonl beside this file (the run's result without its curves, and its wall
time in `seconds`); each run's checkpoint and result go to runs/."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from rasp_sim.experiments.budgets import plan, with_steps
from rasp_sim.experiments.config import RunConfig
from rasp_sim.experiments.errors import ExperimentError
from rasp_sim.experiments.train import train

HERE = Path(__file__).resolve().parent


def before_the_set_up(variant: str, seed: int) -> RunConfig:
    """medium's max_hops = 2 run of `variant`, as it was before the set-up."""
    (run,) = [r for r in plan("khop", "medium", (variant,), (seed,))
              if r.task_options["max_hops"] == 2]
    return replace(run, sizes=replace(run.sizes, head_dim=2, out_dim=4), lr=3e-3)


def changed(run: RunConfig, changes: str) -> RunConfig:
    for part in changes.split("+"):
        if part == "k4":
            run = replace(run, sizes=replace(run.sizes, head_dim=4, out_dim=8))
        elif part.startswith("lr"):
            run = replace(run, lr=run.lr * float(part[2:]))
        elif part.startswith("n"):
            run = replace(run, task_options={**run.task_options, "seq_len": int(part[1:])})
        elif part.startswith("e"):
            run = replace(run, embed_std=float(part[1:]))
        elif part.startswith("s"):
            run = with_steps([run], int(run.steps * float(part[1:])))[0]
        elif part != "base":
            raise SystemExit(f"unknown change {part!r}")
    return run


def main(specs: list[str]) -> None:
    if not specs:
        raise SystemExit(__doc__)
    for spec in specs:
        parts = spec.split(":")
        if len(parts) != 3 or not parts[2].isdigit():
            raise SystemExit(f"{spec!r}: each argument is MACHINE:CHANGES:SEED, e.g. S-A:lr10:0")
        variant, changes, seed = parts
        config = changed(before_the_set_up(variant, int(seed)), changes)
        start = time.time()
        result = train(config, HERE / "runs" / f"{variant}-{changes}-{seed}", progress=False)
        row = {"variant": variant, "change": changes, "seed": int(seed),
               "seconds": time.time() - start, "config": config.to_dict(),
               **{k: v for k, v in result.items() if k not in ("config", "curves")}}
        with (HERE / "results.jsonl").open("a") as out:
            out.write(json.dumps(row) + "\n")
        final = result["final"]
        print(spec, f"{100 * final['accuracy']:.1f}%", final["accuracy_by_group"], flush=True)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except ExperimentError as error:  # an unknown machine, named by plan()
        raise SystemExit(error.message) from None
