"""The results table: one row per (task, setting, backbone), accuracy by group in words a
reader can take in (k-hop: by hop count; Dyck-1: by string length, in buckets of ten)."""
from __future__ import annotations

from rasp_sim.experiments.results import markdown_table, summarise


def fake_result(task: str, seed: int, by_group: dict[str, float], hops: int | None = None) -> dict:
    options = {} if hops is None else {"max_hops": hops}
    accuracy = sum(by_group.values()) / len(by_group)
    return {"finished": True, "m": 40, "parameters": 100, "trainable": 10,
            "majority_baseline": 0.5, "wall_time_s": 10.0, "curves": [],
            "final": {"accuracy": accuracy, "accuracy_by_group": by_group},
            "config": {"task": task, "variant": "S-A", "seed": seed, "steps": 5,
                       "task_options": options,
                       "sizes": {"heads": 2, "layers": 2, "head_dim": 2, "out_dim": 4}}}


def test_groups_read_as_lengths_for_dyck_and_hop_counts_for_khop():
    results = [fake_result("dyck1", seed, {"10": 0.4 + seed / 10, "20": 0.9}) for seed in (0, 2)]
    results += [fake_result("khop", 0, {"0": 1.0, "1": 0.5}, hops=1)]
    table = markdown_table(summarise(results)).splitlines()
    assert "| <=10:50 <=20:90 |" in table[2]  # the mean of 40% and 60%, lengths 1-10
    assert "| 0:100 1:50 |" in table[3]
    assert "max_hops=1" in table[3]


def test_one_seed_has_no_spread_and_several_their_sample_std():
    results = [fake_result("dyck1", seed, {"10": value}) for seed, value in ((0, 0.5), (1, 0.7))]
    results += [fake_result("khop", 0, {"0": 0.8}, hops=1)]
    rows = summarise(results)
    assert abs(rows[0]["accuracy_std"] - 0.1414213562) < 1e-9 and rows[1]["accuracy_std"] is None
    table = markdown_table(rows).splitlines()
    assert "| 60.0 ± 14.1% | 2 |" in table[2]
    assert "| 80.0% | 1 |" in table[3]


def test_an_unreadable_result_is_refused_and_kept(tmp_path):
    import json

    import pytest

    from rasp_sim.experiments.budgets import plan
    from rasp_sim.experiments.results import UnreadableResult, read_result, write_result

    (run,) = plan("dyck1", "ci")
    good = fake_result("dyck1", 0, {"10": 0.5})
    write_result(tmp_path, good)
    assert read_result(tmp_path, run) == good
    text = json.dumps(good)
    forged = {**good, "final": {"accuracy": "high", "accuracy_by_group": {}}}
    for damaged in (text[:len(text) // 2], "\xff\xfe", "[1, 2]", json.dumps(forged),
                    json.dumps({**good, "curves": [{"step": 1}]}), "[" * 100_000):
        data = damaged.encode("utf-8", "surrogateescape")
        (tmp_path / "result.json").write_bytes(data)
        with pytest.raises(UnreadableResult, match=(
                f"resume: {tmp_path / 'result.json'} is unreadable \\(.*\\); remove it to "
                "train this run again, or run without --resume")):
            read_result(tmp_path, run)
        assert (tmp_path / "result.json").read_bytes() == data


def test_a_result_is_bounded_by_the_curve_its_run_can_write(tmp_path):
    from dataclasses import replace

    import pytest

    from rasp_sim.experiments.budgets import plan
    from rasp_sim.experiments.results import UnreadableResult, read_result, result_bytes

    (run,) = plan("dyck1", "ci")
    longer = replace(run, steps=100 * run.steps)
    assert result_bytes(longer) > result_bytes(run)  # more curve points, more room
    with open(tmp_path / "result.json", "wb") as handle:
        handle.truncate(result_bytes(run) + 1)  # sparse: costs no disk
    with pytest.raises(UnreadableResult, match=f"the file has {result_bytes(run) + 1:,} bytes, "
                                               f"above the limit of {result_bytes(run):,}"):
        read_result(tmp_path, run)


def test_unseen_accuracy_pools_the_held_out_lengths_by_their_sizes():
    # Lengths 1-10 (seen in training) do not count; 11-20 and 21-30 pool by sample count:
    # (0.9 * 300 + 0.6 * 100) / 400 = 0.825, and (0.5 * 300 + 1.0 * 100) / 400 = 0.625.
    results = []
    for seed, (a, b) in enumerate(((0.9, 0.6), (0.5, 1.0))):
        result = fake_result("dyck1", seed, {"10": 0.0, "20": a, "30": b})
        result["final"]["group_sizes"] = {"10": 50.0, "20": 300.0, "30": 100.0}
        results.append(result)
    results.append(fake_result("khop", 0, {"0": 0.8}, hops=1))
    rows = summarise(results)
    assert abs(rows[0]["accuracy_unseen_mean"] - (0.825 + 0.625) / 2) < 1e-12
    assert rows[1]["accuracy_unseen_mean"] is None  # k-hop: no held-out strings
    table = markdown_table(rows).splitlines()
    assert "| 72.5% |" in table[2] and "| 0:80 | - |" in table[3]


def test_unseen_accuracy_is_missing_without_group_sizes():
    rows = summarise([fake_result("dyck1", 0, {"10": 0.5, "20": 0.9})])
    assert rows[0]["accuracy_unseen_mean"] is None


def test_a_result_that_cannot_be_written_is_an_error_naming_it(tmp_path):
    # a sweep records it as the run's failure and goes on (outputs.py checks the paths
    # before training; this is a path that changed during it)
    import pytest

    from rasp_sim.experiments.errors import ExperimentError
    from rasp_sim.experiments.results import write_result

    (tmp_path / "run").write_text("")
    with pytest.raises(ExperimentError, match="the run's result could not be written to "
                                              f"{tmp_path / 'run' / 'result.json'}: "):
        write_result(tmp_path / "run", fake_result("dyck1", 0, {"10": 0.5}))
    (tmp_path / "other" / "result.json").mkdir(parents=True)
    with pytest.raises(ExperimentError, match="the run's result could not be written: "
                                              f"{tmp_path / 'other' / 'result.json'} is a "
                                              "folder"):
        write_result(tmp_path / "other", fake_result("dyck1", 0, {"10": 0.5}))
