"""`rasp-sim experiment`: train the embedding of frozen (universal) transformers.

    rasp-sim experiment dyck1|khop|all --budget ci|small|medium|long|paper [--backbone V ...]
                        [--seeds S ...] [--steps N] [--batch B] [--lr LR]
                        [--embed-std STD] [--out DIR]
                        [--length-curriculum LEN:STEPS ... [--shift-short]]
                        [--device cpu|gpu]
                        [--workers N | --scheduler ADDRESS] [--resume] [--no-progress] [--json]
    rasp-sim experiment dyck1|khop|all --check-capacity [--budget ...] [--out DIR]

One run goes straight through the trainer; several run one after another, or on Dask with
--workers N (a local cluster) or --scheduler ADDRESS (an existing cluster). Writes
DIR/<run>/result.json per run, DIR/summary.json, DIR/table.md and DIR/curves-<task>.png.
JAX and optax (the train extra) are imported inside the handler. --check-capacity trains
nothing: it prints each attention-only machine's ceiling (rasp_sim/experiments/capacity)
beside DIR/summary.json's results, with NumPy alone.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from ..base.atomic_write import write_text
from . import EXIT_INTERRUPTED, UsageError
from ..base.counts import initial_std, learning_rate, length_phase, positive, seed_number
from .options import add_json_option, checked_scheduler

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "experiment", help="train embeddings of frozen universal transformers (Dyck-1, k-hop)",
        description="Train only the embedding and unembedding of "
                    "frozen sparse or random transformers (and a fully trained baseline).")
    parser.add_argument("task", metavar="TASK", help="dyck1, khop or all")
    parser.add_argument("--budget", choices=("ci", "small", "medium", "long", "paper"),
                        default="ci",
                        help="ci: one short run per task; small: every backbone x 3 seeds "
                        "(measured: 33 minutes on 2 CPU cores with --workers 2); medium: small "
                        "trained longer (Dyck-1 8x its steps, k-hop 4x), and k-hop at max_hops "
                        "4 with one seed (measured on 2 CPU cores with --workers 2: Dyck-1 22 "
                        "minutes; k-hop, at head width 4 since its set-up, estimated at 3.8 "
                        "CPU hours); long: Dyck-1 S-A and R-A at 2x medium's steps, k-hop S-RL "
                        "and R-RL at 5x, 3 seeds (measured: 23-34 minutes a k-hop run on 2 "
                        "shared CPU cores); k-hop below paper trains at head width 4 with a "
                        "learning rate per machine (docs/experiments.md); paper: the "
                        "precursors' settings "
                        "(a GPU's work: --device gpu)")
    parser.add_argument("--backbone", action="append", dest="backbones", metavar="V",
                        help="S-A, R-A, S-RL, R-RL, S-RLM, R-RLM or F (repeatable; default: "
                        "the budget's)")
    parser.add_argument("--seeds", type=seed_number, nargs="+", metavar="S",
                        help="seeds to run")
    parser.add_argument("--steps", type=positive, metavar="N",
                        help="train each run for N steps instead of the budget's (warm-up, "
                        "curve points and checkpoints scaled with it)")
    parser.add_argument("--batch", type=positive, metavar="B",
                        help="train each run on batches of B instead of the budget's")
    parser.add_argument("--lr", type=learning_rate, metavar="LR",
                        help="train each run at the peak learning rate LR instead of the "
                        "budget's (which is per machine for k-hop)")
    parser.add_argument("--embed-std", type=initial_std, metavar="STD",
                        help="draw the token and position embeddings' initial entries with "
                        "standard deviation STD instead of 0.02 (the unembedding's stay at "
                        "0.02)")
    parser.add_argument("--length-curriculum", type=length_phase, nargs="+",
                        metavar="LEN:STEPS",
                        help="k-hop: train the first STEPS steps on sequences of length LEN "
                        "(phase after phase), the rest at the task's own length, e.g. "
                        "30:3000; one optimiser and schedule throughout")
    parser.add_argument("--shift-short", action="store_true",
                        help="with --length-curriculum: put each short batch at a random "
                        "offset in the position rows, so that every row trains from the start")
    parser.add_argument("--out", metavar="DIR",
                        help="output folder (default ./rasp-sim-experiments/BUDGET, with "
                        "-stepsN, -batchB, -lrLR, -embedSTD and -lenLENxSTEPS added for "
                        "--steps N, --batch B, --lr LR, --embed-std STD and "
                        "--length-curriculum)")
    parser.add_argument("--device", choices=("cpu", "gpu"),
                        help="where JAX trains (float32 on both); default: a GPU if JAX sees "
                        "one, else the CPU. gpu needs the gpu extra: pip install '.[gpu]'")
    parser.add_argument("--workers", type=positive, default=1, metavar="N",
                        help="parallel runs on a local Dask cluster (default 1: in this process)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on an existing Dask scheduler, e.g. tcp://host:8786")
    parser.add_argument("--resume", action="store_true",
                        help="reuse finished runs and continue interrupted ones from checkpoints")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bars (there are none when stderr is not a terminal)")
    parser.add_argument("--dry-run", action="store_true",
                        help="train nothing: print each setting's FLOPs per step, its CPU "
                             "time per step measured on a few steps here, and the budget's "
                             "estimated CPU hours")
    parser.add_argument("--check-capacity", action="store_true",
                        help="train nothing: embed an exact target of the task into each "
                             "attention-only machine (S-A, R-A) of the budget and print its "
                             "accuracy (the machine's ceiling) beside the results stored in "
                             "--out, if any")
    add_json_option(parser, "print the summary as JSON")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from rasp_sim.experiments.stopping import Interrupted, stop_on_interrupt

    try:
        # from the start: a Ctrl-C while JAX imports or compiles must not be raised there
        with stop_on_interrupt():
            return _experiment(args)
    except Interrupted as stopped:
        print(stopped.format(), file=sys.stderr)
        return EXIT_INTERRUPTED


def _checked_out(path: Path) -> Path:
    """The output folder, created and written to once before any training: a file, a
    device or a read-only folder fails here, not when the first result is written."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {path}: not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as error:
        raise UsageError(f"--out {path}: cannot write there ({error.strerror or error})") \
            from None
    return path


def _experiment(args: argparse.Namespace) -> int:
    from rasp_sim.experiments.budgets import plan, with_steps
    from rasp_sim.experiments.config import curriculum_name
    from rasp_sim.experiments.errors import ExperimentError
    from rasp_sim.experiments.outputs import SUMMARY, TABLE, check_outputs, curves_path
    from rasp_sim.experiments.results import markdown_table, summarise
    from rasp_sim.experiments.stopping import Interrupted, requested

    backbones = tuple(args.backbones) if args.backbones else None
    if args.check_capacity and backbones is None:
        from rasp_sim.experiments.capacity.check import ATTENTION_ONLY
        backbones = ATTENTION_ONLY
    try:
        configs = plan(args.task, args.budget, backbones,
                       tuple(args.seeds) if args.seeds else None)
    except ExperimentError as error:  # an unknown task or backbone name
        raise UsageError(error.message) from None
    if args.steps:
        configs = with_steps(configs, args.steps)
    overrides = {name: value for name, value in
                 (("batch", args.batch), ("lr", args.lr), ("embed_std", args.embed_std))
                 if value is not None}
    configs = [replace(config, **overrides) for config in configs]
    phases = tuple(args.length_curriculum or ())
    if phases or args.shift_short:
        configs = _with_curriculum(configs, phases, args.shift_short)
    if args.scheduler is not None:
        checked_scheduler(args.scheduler)
    default_out = (args.budget + "".join(
        f"-{label}{value}" for label, value in (("steps", args.steps), ("batch", args.batch),
                                                   ("lr", args.lr), ("embed", args.embed_std))
        if value is not None) + curriculum_name(phases, args.shift_short))
    out = Path(args.out) if args.out else Path("rasp-sim-experiments") / default_out
    if args.check_capacity:
        return _check_capacity(configs, out, args.json)
    if not args.dry_run:  # checked (and created) before any work; a dry run writes nothing
        out = _checked_out(out)
        check_outputs(configs, out, args.resume)
    try:
        from rasp_sim.experiments.device import resolve_device
        from rasp_sim.experiments.plot import plot_curves
        from rasp_sim.experiments.sweep import sweep
    except ImportError as error:
        raise ExperimentError(f"training needs the train extra ({error.name} is missing): "
                              f"pip install 'rasp-sim[train]'") from None
    if requested():
        raise Interrupted("interrupted before training; no run started")
    # On an existing cluster the workers' devices count, not this process's: they check.
    device = args.device if args.scheduler else resolve_device(args.device)
    if args.dry_run:
        from rasp_sim.experiments.cost import describe, estimate
        print(describe(estimate(configs, device)), end="")
        return 0
    results, failures = sweep(configs, out, args.workers, args.scheduler, args.resume,
                              progress=not args.no_progress and sys.stderr.isatty(),
                              device_name=device)
    rows = summarise(results)
    plots = []
    for task in sorted({r["config"]["task"] for r in results if r.get("finished")}):
        plots.append(str(plot_curves([r for r in results if r["config"]["task"] == task],
                                     curves_path(out, task), task)))
    summary = {"budget": args.budget, "steps": args.steps, "batch": args.batch,
               "lr": args.lr, "embed_std": args.embed_std, "runs": len(configs), "rows": rows,
               "failures": failures, "plots": plots}
    write_text(out / SUMMARY, json.dumps(summary, indent=1))
    write_text(out / TABLE, markdown_table(rows))
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(markdown_table(rows), end="")
        print(f"results in {out}/ ({SUMMARY}, {TABLE}, {', '.join(Path(p).name for p in plots)})")
    for failure in failures:
        print(f"experiment error: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _with_curriculum(configs: list, phases: tuple[tuple[int, int], ...],
                     shift_short: bool) -> list:
    """`configs` with the command line's curriculum, each checked against its run before
    any training (curriculum.phase_tasks)."""
    from rasp_sim.experiments.curriculum import phase_tasks
    from rasp_sim.experiments.errors import ExperimentError
    grown = [replace(config, length_curriculum=phases or config.length_curriculum,
                     shift_short=shift_short) for config in configs]
    try:
        for config in grown:
            phase_tasks(config, None)
    except ExperimentError as error:
        raise UsageError(error.message.replace("length_curriculum", "--length-curriculum")
                         .replace("shift_short", "--shift-short")) from None
    return grown


def _check_capacity(configs: list, out: Path, as_json: bool) -> int:
    """Each attention-only machine's ceiling (capacity/check.py) beside the training results
    in `out`/summary.json, if there is one; writes nothing."""
    from rasp_sim.base.bounded_read import UnreadableFile
    from rasp_sim.experiments.capacity.check import check
    from rasp_sim.experiments.capacity.report import ceiling_rows, markdown_ceilings
    from rasp_sim.experiments.errors import ExperimentError
    from rasp_sim.experiments.outputs import SUMMARY
    from rasp_sim.experiments.plot import summary_rows

    trained = []
    if (out / SUMMARY).exists():
        try:
            trained = summary_rows(out / SUMMARY)
        except UnreadableFile as error:
            raise ExperimentError(f"--out: {out / SUMMARY} is unreadable ({error}); move it "
                                  "away to check without the training results") from None
    rows = ceiling_rows([check(config) for config in configs], trained)
    if as_json:
        print(json.dumps({"rows": rows}, indent=1))
    else:
        print(markdown_ceilings(rows), end="")
        print(f"training results: {out / SUMMARY if trained else 'none found in ' + str(out)}")
    return 0
