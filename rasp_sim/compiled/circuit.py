"""The ground-truth circuit of a model (docs/transformer_lens.md, "Ground-truth
circuits"): which node's output each node reads, found in the weights themselves.

Nodes are the token and position embeddings (a numeric-input model's `input_proj` is one
input node, a model without any embedding has `input`, the residual stream it is given), every attention head (block and head index), every MLP and the unembedding,
as circuit-discovery benchmarks split a transformer (ACDC, Conmy et al. 2023; InterpBench,
Gupta et al. 2024). A node writes the residual directions of its output matrix's non-zero
columns (W_O, or W_V where W_O is None; W2 and b2; the embeddings' matrices) and reads those
of its input matrices' non-zero rows (W_Q, W_K, W_V per role; W1 and the gate; the
unembedding). There is an edge A -> B wherever B reads a direction that A writes and A
comes before B (an earlier block, or the embedding): the heads of one block run in
parallel, and an MLP reads the attention block before it. Compiled blocks write disjoint
directions of a residual stream that nothing else changes (tracr's layout), so these edges
are exactly the paths information takes; `check_circuit` (compiled/circuit_check.py)
proves it on the model's domain.

Pure NumPy and networkx: the TransformerLens names (`hook`, `hook_inputs`) come from the
export's layer pairing (compiler/layer_pairs.py) without importing torch.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Mapping, Sequence

import networkx as nx
import numpy as np

from ..base.errors import RaspTypeError
from ..compiler.layer_pairs import block_map, pair_layers
from ..compiler.weights import AttentionBlock, MLPBlock, SparseMatrix, Transformer

NAMES = ("rasp", "transformer_lens")
OUTPUT = "unembed"  # the unembedding's node id under names="rasp"
_LABEL = re.compile(r"'(.*)'$")  # "Aggregate 'reversed_3'" -> reversed_3


def circuit_graph(weights: Transformer, operations: Sequence[Sequence[Mapping[str, Any]]] = (),
                  names: str = "rasp") -> nx.DiGraph:
    """The computational graph of `weights` (module docstring): `operations[i]` lists block
    i's RASP operations as {"op": "Kind 'label'", "at": file:line:col} (the compile
    record's "blocks"; empty for a model without one, e.g. a universal transformer).
    Node ids are short names ("token_embed", "block3.head0", "block1.mlp", "unembed") with
    names="rasp", TransformerLens hook names with names="transformer_lens"."""
    if names not in NAMES:
        raise RaspTypeError(f"circuit: names must be one of {', '.join(NAMES)}, not {names!r}")
    labels = list(weights.residual_labels or ()) or [f"#{i}" for i in range(weights.width)]
    nodes = _nodes(weights, operations, labels)
    graph = nx.DiGraph(residual_labels=tuple(labels), names=names)
    for order, node in enumerate(nodes):
        node["order"] = order
    writers: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for node in nodes:
        graph.add_node(node["id"], **{k: v for k, v in node.items() if k != "id"})
        read: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        for role, columns in node["reads"].items():
            for column in columns:
                for writer in writers[column]:
                    if writer["block"] is None or writer["block"] < node["block"]:
                        read[writer["id"]][role].add(column)
        for sender, roles in read.items():
            by_role = {role: sorted(cs) for role, cs in sorted(roles.items())}
            graph.add_edge(sender, node["id"],
                           columns={role: tuple(cs) for role, cs in by_role.items()},
                           directions=tuple(labels[c]
                                            for c in sorted(set().union(*roles.values()))),
                           reads={role: tuple(labels[c] for c in cs)
                                  for role, cs in by_role.items()})
        for column in node["writes"]:
            writers[column].append(node)
    _mark_dead(graph, nodes[-1]["id"])
    return nx.relabel_nodes(graph, {n["id"]: n["hook_id"] for n in nodes}) \
        if names == "transformer_lens" else graph


def output_node(graph: nx.DiGraph) -> Any:
    """The unembedding's node id (the last node)."""
    return max(graph.nodes, key=lambda n: graph.nodes[n]["order"])


def circuit_json(graph: nx.DiGraph) -> dict[str, Any]:
    """The graph as JSON-able data: nodes with their kind, operations, hooks and whether
    they are dead; edges with the residual directions they carry, per reading role."""
    shown = ("kind", "block", "head", "operations", "hook", "hook_index", "hook_inputs", "dead")
    return {
        "names": graph.graph["names"],
        "nodes": [{"id": node, **{key: graph.nodes[node][key] for key in shown}}
                  for node in sorted(graph.nodes, key=lambda n: graph.nodes[n]["order"])],
        "edges": [{"source": a, "target": b, "directions": list(data["directions"]),
                   "reads": {role: list(d) for role, d in data["reads"].items()},
                   "dead": data["dead"]}
                  for a, b, data in sorted(graph.edges(data=True), key=lambda e: (
                      graph.nodes[e[1]]["order"], graph.nodes[e[0]]["order"]))],
    }


def _mark_dead(graph: nx.DiGraph, output: str) -> None:
    """Mark (not remove) what the output does not depend on: nodes that are not ancestors
    of the unembedding, and the edges into them."""
    alive = nx.ancestors(graph, output) | {output}
    for node, data in graph.nodes(data=True):
        data["dead"] = node not in alive
    for _, target, data in graph.edges(data=True):
        data["dead"] = target not in alive


def _nodes(weights: Transformer, operations: Sequence[Sequence[Mapping[str, Any]]],
           labels: list[str]) -> list[dict[str, Any]]:
    """Every node in the order the model computes them, with the residual columns it
    reads (per role) and writes, its operations and its TransformerLens hooks."""
    layers = pair_layers(weights.layers)
    sublayer = block_map(weights.layers)
    last = f"blocks.{len(layers) - 1}.hook_resid_post" if layers else "unembed.hook_in"
    nodes = []
    for kind, matrix, hook in (("token_embed", weights.token_embed, "hook_embed"),
                               ("input_proj", weights.input_proj, "blocks.0.hook_resid_pre"),
                               ("pos_embed", weights.pos_embed, "hook_pos_embed")):
        if matrix is not None:
            nodes.append(_node(kind, kind, None, None, (), {}, _nonzero(matrix, 1), hook, "[:]",
                               {}))
    if not nodes:  # no embedding at all (a bare universal transformer): the input is the
        # residual stream itself, every direction of it
        nodes.append(_node("input", "input", None, None, (), {}, list(range(weights.width)),
                           "blocks.0.hook_resid_pre", "[:]", {}))
    for index, block in enumerate(weights.layers):
        layer = sublayer[index][0]
        described = [dict(entry) for entry in operations[index]] if index < len(operations) else []
        if isinstance(block, AttentionBlock):
            for h, head in enumerate(block.heads):
                writes = _nonzero(head.w_v if head.w_o is None else head.w_o, 1)
                reads = {role: _nonzero(getattr(head, f"w_{role}"), 0) for role in "qkv"}
                nodes.append(_node(f"block{index}.head{h}", "head", index, h,
                                   _written_operations(described, writes, labels), reads,
                                   writes, f"blocks.{layer}.attn.hook_result", f"[:, :, {h}]",
                                   {role: f"blocks.{layer}.hook_{role}_input" for role in "qkv"}))
        else:
            assert isinstance(block, MLPBlock)
            writes = sorted(set(_nonzero(block.w2, 1)) | set(np.flatnonzero(block.b2).tolist()))
            reads = {"in": _nonzero(block.w1, 0)}
            if block.w_gate is not None:
                reads["gate"] = _nonzero(block.w_gate, 0)
            nodes.append(_node(f"block{index}.mlp", "mlp", index, None,
                               _written_operations(described, writes, labels), reads, writes,
                               f"blocks.{layer}.hook_mlp_out", "[:]",
                               {role: f"blocks.{layer}.hook_mlp_in" for role in reads}))
    nodes.append(_node(OUTPUT, "unembed", len(weights.layers), None, (),
                       {"unembed": _nonzero(weights.unembed, 0)}, [], last, "[:]",
                       {"unembed": last}))
    return nodes


def _node(node_id: str, kind: str, block: int | None, head: int | None,
          operations: Sequence[dict[str, Any]], reads: dict[str, list[int]], writes: list[int],
          hook: str, index: str, hook_inputs: dict[str, str]) -> dict[str, Any]:
    return {"id": node_id, "kind": kind, "block": block, "head": head,
            "operations": list(operations), "reads": reads, "writes": writes, "hook": hook,
            "hook_index": index, "hook_inputs": hook_inputs,
            # InterpBench's node names: the hook, with the head's index where it has one
            "hook_id": hook if index == "[:]" else f"{hook}{index}"}


def _written_operations(operations: list[dict[str, Any]], writes: Sequence[int],
                        labels: Sequence[str]) -> list[dict[str, Any]]:
    """The block's operations this node computes: those whose label names a residual
    direction the node writes (`label` or `label:value`); failing that, those whose
    label starts one (tracr's helper directions, e.g. `x_selector_width_attn_output`);
    failing that, all of the block's (a single-node block computes them all)."""
    written = [labels[column] for column in writes]
    named = [(entry, _LABEL.search(str(entry.get("op", "")))) for entry in operations]
    for matches in (lambda label, direction: direction == label
                    or direction.startswith(label + ":"),
                    lambda label, direction: direction.startswith(label + "_")):
        chosen = [entry for entry, found in named
                  if found and any(matches(found.group(1), d) for d in written)]
        if chosen:
            return chosen
    return operations


def _nonzero(matrix: np.ndarray | SparseMatrix, axis: int) -> list[int]:
    """The indices of the rows (axis 0) or columns (axis 1) holding a non-zero entry; a
    SparseMatrix's duplicate entries are summed first, as `toarray` would."""
    if isinstance(matrix, SparseMatrix):
        keys = matrix.rows * matrix.shape[1] + matrix.cols
        unique, inverse = np.unique(keys, return_inverse=True)
        sums = np.bincount(inverse, weights=matrix.values, minlength=unique.size)
        kept = unique[sums != 0]
        index = kept // matrix.shape[1] if axis == 0 else kept % matrix.shape[1]
        return np.unique(index).tolist()
    return np.flatnonzero(np.any(np.asarray(matrix) != 0, axis=1 - axis)).tolist()
