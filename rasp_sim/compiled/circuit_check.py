"""Proving a circuit (docs/transformer_lens.md, "Ground-truth circuits"): the model's
TransformerLens export (float64) run with every edge outside the circuit ablated must give
the model's decoded output on every input of its domain, and removing any one edge of the
circuit must change it somewhere.

Edge-level ablation, exactly: the export has no LayerNorm, so what a receiver computes
from the residual stream (a head's q, k and v, an MLP's pre-activations, the logits) is
linear in it. Ablating the edge A -> B adds (ablated_A - actual_A) @ W_read(B) to B's
pre-activation, for B alone: actual_A is A's output in the same (ablated) forward pass,
captured at `hook_z` @ W_O[h], `hook_mlp_out`, `hook_embed` and `hook_pos_embed`; the
unembedding's correction goes into the last `hook_resid_post`. The ablated value is 0
("zero"), A's mean over the inputs of the same length at each position ("mean"), or A's
value on another input of the same length, a seeded derangement ("resample"); mean and
resample values come from the unablated model. W_read of an MLP is the weight format's W1
and gate, not the export's: the export folds a gated model's biases into the `one`
direction's rows (compiler/transformer_lens_export.py), and a bias is no edge.

Needs torch and transformer-lens: import it only through `Model.check_circuit`.
"""
from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import networkx as nx
import numpy as np
import torch

from ..base.errors import RaspError, RaspTypeError
from ..compiler.tracr_backend.runtime import (NUMERIC_TOLERANCE, decode, is_numeric_input,
                                              numeric_features, run_weights)
from ..compiler.tracr_backend.validate import domain as sampled_domain
from ..compiler.weights import MLPBlock, as_dense
from ..compiler.forward import embed_features

if TYPE_CHECKING:
    from .model import Model

ABLATIONS = ("zero", "mean", "resample")
IDENTITY = "identity"  # ablated value = actual value: a check of the hooks themselves
_BATCH = 1024  # inputs per forward pass
_SAMPLES = 10_000  # inputs of a domain too large to enumerate (validate.EXHAUSTIVE_LIMIT)

Edge = tuple[str, str]


@dataclass(frozen=True)
class EdgeNecessity:
    """Whether removing one circuit edge changes the circuit's output under one ablation:
    `changed_on` is the first input (in domain order) whose decoded output without the edge
    differs from the circuit's, None if no input's does (the edge is not necessary under
    this ablation). For a faithful circuit the circuit's output is the model's."""

    source: str
    target: str
    ablation: str
    changed_on: list | None


@dataclass(frozen=True)
class CircuitCheck:
    """The result of `Model.check_circuit`: per ablation whether the circuit reproduces
    the decoded output on every input checked (`faithful`), how many inputs it does not
    (`failures`) and the first of them (`first_failure`), and per circuit edge whether
    removing it alone is detected (`per_edge`). `domain` is "whole" (every input of the
    compile record's vocabulary and lengths), "sample" (a seeded sample of a domain too
    large to enumerate) or "given" (the inputs passed)."""

    model: str
    domain: str
    inputs: int
    circuit: tuple[Edge, ...]
    ablated: tuple[Edge, ...]
    faithful: Mapping[str, bool]
    failures: Mapping[str, int]
    first_failure: Mapping[str, list | None]
    per_edge: tuple[EdgeNecessity, ...] = ()
    seconds: float = 0.0
    seed: int = 0

    @property
    def ok(self) -> bool:
        """Faithful under every ablation checked."""
        return all(self.faithful.values())

    def unnecessary(self, ablation: str) -> list[Edge]:
        """The circuit edges whose removal changes no output under `ablation`."""
        return [(e.source, e.target) for e in self.per_edge
                if e.ablation == ablation and e.changed_on is None]

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["circuit"] = [list(edge) for edge in self.circuit]
        record["ablated"] = [list(edge) for edge in self.ablated]
        record["ok"] = self.ok
        return record

    def summary(self) -> str:
        """A few lines for the command line: the domain, per ablation faithful or the
        first input where it is not, and the edges removing which changes nothing."""
        lines = [f"circuit of {self.model!r}: {len(self.circuit)} edges kept, "
                 f"{len(self.ablated)} ablated, {self.inputs:,} inputs ({self.domain} domain), "
                 f"{self.seconds:.1f} s"]
        for ablation, faithful in self.faithful.items():
            verdict = ("faithful" if faithful else
                       f"NOT faithful on {self.failures[ablation]:,} inputs, first "
                       f"{self.first_failure[ablation]!r}")
            lines.append(f"  {ablation}: {verdict}")
            if any(e.ablation == ablation for e in self.per_edge):
                idle = self.unnecessary(ablation)
                lines.append(f"    every edge necessary" if not idle else
                             f"    {len(idle)} edges whose removal changes no output: "
                             + ", ".join(f"{a} -> {b}" for a, b in idle))
        return "\n".join(lines)


def check_circuit(model: "Model", edges: Iterable[Edge] | None = None, *,
                  ablations: Sequence[str] = ABLATIONS, inputs: Sequence[Any] | None = None,
                  seed: int = 0, per_edge: bool = True, names: str = "rasp") -> CircuitCheck:
    """`Model.check_circuit` (module docstring)."""
    started = time.perf_counter()
    ablations = _ablations(ablations)
    graph = model.circuit(names)
    live = [(a, b) for a, b, dead in graph.edges(data="dead") if not dead]
    circuit = _edges(graph, live if edges is None else edges)
    kept = set(circuit)
    ablated = [edge for edge in _ordered(graph, graph.edges) if edge not in kept]
    runner = Ablation(model, graph, inputs, seed)
    faithful, failures, first = {}, {}, {}
    necessity = []
    for ablation in ablations:
        outputs = dict(runner.outputs(ablated, ablation))  # the circuit's own
        changed = sorted(i for i, out in outputs.items()
                         if not runner.same(runner.expected[i], out))
        failures[ablation] = len(changed)
        faithful[ablation] = not changed
        first[ablation] = runner.inputs[changed[0]] if changed else None
        if per_edge:
            for edge in circuit:
                hit = runner.changed(ablated + [edge], ablation, first_only=True,
                                     against=outputs)
                necessity.append(EdgeNecessity(edge[0], edge[1], ablation,
                                               runner.inputs[hit[0]] if hit else None))
    return CircuitCheck(str(model.info.get("name")), runner.domain, len(runner.inputs),
                        tuple(circuit), tuple(ablated), faithful, failures, first,
                        tuple(necessity), round(time.perf_counter() - started, 3), seed)


def _ablations(ablations: Sequence[str]) -> list[str]:
    chosen = [ablations] if isinstance(ablations, str) else list(ablations)
    unknown = [a for a in chosen if a not in ABLATIONS]
    if not chosen or unknown:
        raise RaspTypeError(f"check_circuit: ablations must be some of {', '.join(ABLATIONS)}, "
                            f"not {unknown or chosen!r}")
    return chosen


def _edges(graph: nx.DiGraph, edges: Iterable[Any]) -> list[Edge]:
    """The circuit's edges, each checked to be an edge of the graph, in graph order."""
    chosen = set()
    for edge in edges:
        if not (isinstance(edge, (tuple, list)) and len(edge) == 2
                and graph.has_edge(*edge)):
            raise RaspTypeError(f"check_circuit: {edge!r} is not an edge (sender, receiver) of "
                                f"the model's circuit graph (Model.circuit(names="
                                f"{graph.graph['names']!r}))")
        chosen.add((edge[0], edge[1]))
    return _ordered(graph, chosen)


def _ordered(graph: nx.DiGraph, edges: Iterable[Edge]) -> list[Edge]:
    order = graph.nodes(data="order")
    return sorted(((a, b) for a, b in edges), key=lambda e: (order[e[1]], order[e[0]]))


@dataclass
class _Group:
    """The inputs of one length: their positions in `Ablation.inputs`, the export's
    keyword arguments per batch, the unablated senders' outputs (written columns only),
    and the resample source of each."""

    members: list[int]
    batches: list[dict[str, Any]]
    clean: dict[str, torch.Tensor] = field(default_factory=dict)
    resample: np.ndarray | None = None


class Ablation:
    """The TransformerLens model of `model` run on its domain (or `inputs`) with edges of
    its circuit graph ablated (module docstring)."""

    def __init__(self, model: "Model", graph: nx.DiGraph, inputs: Sequence[Any] | None,
                 seed: int = 0) -> None:
        self.model, self.graph = model, graph
        self.hooked = model.to_transformer_lens()
        self.weights = model.weights
        self.inputs, self.domain = _inputs(model, inputs, seed)
        self.numeric_output = (self.weights.output_encoder is None
                               or self.weights.output_encoder.values is None)
        # the input nodes' ids by kind (token_embed, pos_embed, input_proj)
        self.embeds = {data["kind"]: node for node, data in graph.nodes(data=True)
                       if data["block"] is None}
        self._senders()
        self._receivers()
        rng = np.random.default_rng(seed)
        self.groups = []
        self.expected: dict[int, list] = {}  # input index -> the model's decoded output
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, sequence in enumerate(self.inputs):
            by_length[len(sequence)].append(i)
        for length in sorted(by_length):
            members = by_length[length]
            group = _Group(members, [
                self.hooked.input([self.inputs[i] for i in members[s:s + _BATCH]])
                for s in range(0, len(members), _BATCH)])
            expected = run_weights(self.weights, [self.inputs[i] for i in members])
            self.expected.update(zip(members, expected))
            group.resample = _another(rng, len(members))
            clean: dict[str, list[torch.Tensor]] = defaultdict(list)
            for b, kw in enumerate(group.batches):
                actual = self._run(group, b, kw, [], None)[1]
                for node, value in actual.items():
                    clean[node].append(value)
            group.clean = {node: torch.cat(values) for node, values in clean.items()}
            self.groups.append(group)

    def _senders(self) -> None:
        """Each sender's written columns, and for heads their layer, index and W_O."""
        self.writes = {node: torch.as_tensor(data["writes"], dtype=torch.long)
                       for node, data in self.graph.nodes(data=True) if data["kind"] != "unembed"}
        self.heads_of: dict[int, list[tuple[str, int, torch.Tensor]]] = defaultdict(list)
        self.mlp_of: dict[int, str] = {}
        for node, data in self.graph.nodes(data=True):
            if data["kind"] in ("head", "mlp"):
                layer = int(data["hook"].split(".")[1])
                if data["kind"] == "head":
                    w_o = self.hooked.blocks[layer].attn.W_O[data["head"]].detach()
                    self.heads_of[layer].append((node, data["head"], w_o[:, self.writes[node]]))
                else:
                    self.mlp_of[layer] = node

    def _receivers(self) -> None:
        """Per edge, the read matrix of each role it reaches: the rows of the edge's
        columns, in the TransformerLens hook's layout, and where its columns sit among
        the sender's written columns."""
        self.reads: dict[Edge, list[tuple[str, torch.Tensor, torch.Tensor]]] = {}
        dtype = self.hooked.cfg.dtype
        for a, b, data in self.graph.edges(data=True):
            target = self.graph.nodes[b]
            written = self.graph.nodes[a]["writes"]
            roles = []
            for role, rows in data["columns"].items():
                where = torch.as_tensor(np.searchsorted(written, rows), dtype=torch.long)
                matrix = torch.as_tensor(self._read_matrix(target, role)[list(rows)], dtype=dtype)
                roles.append((role, where, matrix))
            self.reads[(a, b)] = roles

    def _read_matrix(self, target: Mapping[str, Any], role: str) -> np.ndarray:
        """W_read of a receiver's role as its hook sees it: (D, d_head) for q, k, v; the
        weight format's W1 or gate padded to d_mlp for an MLP; the identity for the
        unembedding (its correction goes into the residual stream)."""
        if target["kind"] == "unembed":
            return np.eye(self.weights.width)
        if target["kind"] == "head":
            layer = int(target["hook"].split(".")[1])
            attn = self.hooked.blocks[layer].attn
            w = {"q": attn.W_Q, "k": attn.W_K, "v": attn.W_V}[role][target["head"]]
            return w.detach().double().cpu().numpy()
        block = self.weights.layers[target["block"]]
        assert isinstance(block, MLPBlock)
        matrix = block.w1 if role == "in" else block.w_gate
        assert matrix is not None  # a "gate" role exists only where the block has one
        w = as_dense(matrix)
        padded = np.zeros((w.shape[0], self.hooked.cfg.d_mlp))
        padded[:, :w.shape[1]] = w
        return padded

    def outputs(self, ablated: Sequence[Edge], ablation: str) -> Iterator[tuple[int, list]]:
        """(input index, decoded output) of every input, group by group, with `ablated`
        edges ablated by `ablation` ("zero", "mean", "resample" or "identity"); lazily, a
        batch at a time."""
        for group in self.groups:
            replacement = self._replacement(group, ablation)
            for b, kw in enumerate(group.batches):
                logits = self._run(group, b, kw, ablated, replacement)[0]
                outputs = decode(self.weights, logits.double().cpu().numpy())
                for j, out in enumerate(outputs):
                    yield group.members[b * _BATCH + j], out

    def changed(self, ablated: Sequence[Edge], ablation: str, first_only: bool = False,
                against: Mapping[int, list] | None = None) -> list[int]:
        """The inputs (indices of `self.inputs`, in order) whose decoded output with
        `ablated` edges ablated differs from `against` (default: the model's own output);
        with `first_only`, at most the first."""
        reference = self.expected if against is None else against
        found = []
        for i, out in self.outputs(ablated, ablation):
            if not self.same(reference[i], out):
                found.append(i)
                if first_only:
                    break
        return sorted(found)

    def logits(self, ablated: Sequence[Edge], ablation: str) -> Iterator[np.ndarray]:
        """The logits of every batch, group by group, with `ablated` edges ablated."""
        for group in self.groups:
            replacement = self._replacement(group, ablation)
            for b, kw in enumerate(group.batches):
                yield self._run(group, b, kw, ablated, replacement)[0].double().cpu().numpy()

    def same(self, expected: list[Any], out: list[Any]) -> bool:
        """Whether two decoded outputs agree: exactly, or for numbers to validation's
        tolerance."""
        if not self.numeric_output:
            return expected == out
        return all(math.isfinite(y) and abs(x - y) <= NUMERIC_TOLERANCE * max(1.0, abs(x))
                   for x, y in zip(expected, out))

    def _replacement(self, group: _Group, ablation: str) -> dict[str, torch.Tensor] | None:
        """Each sender's ablated value over the whole group (broadcast over the batch
        where it is one value per position); None for "identity"."""
        if ablation == IDENTITY:
            return None
        if ablation == "zero":
            return {node: torch.zeros_like(value[:1]) for node, value in group.clean.items()}
        if ablation == "mean":
            return {node: value.mean(dim=0, keepdim=True) for node, value in group.clean.items()}
        order = torch.as_tensor(group.resample, dtype=torch.long)
        return {node: value[order] for node, value in group.clean.items()}

    def _run(self, group: _Group, batch: int, kw: dict[str, Any], ablated: Sequence[Edge],
             replacement: dict[str, torch.Tensor] | None
             ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One forward pass of batch `batch` of `group` with `ablated` edges ablated: the
        logits, and every sender's actual output in this pass (written columns)."""
        actual: dict[str, torch.Tensor] = {}
        rows = slice(batch * _BATCH, (batch + 1) * _BATCH)
        if is_numeric_input(self.weights):
            actual.update(self._numeric_inputs(group, rows))
        into: dict[str, list[str]] = defaultdict(list)
        for a, b in ablated:
            into[b].append(a)

        def correction(receiver: str, role: str) -> torch.Tensor | float:
            total: torch.Tensor | float = 0.0
            for sender in into[receiver]:
                value = actual[sender] if replacement is None else replacement[sender]
                value = value if value.shape[0] == 1 else value[rows]
                delta = value - actual[sender]
                for r, where, matrix in self.reads[(sender, receiver)]:
                    if r == role:
                        total = total + delta[..., where] @ matrix
            return total

        def capture(node: str) -> Any:
            def hook(x: torch.Tensor, hook: Any) -> None:
                actual[node] = x[..., self.writes[node]]
            return hook

        def capture_heads(layer: int) -> Any:
            def hook(z: torch.Tensor, hook: Any) -> None:
                for node, h, w_o in self.heads_of[layer]:
                    actual[node] = z[:, :, h] @ w_o
            return hook

        def correct_head(layer: int, role: str) -> Any:
            def hook(x: torch.Tensor, hook: Any) -> torch.Tensor:
                x = x.clone()
                for node, h, _ in self.heads_of[layer]:
                    x[:, :, h] = x[:, :, h] + correction(node, role)
                return x
            return hook

        def correct(node: str, role: str) -> Any:
            def hook(x: torch.Tensor, hook: Any) -> torch.Tensor:
                return x + correction(node, role)
            return hook

        hooks: list[tuple[str, Any]] = []
        for kind, name in (("token_embed", "hook_embed"), ("pos_embed", "hook_pos_embed")):
            if kind in self.embeds and not is_numeric_input(self.weights):
                hooks.append((name, capture(self.embeds[kind])))
        targets = set(into)
        for layer in sorted(set(self.heads_of) | set(self.mlp_of)):
            if self.heads_of[layer]:
                if any(node in targets for node, _, _ in self.heads_of[layer]):
                    hooks += [(f"blocks.{layer}.attn.hook_{role}", correct_head(layer, role))
                              for role in "qkv"]
                hooks.append((f"blocks.{layer}.attn.hook_z", capture_heads(layer)))
            mlp = self.mlp_of.get(layer)
            if mlp is not None:
                if mlp in targets:
                    for role, name in (("in", "hook_pre"), ("gate", "hook_pre_linear")):
                        if role in self.graph.nodes[mlp]["hook_inputs"]:
                            hooks.append((f"blocks.{layer}.mlp.{name}", correct(mlp, role)))
                hooks.append((f"blocks.{layer}.hook_mlp_out", capture(mlp)))
        output = [n for n, kind in self.graph.nodes(data="kind") if kind == "unembed"][0]
        if output in targets:
            hooks.append((self.graph.nodes[output]["hook"], correct(output, "unembed")))
        with torch.inference_mode():
            logits = self.hooked.run_with_hooks(**kw, fwd_hooks=hooks)
        return logits, actual

    def _numeric_inputs(self, group: _Group, rows: slice) -> dict[str, torch.Tensor]:
        """A numeric-input model's input nodes (its input is the embedded residual, given
        at layer 0): the projected features and the position embedding, apart."""
        features = np.array([numeric_features(self.weights, self.inputs[i])
                             for i in group.members[rows]])[..., None]
        residual = embed_features(self.weights, features)
        values = {}
        if self.weights.pos_embed is not None:
            positions = as_dense(self.weights.pos_embed)[:features.shape[1]]
            values["pos_embed"] = np.broadcast_to(positions, residual.shape)
            residual = residual - positions
        values["input_proj"] = residual
        dtype = self.hooked.cfg.dtype
        return {self.embeds[kind]: torch.as_tensor(np.ascontiguousarray(value), dtype=dtype)[
                    ..., self.writes[self.embeds[kind]]] for kind, value in values.items()
                if kind in self.embeds}


def _another(rng: np.random.Generator, n: int) -> np.ndarray:
    """For each of n inputs the index of another one (itself only when n is 1): each
    input takes the next one's value in a random cyclic order, so none keeps its own."""
    order = rng.permutation(n)
    source = np.empty(n, dtype=np.int64)
    source[order] = np.roll(order, -1)
    return source


def _inputs(model: "Model", inputs: Sequence[Any] | None, seed: int
            ) -> tuple[list[list[Any]], str]:
    """The inputs to check, and which: the whole domain of the compile record ("whole"),
    a seeded sample of one too large to enumerate ("sample"), or `inputs` ("given")."""
    if inputs is not None:
        if isinstance(inputs, (str, bytes)) or not inputs:
            raise RaspTypeError("check_circuit: inputs must be a non-empty list of inputs")
        return [list(x) for x in inputs], "given"
    info = model.info
    if is_numeric_input(model.weights) or not info.get("vocab"):
        raise RaspError("check_circuit: a numeric-input model has no finite domain to "
                        "enumerate: give a sample (inputs=[...]; rasp-sim circuit --inputs "
                        "FILE)")
    vocab = list(info["vocab"])
    mode, _, batches = sampled_domain(len(vocab), int(info["max_len"]), _SAMPLES, seed,
                                      int(info.get("min_len", 1)))
    rows = [[vocab[i] for i in row] for batch in batches for row in batch.tolist()]
    return rows, "whole" if mode == "exhaustive" else "sample"
