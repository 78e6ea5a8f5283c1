"""`rasp-sim circuit` (rasp_sim/cli/circuit.py): the summary, the JSON (a file or standard
output) equal to the API's graph, the pictures, the refusals; --check's message when the
interp extra is missing, and (interp) its summary and exit status."""
from __future__ import annotations

import importlib.util
import json
import re
import xml.etree.ElementTree as ElementTree

import pytest

import rasp_sim
from rasp_sim.compiled.circuit import circuit_json
from cli_helpers import run_cli

from .conftest import EXAMPLES

pytest.importorskip("tracr")


@pytest.fixture(scope="module")
def reverse_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("circuit") / "reverse.npz"
    rasp_sim.compile(rasp_sim.load(EXAMPLES / "reverse.rasp"), "reversed", vocab=["a", "b", "c"],
                     max_len=5).save(path)
    return str(path)


def test_the_summary_lists_nodes_and_edges(capsys, reverse_file):
    code, out, err = run_cli(capsys, "circuit", reverse_file)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "7 nodes (0 dead), 11 edges"
    # (tracr's label suffixes count what the process compiled before)
    assert any(re.fullmatch(r"block3\.head0: Aggregate 'reversed_\d+' @ classic\.rasp:10:12 "
                            r"\[blocks\.2\.attn\.hook_result\[:, :, 0\]\]", line)
               for line in lines)
    assert any(re.fullmatch(r"  block3\.head0 -> unembed \(unembed: (reversed_\d+):0 \1:a "
                            r"\1:b \1:c\)", line) for line in lines)


@pytest.mark.parametrize("names", ["rasp", "transformer_lens"])
def test_the_json_is_the_api_graph(capsys, reverse_file, tmp_path, names):
    expected = circuit_json(rasp_sim.load_model(reverse_file).circuit(names=names))
    code, out, _ = run_cli(capsys, "circuit", reverse_file, "--names", names, "-o", "-")
    assert code == 0 and json.loads(out) == expected
    path = tmp_path / "c.json"
    code, out, _ = run_cli(capsys, "circuit", reverse_file, "--names", names, "-o", str(path))
    assert code == 0 and out.strip() == f"wrote {path}"
    assert json.loads(path.read_text()) == expected


@pytest.mark.parametrize("suffix", [".png", ".svg", ".dot"])
def test_the_pictures(capsys, reverse_file, tmp_path, suffix):
    path = tmp_path / f"c{suffix}"
    code, _, _ = run_cli(capsys, "circuit", reverse_file, "-o", str(path))
    assert code == 0
    data = path.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG")
    elif suffix == ".svg":
        assert ElementTree.fromstring(data).tag.endswith("svg") and b"block3.head0" in data
    else:
        text = data.decode()
        assert text.startswith("digraph rasp {") and "Aggregate 'reversed_" in text
        assert text.count("->") == 11


def test_the_cli_refuses_bad_requests(capsys, reverse_file, tmp_path, monkeypatch):
    code, _, err = run_cli(capsys, "circuit", reverse_file, "-o", str(tmp_path / "c.gif"))
    assert code == 2 and ".json, .svg, .png, .pdf, .dot (by the suffix)" in err
    code, _, err = run_cli(capsys, "circuit", reverse_file, "--format", "dot")
    assert code == 2 and "--format is for -o -" in err
    code, _, err = run_cli(capsys, "circuit", str(tmp_path / "missing.npz"))
    assert code == 1 and "missing.npz" in err
    folder = tmp_path / "folder.json"
    folder.mkdir()
    code, _, err = run_cli(capsys, "circuit", reverse_file, "-o", str(folder))
    assert code != 0 and "folder.json" in err and "(by the suffix)" not in err
    code, _, err = run_cli(capsys, "circuit", reverse_file, "--inputs", reverse_file)
    assert code == 2 and "--inputs is for --check" in err
    code, _, err = run_cli(capsys, "circuit", reverse_file, "--drop", "a->b")
    assert code == 2 and "--drop is for --check" in err
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    code, _, err = run_cli(capsys, "circuit", reverse_file, "--check", "zero")
    assert code == 1 and "needs torch: pip install 'rasp-sim[interp]'" in err


@pytest.mark.interp
def test_check_prints_the_proof(capsys, reverse_file, tmp_path):
    pytest.importorskip("transformer_lens")
    code, out, err = run_cli(capsys, "circuit", reverse_file, "--check", "all")
    assert code == 0, err
    assert "circuit of 'reversed': 11 edges kept, 0 ablated, 363 inputs (whole domain)" in out
    assert "  zero: faithful\n    every edge necessary" in out
    assert "  mean: faithful\n    9 edges whose removal changes no output" in out
    path = tmp_path / "c.json"
    code, _, _ = run_cli(capsys, "circuit", reverse_file, "--check", "zero", "-o", str(path))
    check = json.loads(path.read_text())["check"]
    assert code == 0 and check["ok"] and check["faithful"] == {"zero": True}
    assert all(edge["changed_on"] is not None for edge in check["per_edge"])
    inputs = tmp_path / "inputs.txt"
    inputs.write_text('abc\n["c", "a"]\n')
    code, out, _ = run_cli(capsys, "circuit", reverse_file, "--check", "mean", "--inputs",
                           str(inputs))
    assert code == 0 and "11 edges kept, 0 ablated, 2 inputs (given domain)" in out
    code, out, _ = run_cli(capsys, "circuit", reverse_file, "--check", "zero", "--drop",
                           "block2.mlp->block3.head0")
    assert code == 1 and "10 edges kept, 1 ablated" in out
    assert re.search(r"  zero: NOT faithful on [\d,]+ inputs, first \[", out)
    code, _, err = run_cli(capsys, "circuit", reverse_file, "--check", "zero", "--drop",
                           "unembed->block0.head0")
    assert code == 1 and "--drop unembed->block0.head0: not an edge" in err
