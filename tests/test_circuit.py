"""`Model.circuit()` (rasp_sim/compiled/circuit.py): the ground-truth graph read from the
weights. Checked against the weights of compiled programs (every edge's directions are
written by its sender and read by its receiver, and no read of a written direction is
missing) and against a hand-made Transformer whose graph is known. NumPy only: building
the graph imports no torch (the faithfulness check, tests/interp/test_circuit_check.py,
needs it)."""
from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest

import rasp_sim
from rasp_sim.base.errors import RaspTypeError
from rasp_sim.compiled.circuit import circuit_graph, circuit_json
from rasp_sim.compiled.model import Model
from rasp_sim.compiler.weights import (AttentionBlock, AttentionHead, MLPBlock, SparseMatrix,
                                       Transformer, as_dense)
from heavy_imports import heavy_modules_after

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "compile"


@functools.cache
def compiled(file: str, name: str, vocab: str, max_len: int) -> Model:
    return rasp_sim.compile(rasp_sim.load(EXAMPLES / file), name, vocab=vocab.split(","),
                            max_len=max_len)


def written(model: Model, node: dict) -> set[str]:
    """The residual labels a node's weights write (non-zero output columns)."""
    labels = model.residual_labels
    w = model.weights
    if node["kind"] == "unembed":
        return set()
    if node["kind"] in ("token_embed", "pos_embed", "input_proj"):
        matrix = as_dense(getattr(w, node["kind"]))
    elif node["kind"] == "head":
        head = w.layers[node["block"]].heads[node["head"]]
        matrix = as_dense(head.w_v if head.w_o is None else head.w_o)
    else:
        block = w.layers[node["block"]]
        matrix = np.vstack([as_dense(block.w2), block.b2])
    return {labels[c] for c in np.flatnonzero(np.any(matrix != 0, axis=0))}


def read(model: Model, node: dict) -> dict[str, set[str]]:
    """Per role, the residual labels a node's weights read (non-zero input rows)."""
    labels, w = model.residual_labels, model.weights
    if node["kind"] == "unembed":
        matrices = {"unembed": w.unembed}
    elif node["kind"] == "head":
        head = w.layers[node["block"]].heads[node["head"]]
        matrices = {role: getattr(head, f"w_{role}") for role in "qkv"}
    elif node["kind"] == "mlp":
        block = w.layers[node["block"]]
        matrices = {"in": block.w1, **({"gate": block.w_gate} if block.gated else {})}
    else:
        return {}
    return {role: {labels[r] for r in np.flatnonzero(np.any(as_dense(m) != 0, axis=1))}
            for role, m in matrices.items()}


PROGRAMS = [("reverse.rasp", "reversed", "a,b,c", 5), ("sort.rasp", "sorted", "0,1,2,3", 5),
            ("histogram.rasp", "hist", "a,b,c", 5)]


@pytest.mark.parametrize("file,name,vocab,max_len", PROGRAMS, ids=[p[1] for p in PROGRAMS])
def test_edges_are_the_weights_reads_of_earlier_writes(file, name, vocab, max_len):
    model = compiled(file, name, vocab, max_len)
    graph = model.circuit()
    nodes = sorted(graph.nodes(data=True), key=lambda n: n[1]["order"])
    assert [d["kind"] for _, d in nodes][-1] == "unembed"
    assert sum(d["kind"] in ("head", "mlp") for _, d in nodes) == sum(
        len(b.heads) if isinstance(b, AttentionBlock) else 1 for b in model.weights.layers)
    for receiver, r in nodes:
        reads = read(model, r)
        for sender, s in nodes:
            earlier = s["block"] is None or (r["block"] is not None and s["block"] < r["block"])
            common = {role: reads[role] & written(model, s) for role in reads}
            expected = {role: d for role, d in common.items() if d} if earlier else {}
            if expected:
                data = graph.edges[sender, receiver]
                assert {role: set(d) for role, d in data["reads"].items()} == expected
                assert set(data["directions"]) == set().union(*expected.values())
            else:
                assert not graph.has_edge(sender, receiver), (sender, receiver)
    # every head and MLP is labelled with the operation whose directions it writes
    for _, data in nodes:
        if data["kind"] in ("head", "mlp"):
            assert data["operations"], data
            ops = model.layers[data["block"]].operations
            assert {o["op"] for o in data["operations"]} <= {o.op for o in ops}


def test_reverse_graph_and_hooks():
    graph = compiled("reverse.rasp", "reversed", "a,b,c", 5).circuit()
    assert graph.number_of_nodes() == 7 and graph.number_of_edges() == 11
    head = graph.nodes["block3.head0"]
    # tracr numbers labels with a process-wide counter: the suffix depends on what the
    # process compiled before
    assert re.fullmatch(r"Aggregate 'reversed_\d+'", head["operations"][0]["op"])
    assert head["operations"][0]["at"].endswith("classic.rasp:10:12")
    assert (head["hook"], head["hook_index"]) == ("blocks.2.attn.hook_result", "[:, :, 0]")
    assert head["hook_inputs"]["q"] == "blocks.2.hook_q_input"
    assert graph.nodes["block1.mlp"]["hook"] == "blocks.0.hook_mlp_out"
    assert graph.nodes["unembed"]["hook"] == "blocks.2.hook_resid_post"
    assert list(graph.predecessors("unembed")) == ["block3.head0"]
    (reads,) = graph.edges["block2.mlp", "block3.head0"]["reads"].items()
    assert reads[0] == "q" and [d.split(":")[1] for d in reads[1]] == ["1", "2", "3", "4", "5"]
    assert all(re.fullmatch(r"map_\d+:\d", d) for d in reads[1])  # length - indices - 1
    named = rasp_sim.compile(rasp_sim.load(EXAMPLES / "reverse.rasp"), "reversed",
                             vocab=["a", "b", "c"], max_len=5).circuit(names="transformer_lens")
    assert sorted(named.nodes) == sorted(
        ["hook_embed", "hook_pos_embed", "blocks.0.attn.hook_result[:, :, 0]",
         "blocks.0.hook_mlp_out", "blocks.1.hook_mlp_out", "blocks.2.attn.hook_result[:, :, 0]",
         "blocks.2.hook_resid_post"])
    assert named.has_edge("blocks.1.hook_mlp_out", "blocks.2.attn.hook_result[:, :, 0]")


def tiny() -> Transformer:
    """Directions a, b, c, d, e: the token embedding writes a, the position embedding b;
    block 0 has two heads, head 0 reads a (q, k) and writes c, head 1 reads b (v) and
    writes d, with W_O None; block 1, an MLP, reads c and d and writes e; block 2, a
    head, reads a and writes nothing the unembedding reads (dead); the unembedding reads
    e. Head 1's W_V is sparse."""
    def unit(rows: list[int], cols: list[int], shape: tuple[int, int]) -> np.ndarray:
        m = np.zeros(shape)
        m[rows, cols] = 1.0
        return m

    head0 = AttentionHead(unit([0], [0], (5, 1)), unit([0], [0], (5, 1)), unit([0], [0], (5, 1)),
                          unit([0], [2], (1, 5)))
    head1 = AttentionHead(np.zeros((5, 1)), np.zeros((5, 1)),
                          SparseMatrix.ones((5, 5), [1], [3]))
    mlp = MLPBlock(unit([2, 3], [0, 1], (5, 2)), np.zeros(2), unit([0, 1], [4, 4], (2, 5)),
                   np.zeros(5))
    dead = AttentionHead(unit([0], [0], (5, 1)), unit([0], [0], (5, 1)), unit([0], [0], (5, 1)),
                         unit([0], [1], (1, 5)))
    return Transformer((AttentionBlock((head0, head1)), mlp, AttentionBlock((dead,))),
                       unembed=unit([4], [0], (5, 1)), token_embed=unit([0, 1], [0, 0], (2, 5)),
                       pos_embed=unit([0, 1, 2], [1, 1, 1], (3, 5)),
                       residual_labels=("a", "b", "c", "d", "e"))


def test_hand_made_transformer_has_its_known_graph():
    graph = circuit_graph(tiny())
    assert {(a, b): d["reads"] for a, b, d in graph.edges(data=True)} == {
        ("token_embed", "block0.head0"): {"k": ("a",), "q": ("a",), "v": ("a",)},
        ("pos_embed", "block0.head1"): {"v": ("b",)},
        ("block0.head0", "block1.mlp"): {"in": ("c",)},
        ("block0.head1", "block1.mlp"): {"in": ("d",)},
        ("block1.mlp", "unembed"): {"unembed": ("e",)},
        ("token_embed", "block2.head0"): {"k": ("a",), "q": ("a",), "v": ("a",)},
    }
    assert not graph.has_edge("block0.head0", "block0.head1")  # one block's heads: parallel
    dead = {n for n, d in graph.nodes(data="dead") if d}
    assert dead == {"block2.head0"}  # it writes b, which only earlier nodes read
    assert graph.edges["token_embed", "block2.head0"]["dead"]
    assert not graph.edges["token_embed", "block0.head0"]["dead"]
    # no operations without a compile record; TransformerLens layers: (0, 1), (2, -)
    assert all(d["operations"] == [] for _, d in graph.nodes(data=True))
    assert graph.nodes["block2.head0"]["hook"] == "blocks.1.attn.hook_result"
    assert graph.nodes["unembed"]["hook"] == "blocks.1.hook_resid_post"
    data = circuit_json(graph)
    assert [n["id"] for n in data["nodes"]][-1] == "unembed"
    assert {"source": "block1.mlp", "target": "unembed", "directions": ["e"],
            "reads": {"unembed": ["e"]}, "dead": False} in data["edges"]


def test_names_are_checked():
    with pytest.raises(RaspTypeError, match="names must be one of rasp, transformer_lens"):
        circuit_graph(tiny(), names="acdc")
    with pytest.raises(RaspTypeError, match="circuit: names must be a str"):
        Model(tiny()).circuit(names=3)  # type: ignore[arg-type]


def test_graph_imports_no_torch():
    statement = ("from rasp_sim.compiled.model import Model; from test_circuit import tiny; "
                 "Model(tiny()).circuit(names='transformer_lens')")
    assert heavy_modules_after(statement, Path(__file__).resolve().parent,
                               ("torch", "transformer_lens")) == []


def test_a_universal_transformer_without_embedding_reads_its_input():
    from rasp_sim.compiler.universal.paths import Shape
    from rasp_sim.compiler.universal.sparse import build_sparse

    ut = build_sparse(Shape(dim=4, head_dim=4, out_dim=4, heads=2, layers=3))  # sparse weights
    graph = Model(ut).circuit()
    assert graph.nodes["input"]["writes"] == list(range(ut.width))
    assert all(d["operations"] == [] for _, d in graph.nodes(data=True))
    assert graph.number_of_nodes() == 1 + 6 + 1 and not any(d for _, d in graph.nodes(data="dead"))
    for a, b, data in graph.edges(data=True):  # each edge's columns: written and read
        for role, columns in data["columns"].items():
            assert set(columns) <= (set(graph.nodes[a]["writes"])
                                    & set(graph.nodes[b]["reads"][role]))
    assert {a for a, _ in graph.in_edges("block0.head0")} == {"input"}
