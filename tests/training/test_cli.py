"""`rasp-sim experiment` end to end: the ci budget (in the slow suite), the run plans,
resumption and the error cases."""
from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

pytest.importorskip("optax")

from rasp_sim.cli import main  # noqa: E402
from rasp_sim.experiments.backbones import VARIANTS  # noqa: E402
from rasp_sim.experiments.budgets import plan, with_steps  # noqa: E402
from rasp_sim.experiments.config import RunConfig  # noqa: E402
from rasp_sim.experiments.errors import ExperimentError  # noqa: E402


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("ci")
    code = main(["experiment", "dyck1", "--budget", "ci", "--out", str(out), "--no-progress"])
    return code, out


@pytest.mark.slow  # the ci budget trains for about 30 s
def test_ci_budget_dyck1_beats_the_majority_baseline(ci_run):
    code, out = ci_run
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    (row,) = summary["rows"]
    assert row["task"] == "dyck1" and row["steps"] == 200
    assert row["accuracy_mean"] > row["majority_baseline"] + 0.05
    assert 0.45 < row["majority_baseline"] < 0.6


@pytest.mark.slow  # the ci budget trains for about 30 s
def test_ci_budget_writes_results_table_and_plot(ci_run):
    _, out = ci_run
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    result = json.loads((run_dir / "result.json").read_text())
    for key in ("config", "curves", "final", "m", "parameters", "trainable", "wall_time_s",
                "majority_baseline"):
        assert key in result
    assert result["test_size"] == 1000 and len(result["curves"]) == 4
    assert (out / "curves-dyck1.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (out / "table.md").read_text()
    assert "| dyck1 | H=2 L=2 k=2 c=4 | R-A |" in table and "94.4%" in table


@pytest.mark.slow  # the ci budget trains for about 30 s
def test_resume_reuses_finished_runs(ci_run, capsys):
    code, out = ci_run
    before = (out / "summary.json").read_text()
    assert main(["experiment", "dyck1", "--budget", "ci", "--out", str(out), "--no-progress",
                 "--resume"]) == 0
    assert json.loads((out / "summary.json").read_text())["rows"] == json.loads(before)["rows"]


def test_plans_cover_the_comparison_table():
    small = plan("all", "small")
    assert len(small) == 2 * len(VARIANTS) * 3
    assert {(c.task, c.variant) for c in small} == {(t, v) for t in ("dyck1", "khop")
                                                   for v in VARIANTS}
    assert len({c.name() for c in small}) == len(small)
    paper = plan("dyck1", "paper", variants=("S-A",))
    assert [(c.steps, c.batch, c.lr, c.warmup, c.seed) for c in paper] == \
        [(10_000, 1000, 1e-3, 500, 43), (10_000, 1000, 1e-3, 500, 44),
         (10_000, 1000, 1e-3, 500, 45)]
    hops = plan("khop", "paper", variants=("R-RL",), seeds=(0,))
    assert [(c.task_options["max_hops"], c.sizes.layers) for c in hops][::2] == \
        [(1, 2), (2, 3), (4, 4), (8, 5)]


def test_medium_budget_is_the_small_one_trained_longer():
    small, medium = plan("all", "small"), plan("all", "medium")
    four_hops = [c for c in medium if c.task_options.get("max_hops") == 4]
    medium = [c for c in medium if c not in four_hops]
    assert [c.name() for c in medium] == [c.name() for c in small]  # same runs and seeds
    # the added k-hop setting: every backbone, one layer deeper, one seed (the two-hour size)
    assert sorted((c.variant, c.seed, c.sizes.layers) for c in four_hops) == sorted(
        (c.variant, 0, 4) for c in small if c.task == "khop" and c.seed == 0)
    # Dyck-1 8 times small's steps (what 4 times cost before the training shortcuts), k-hop 4
    for s, m in zip(small, medium):
        times = 8 if s.task == "dyck1" else 4
        assert (m.steps, m.warmup) == (times * s.steps, times * s.warmup)
        assert (m.sizes, m.batch, m.lr, m.task_options) == (s.sizes, s.batch, s.lr,
                                                            s.task_options)
    assert {(c.task, c.steps) for c in medium} == {("dyck1", 4000), ("khop", 1600)}
    assert len(medium) + len(four_hops) == 49


def test_long_budget_trains_what_medium_left_open_for_longer():
    medium = {c.name(): c for c in plan("all", "medium")}
    long = plan("all", "long")
    # Dyck-1: S-A and R-A, medium's runs and seeds at twice the steps
    dyck = [c for c in long if c.task == "dyck1"]
    assert sorted((c.variant, c.seed) for c in dyck) == [(v, s) for v in ("R-A", "S-A")
                                                         for s in (0, 1, 2)]
    for c in dyck:
        assert (c.steps, c.warmup) == (2 * medium[c.name()].steps, 2 * medium[c.name()].warmup)
        assert replace(c, steps=4000, warmup=400, eval_every=200, checkpoint_every=1000) == \
            medium[c.name()]
    # k-hop: the residual machines at max_hops = 2, medium's set-up and seeds, 8,000 steps
    hops = [c for c in long if c.task == "khop"]
    assert sorted((c.variant, c.seed) for c in hops) == [(v, s) for v in ("R-RL", "S-RL")
                                                         for s in (0, 1, 2)]
    for c in hops:
        base = medium[c.name()]
        assert (c.task_options, c.sizes, c.lr, c.batch) == (base.task_options, base.sizes,
                                                           base.lr, base.batch)
        assert (c.steps, c.eval_every) == (8000, 400)
        assert c.warmup / c.steps == base.warmup / base.steps
    assert [c.variant for c in plan("khop", "long", variants=("F",))] == ["F"] * 3


def test_khop_budgets_below_the_papers_use_the_measured_set_up():
    """small, medium and long train k-hop at the paper's head width 4 (c = 8) and at a
    learning rate per kind of machine: 10x small's for the attention-only ones, 3x for
    the residual ones, small's own for F; Dyck-1, ci and paper are left as they were."""
    want = {"S-A": 3e-2, "R-A": 3e-2, "S-RL": 9e-3, "R-RL": 9e-3, "S-RLM": 9e-3,
            "R-RLM": 9e-3, "F": 3e-3}
    for budget in ("small", "medium", "long"):
        for c in plan("khop", budget, variants=VARIANTS):
            assert (c.sizes.head_dim, c.sizes.out_dim) == (4, 8)
            assert c.lr == pytest.approx(want[c.variant])
        for c in plan("dyck1", budget):
            assert (c.sizes.head_dim, c.lr) == (2, 3e-3)
    for c in plan("khop", "paper", variants=VARIANTS):
        assert (c.sizes.head_dim, c.sizes.out_dim, c.lr) == (4, 8, 1e-4)
    for c in plan("khop", "ci"):
        assert (c.sizes.head_dim, c.sizes.out_dim, c.lr) == (2, 4, 3e-3)


def test_seeds_given_on_the_command_line_replace_every_settings_own():
    runs = plan("khop", "medium", variants=("S-A",), seeds=(5, 6))
    assert [(c.task_options["max_hops"], c.seed) for c in runs] == [(2, 5), (2, 6), (4, 5),
                                                                     (4, 6)]


def test_steps_scale_the_schedule_with_the_run():
    (dyck,) = plan("dyck1", "medium", variants=("S-A",), seeds=(0,))
    assert (dyck.steps, dyck.warmup, dyck.eval_every, dyck.checkpoint_every) == (4000, 400,
                                                                                  200, 1000)
    (longer,) = with_steps([dyck], 16_000)
    assert (longer.steps, longer.warmup, longer.eval_every, longer.checkpoint_every) == \
        (16_000, 1600, 800, 4000)
    assert longer.name() == dyck.name() and (longer.lr, longer.sizes) == (dyck.lr, dyck.sizes)
    (short,) = with_steps([replace(dyck, checkpoint_every=0)], 3)
    assert (short.steps, short.warmup, short.eval_every, short.checkpoint_every) == (3, 0, 1, 0)


@pytest.mark.parametrize("options, folder, fields", [
    (["--steps", "3", "--batch", "4"], "ci-steps3-batch4", {"steps": 3, "batch": 4}),
    (["--steps", "2", "--lr", "0.03", "--embed-std", "1.5"], "ci-steps2-lr0.03-embed1.5",
     {"steps": 2, "lr": 0.03, "embed_std": 1.5}),
])
def test_overrides_of_the_budget_reach_the_runs_and_name_the_default_out_folder(
        options, folder, fields, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "dyck1", *options, "--no-progress", "--json"]) == 0
    out = tmp_path / "rasp-sim-experiments" / folder
    (result_file,) = out.glob("*/result.json")
    config = json.loads(result_file.read_text())["config"]
    summary = json.loads((out / "summary.json").read_text())
    assert {name: config[name] for name in fields} == fields
    assert {name: summary[name] for name in fields} == fields


def test_a_length_curriculum_from_the_command_line_trains_and_names_its_folder(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["experiment", "khop", "--steps", "4", "--length-curriculum", "10:2",
                 "--shift-short", "--no-progress", "--json"]) == 0
    out = tmp_path / "rasp-sim-experiments" / "ci-steps4-len10x2-shifted"
    (result_file,) = out.glob("*-len10x2-shifted-R-A-seed0/result.json")
    config = json.loads(result_file.read_text())["config"]
    assert (config["length_curriculum"], config["shift_short"]) == ([[10, 2]], True)
    (row,) = json.loads((out / "summary.json").read_text())["rows"]
    assert row["setting"].endswith("from length 10 for 2 steps (shifted)")
    # --resume reuses the finished run: nothing trains again
    from rasp_sim.experiments.train import Trainer
    monkeypatch.setattr(Trainer, "run", lambda *a, **k: pytest.fail("trained again"))
    assert main(["experiment", "khop", "--steps", "4", "--length-curriculum", "10:2",
                 "--shift-short", "--no-progress", "--resume"]) == 0


def test_a_record_names_embed_std_only_when_it_is_not_the_default():
    (run,) = plan("khop", "ci")
    # records written before embed_std existed have no such key, and still match
    assert "embed_std" not in run.to_dict()
    wider = replace(run, embed_std=0.5)
    data = json.loads(json.dumps(wider.to_dict()))
    assert data["embed_std"] == 0.5 and RunConfig.from_dict(data) == wider


def test_plan_errors_name_the_choices():
    with pytest.raises(ExperimentError, match="unknown budget 'huge'; known: ci, small, "
                                              "medium, long, paper"):
        plan("dyck1", "huge")


@pytest.mark.parametrize("argv, message", [
    (["experiment", "dyck2"], "error: task: unknown task 'dyck2'; known tasks: "
                              "dyck1, khop, all"),
    (["experiment", "khop", "--backbone", "Z"], "error: backbone: unknown backbone "
                                                "'Z'; known backbones: S-A, R-A, S-RL"),
    (["experiment", "dyck1", "--seeds", "-1"], "argument --seeds: invalid value '-1': "
                                               "expected a seed, an integer >= 0"),
    (["experiment", "dyck1", "--scheduler", "not an address"],
     "error: --scheduler 'not an address': expected a Dask scheduler address such as "
     "tcp://host:8786"),
    (["experiment", "dyck1", "--scheduler", "scheduler.json"], "expected a Dask scheduler"),
    (["experiment", "dyck1", "--out", "{tmp}/fifo"], "error: --out {tmp}/fifo: not a folder"),
    (["experiment", "dyck1", "--out", "{tmp}/file/x"], "error: --out {tmp}/file/x: "
                                                       "cannot write there (Not a directory)"),
    (["experiment", "khop", "--length-curriculum", "30"],
     "argument --length-curriculum: invalid phase '30': expected LEN:STEPS"),
    (["experiment", "khop", "--length-curriculum", "100:10"],
     "error: --length-curriculum: a phase's length must be an integer in 3..99 (the task's "
     "seq_len is 100), got 100"),
    (["experiment", "khop", "--length-curriculum", "30:150", "30:50"],
     "error: --length-curriculum: its phases take 200 of the run's 200 steps"),
    (["experiment", "dyck1", "--length-curriculum", "10:10"],
     "error: --length-curriculum: the dyck1 task has no sequence length to grow"),
    (["experiment", "khop", "--shift-short"],
     "error: --shift-short: there is no shorter phase to shift; give a --length-curriculum"),
    (["experiment", "khop", "--lr", "300"],
     "argument --lr: invalid value '300': expected a learning rate, a number above 0 and at "
     "most 10"),
    (["experiment", "khop", "--lr", "0"], "argument --lr: invalid value '0'"),
    (["experiment", "khop", "--lr", "nan"], "argument --lr: invalid value 'nan'"),
    (["experiment", "khop", "--embed-std", "-1"],
     "argument --embed-std: invalid value '-1': expected a standard deviation"),
    (["experiment", "khop", "--embed-std", "inf"], "argument --embed-std: invalid value 'inf'"),
])
def test_bad_requests_are_usage_errors_before_any_work(argv, message, capsys, monkeypatch,
                                                       tmp_path):
    from rasp_sim.experiments import sweep

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("")
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in argv]
    monkeypatch.setattr(sweep, "sweep", lambda *a, **k: pytest.fail("training started"))
    try:
        code = main(argv)
    except SystemExit as exit_info:  # argparse's own checks of one option
        code = exit_info.code
    assert code == 2
    assert message.replace("{tmp}", str(tmp_path)) in capsys.readouterr().err


def test_an_out_that_is_a_file_is_refused_before_training(tmp_path, capsys, monkeypatch):
    from rasp_sim.experiments import sweep

    monkeypatch.setattr(sweep, "sweep", lambda *a, **k: pytest.fail("training started"))
    (tmp_path / "file").write_text("")
    assert main(["experiment", "dyck1", "--out", str(tmp_path / "file")]) == 2
    assert f"--out {tmp_path / 'file'}: not a folder" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--workers", "--steps", "--batch"])
def test_counts_below_one_are_usage_errors(capsys, option):
    with pytest.raises(SystemExit) as exit_info:
        main(["experiment", "dyck1", option, "0"])
    assert exit_info.value.code == 2
    assert f"{option}: invalid value '0': expected a positive integer" in \
        capsys.readouterr().err


@pytest.mark.slow
def test_sweep_runs_on_a_local_dask_cluster(tmp_path, capsys):
    pytest.importorskip("distributed")
    assert main(["experiment", "khop", "--budget", "ci", "--backbone", "S-A", "--backbone",
                 "R-A", "--out", str(tmp_path), "--workers", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [row["variant"] for row in summary["rows"]] == ["S-A", "R-A"]
    assert all(set(row["accuracy_by_group_mean"]) == {"0", "1"} for row in summary["rows"])


@pytest.mark.slow
def test_sweep_runs_on_an_existing_cluster_and_resumes_there(tmp_path, capsys):
    # What docs/universal.md tells a user with a cluster: --scheduler ADDRESS, then --resume
    # reuses the finished runs and merges them into the same table.
    distributed = pytest.importorskip("distributed")
    argv = ["experiment", "dyck1", "--budget", "ci", "--out", str(tmp_path), "--json"]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        address = cluster.scheduler_address
        assert main([*argv, "--scheduler", address]) == 0
        first = json.loads(capsys.readouterr().out)
        result = next(tmp_path.glob("*/result.json"))
        written = result.stat().st_mtime_ns
        assert main([*argv, "--scheduler", address, "--resume"]) == 0
        again = json.loads(capsys.readouterr().out)
    assert result.stat().st_mtime_ns == written  # reused, not trained again
    assert again["rows"] == first["rows"] and len(first["rows"]) == 1


def test_too_large_for_memory_is_refused_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RASP_SIM_MEMORY_LIMIT", "1000")
    assert main(["experiment", "dyck1", "--budget", "ci", "--out", str(tmp_path),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "experiment error: dyck1-H2L2k2c4-R-A-seed0: sizes: R-A with H=2, L=2, k=2, c=4 " \
           "has m = 40 and needs about" in err
    assert "lower H, L, k, c or the batch size" in err
    assert not list(tmp_path.glob("*/result.json"))


@pytest.mark.slow  # four processes of a few to 20 s each
@pytest.mark.parametrize("seconds", [3.0, 9.0, 13.0])
def test_ctrl_c_stops_a_sweep_cleanly_and_resume_finishes_it(tmp_path, seconds):
    """SIGINT at several points of `experiment dyck1 --budget ci` (it was a segmentation
    fault in 2 of 5 timings 9-17 s in): exit 130 with what was saved, no crash; --resume
    then finishes the run."""
    import signal
    import subprocess
    import sys
    import time

    argv = [sys.executable, "-m", "rasp_sim", "experiment", "dyck1", "--budget", "ci",
            "--steps", "300", "--out", str(tmp_path), "--no-progress"]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate()
    assert "internal error" not in err and "Traceback" not in err, err
    if child.returncode == 0:  # it finished before the signal: nothing to resume
        return
    assert child.returncode in (130, -signal.SIGINT), err
    assert child.returncode != -signal.SIGSEGV
    resumed = subprocess.run([*argv, "--resume"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((tmp_path / "summary.json").read_text())["rows"][0]["steps"] == 300


@pytest.mark.slow  # compiles and times a few steps (about 20-60 s on a shared machine)
def test_dry_run_prints_the_cost_and_trains_nothing(tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["experiment", "dyck1", "--budget", "ci", "--dry-run", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| dyck1 H=2 L=2 k=2 c=4 | R-A | 1 | 200 | 32 |" in text
    assert "estimated:" in text and "CPU hours for 1 run on this machine" in text
    assert not out.exists()
