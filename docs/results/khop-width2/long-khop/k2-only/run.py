"""An experiment of docs/experiments.md from before k-hop's set-up: the `long` budget's S-RL
run of the time trained on k = 2 alone (min_hops = max_hops = 2) for 8,000 steps, curve
points every 500.

    python docs/results/khop-width2/long-khop/k2-only/run.py OUT_DIR
"""
import sys
from dataclasses import replace
from pathlib import Path

from rasp_sim.experiments.budgets import plan, with_steps
from rasp_sim.experiments.sweep import sweep

if len(sys.argv) != 2:
    sys.exit(f"usage: python {sys.argv[0]} OUT_DIR")
# the long budget's S-RL run as it was before k-hop's set-up: head width 2, c = 4, lr 3e-3
(base,) = plan("khop", "long", variants=("S-RL",), seeds=(0,))
base = replace(base, sizes=replace(base.sizes, head_dim=2, out_dim=4), lr=3e-3)
(run,) = with_steps([base], 8000)
run = replace(run, eval_every=500, checkpoint_every=2000,
              task_options={**run.task_options, "min_hops": 2})
results, failures = sweep([run], Path(sys.argv[1]), progress=False)
for failure in failures:
    print(failure)
for result in results:
    print(result["final"]["accuracy"],
          [(point["step"], round(point["test_accuracy"], 3)) for point in result["curves"]])
