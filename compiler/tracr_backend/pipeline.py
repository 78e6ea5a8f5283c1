"""The compile pipeline: tracr's passes with rasp-sim's fixes in between (docs/compiler.md).

1. translate.py: s-op graph -> tracr RASP (static checks first);
2. `rasp_to_graph.extract_rasp_graph`, tracr's;
3. bases.py: own basis inference, which also picks the MLP exactness;
4. `expr_to_craft_graph.add_craft_components_to_rasp_graph`, tracr's, for stock nodes; the
   nodes that get rasp-sim blocks (signed maps, aggregates with rasp-sim defaults) hide
   behind a non-s-op placeholder while it runs, then receive their blocks (blocks.py);
5. allocate.py: own layer allocation (tracr's walks every path of the graph);
6. assemble.py: own assembly to the weight format, and tracr's assembler with its two
   fixes as the oracle.
"""
from __future__ import annotations

import collections
import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import networkx as nx
import numpy as np
from tracr.compiler import expr_to_craft_graph, nodes, rasp_to_graph
from tracr.craft import bases, transformers
from tracr.rasp import rasp

from rasp_sim.core import graph as g
from rasp_sim.base.limits import recursion_limit

from . import blocks
from .allocate import allocate
from .bases import DEFAULT, SCALE, SIGNED, SPAN, VALUE_MAP, annotate_graph, typed
from .continuous import LayerNormPick, NumericDomain, PolyMap, SoftmaxPick, poly_units
from .checks import FRAMES_PER_LEVEL, MAX_DEPTH, Unsupported, check_depth, check_vocab
from .joint import decide_joint_maps
from .simplify import simplify
from .translate import Translation, translate

BOS = "compiler_bos"
PAD = "compiler_pad"
ONE = bases.BasisDirection("one")


@dataclass
class Compiled:
    """Everything a compile produces before export."""

    translation: Translation
    graph: nx.DiGraph
    sink: dict
    craft_model: transformers.SeriesWithResiduals
    vocab: tuple
    max_len: int
    causal: bool
    mlp_exactness: float
    min_len: int = 1
    numeric: NumericDomain | None = None  # real-valued tokens (continuous.py)
    block_nodes: tuple[tuple[str, ...], ...] = ()  # per craft block: the graph nodes it computes
    # maps exact only where a whole-domain proof shows it (joint.py): "Kind 'label' at span"
    proof_required: tuple[str, ...] = ()

    @property
    def categorical_output(self) -> bool:
        return rasp.is_categorical(self.sink[nodes.EXPR])

    @property
    def output_space(self) -> bases.VectorSpaceWithBasis:
        return bases.VectorSpaceWithBasis(self.sink[nodes.OUTPUT_BASIS])

    @property
    def tokens_space(self) -> bases.VectorSpaceWithBasis:
        if self.numeric is not None:  # the token's value, and the BOS flag
            return bases.VectorSpaceWithBasis([bases.BasisDirection(rasp.tokens.label),
                                               bases.BasisDirection(rasp.tokens.label, BOS)])
        return bases.VectorSpaceWithBasis.from_values(
            rasp.tokens.label, [typed(v) for v in self.vocab] + [BOS, PAD])

    @property
    def gated(self) -> bool:
        """Does the model use gated (ReGLU) units, which tracr's model cannot express?"""
        return any(isinstance(block, transformers.MLP) and any(
            d.name.startswith(blocks.REGLU) for d in block.fst.output_space.basis)
            for block in self.craft_model.blocks)

    def block_operations(self) -> list[list[dict[str, str | None]]]:
        """Per layer, the RASP operations its blocks compute: {"op": "Kind 'label'", "at":
        "file:line:col" of the program's node, or None where it has no source}."""
        def described(node_id: str) -> dict[str, str | None]:
            expr = self.graph.nodes[node_id][nodes.EXPR]
            span = expr.annotations[SPAN] if SPAN in expr.annotations else None
            return {"op": f"{type(expr).__name__} '{expr.label}'",
                    "at": None if span is None else str(span)}
        return [[described(node_id) for node_id in layer] for layer in self.block_nodes]

    @property
    def indices_space(self) -> bases.VectorSpaceWithBasis:
        return bases.VectorSpaceWithBasis.from_values(rasp.indices.label, range(self.max_len))


class _Placeholder:
    """Stands in for an expression tracr's craft pass must skip (it is not an s-op)."""

    def __init__(self, expr: rasp.SOp):
        self.expr = expr


def compile_graph(root: g.SOp, vocab: Sequence[Any], max_len: int, *,
                  causal: bool = False, min_len: int = 1,
                  numeric: NumericDomain | None = None, whole_domain: bool = False) -> Compiled:
    """Lower `root` to a craft model over `vocab` (typed as the program's tokens) and
    sequences of length min_len..max_len; with `numeric`, over real-valued tokens (one
    residual direction, written linearly; `vocab` is ignored). `whole_domain`: the caller
    proves the model on every input, so a map that only such a proof can decide
    (joint.py) is compiled and listed in `proof_required` instead of refused."""
    check_depth(root)  # the passes recurse through the graph: deep enough fits the limit
    with recursion_limit(FRAMES_PER_LEVEL * MAX_DEPTH):
        return _lowered(root, vocab, max_len, causal=causal, min_len=min_len,
                        numeric=numeric, whole_domain=whole_domain)


def _lowered(root: g.SOp, vocab: Sequence[Any], max_len: int, *, causal: bool,
             min_len: int, numeric: NumericDomain | None, whole_domain: bool) -> Compiled:
    """compile_graph's passes, on a graph of bounded depth."""
    if numeric is None:
        check_vocab(vocab, max_len)
        if BOS in vocab or PAD in vocab:
            raise Unsupported("vocabulary", f"must not contain the compiler's tokens "
                              f"{BOS!r}, {PAD!r}")
        vocab_values: tuple = tuple(vocab)
    else:
        check_vocab([0.0], max_len)
        min_len, vocab_values = numeric.min_len, ()
    if not 1 <= min_len <= max_len:
        raise Unsupported("min-len", f"must be between 1 and max-len {max_len}, got {min_len}")
    translation = translate(simplify(root), vocab_values, max_len, min_len=min_len,
                            numeric=numeric, causal=causal)
    extracted = _extract_graph(translation.sink)
    graph = extracted.graph
    exactness = annotate_graph(graph, translation.value_sets)
    sink = graph.nodes[extracted.sink[nodes.ID]]
    translation.value_sets.check_output(sink[nodes.EXPR])
    proof_required = decide_joint_maps(translation.value_sets, vocab_values, max_len,
                                       min_len=min_len, causal=causal,
                                       numeric=numeric is not None, whole_domain=whole_domain)
    if rasp.is_categorical(sink[nodes.EXPR]) and not sink[nodes.VALUE_SET]:
        raise Unsupported("the program", "gives no value on any input of the domain (the "
                          "interpreter fails on every one): there is nothing to compile",
                          root.span)

    bos_direction = bases.BasisDirection(rasp.tokens.label, BOS)
    own = [n for n in graph.nodes if _needs_own_block(graph.nodes[n][nodes.EXPR])]
    for node_id in own:
        graph.nodes[node_id][nodes.EXPR] = _Placeholder(graph.nodes[node_id][nodes.EXPR])
    with _unit_vectors_without_identity():
        try:
            expr_to_craft_graph.add_craft_components_to_rasp_graph(
                graph, bos_dir=bos_direction, one_dir=ONE, causal=causal,
                mlp_exactness=exactness)
        finally:
            for node_id in own:
                graph.nodes[node_id][nodes.EXPR] = graph.nodes[node_id][nodes.EXPR].expr
        for node_id in own:
            graph.nodes[node_id][nodes.MODEL_BLOCK] = _own_block(graph, node_id,
                                                                 bos_direction, causal)
        _keep_bos_clean(graph, bos_direction)
        craft_model, block_nodes = allocate(graph)
    return Compiled(translation, graph, extracted.sink, craft_model, vocab_values, max_len,
                    causal, exactness, min_len, numeric,
                    tuple(tuple(ids) for ids in block_nodes), tuple(proof_required))


@contextlib.contextmanager
def _unit_vectors_without_identity() -> Iterator[None]:
    """Within the block, tracr's `vector_from_basis_direction` builds the unit vector of a
    direction as zeros and a 1, not as a row of a fresh identity matrix of the space: the
    same vector, without D x D floats per call (tracr's MLP builders and its
    `combine_in_parallel` ask for one per input direction: 17,000 identities of up to
    thousands of dimensions were 95 of the 103 s of Dyck-1's compile at max-len 13, most
    of it page faults)."""
    original = bases.VectorSpaceWithBasis.vector_from_basis_direction

    def unit_vector(space: bases.VectorSpaceWithBasis,
                    direction: bases.BasisDirection) -> bases.VectorInBasis:
        magnitudes = np.zeros(space.num_dims)
        magnitudes[space.index_by_direction[direction]] = 1.0
        return space.make_vector(magnitudes)

    space_class: Any = bases.VectorSpaceWithBasis
    space_class.vector_from_basis_direction = unit_vector
    try:
        yield
    finally:
        space_class.vector_from_basis_direction = original


def _extract_graph(tip: rasp.SOp) -> rasp_to_graph.ExtractRaspGraphOutput:
    """tracr's `extract_rasp_graph`, expanding each expression once: tracr's breadth-first
    search re-expands an expression for every path that reaches it (131,474 visits for the
    1,000 expressions of U, n = d = 4: most of its compile). The same nodes and edges,
    added in the same order."""
    graph = nx.DiGraph()
    sources: list = []
    queue, expanded = collections.deque([tip]), set()
    graph.add_node(tip.label, **{nodes.ID: tip.label, nodes.EXPR: tip})
    while queue:
        expr = queue.popleft()
        if expr.label in expanded:
            continue
        expanded.add(expr.label)
        for child in expr.children:
            queue.append(child)
            if child.label not in graph:
                graph.add_node(child.label, **{nodes.ID: child.label, nodes.EXPR: child})
            graph.add_edge(child.label, expr.label)
        if not expr.children:
            sources.append(graph.nodes[expr.label])
    return rasp_to_graph.ExtractRaspGraphOutput(graph=graph, sink=graph.nodes[tip.label],
                                                sources=sources)


def _keep_bos_clean(graph: nx.DiGraph, bos_direction: bases.BasisDirection) -> None:
    """Restore the BOS invariant (blocks.py) where a block would write at BOS: maps of a
    numerical s-op (discretising MLPs) are gated, heads writing a default there scrubbed.
    A head whose value no other head reads, directly or through maps (the program's
    output, or an input of maps that make it), keeps what it writes at BOS: an MLP only
    carries it to its own output at BOS, the unembedding drops the BOS position, so the
    scrub's MLP would only cost a layer (an attention-only model stays one; a shift
    followed by a map, as tracr compiles it, stays one layer)."""
    for node_id in graph.nodes:
        node = graph.nodes[node_id]
        expr, block = node[nodes.EXPR], node.get(nodes.MODEL_BLOCK)
        if isinstance(expr, rasp.SelectorWidth):
            node[nodes.MODEL_BLOCK] = blocks.unique_clean_bos_unit(block, expr.label)
        elif isinstance(expr, rasp.Map) and rasp.is_numerical(expr.inner) \
                and isinstance(block, transformers.MLP):
            node[nodes.MODEL_BLOCK] = blocks.gated_at_bos(block, bos_direction, ONE)
        elif isinstance(block, transformers.AttentionHead) and _read_by_a_head(graph, node_id):
            written = blocks.written_at_bos(block, bos_direction)
            if np.any(written != 0):
                node[nodes.MODEL_BLOCK] = blocks.scrubbed(block, written, bos_direction,
                                                          f"_scrub_bos_{expr.label}_")


def _read_by_a_head(graph: nx.DiGraph, node_id: str) -> bool:
    """Whether a head (a select's keys or queries, an aggregate's values) reads node_id's
    s-op, or a map of it, at the BOS key: only plain maps are followed (an MLP writes
    at BOS what it computes from BOS); any other reader counts as a head."""
    stack, seen = list(graph.successors(node_id)), set()
    while stack:
        reader = stack.pop()
        if reader in seen:
            continue
        seen.add(reader)
        if type(graph.nodes[reader][nodes.EXPR]) not in (rasp.Map, rasp.SequenceMap,
                                                         rasp.LinearSequenceMap):
            return True
        stack.extend(graph.successors(reader))
    return False


def _needs_own_block(expr: Any) -> bool:
    if isinstance(expr, (PolyMap, SoftmaxPick, LayerNormPick)):
        return True
    if isinstance(expr, rasp.Map):
        return bool(expr.annotations.get(SIGNED, False)) if SIGNED in expr.annotations else False
    return isinstance(expr, rasp.Aggregate)  # every head is rasp-sim's (blocks.aggregate_head)


def _space(graph: nx.DiGraph, expr: rasp.SOp) -> bases.VectorSpaceWithBasis:
    return bases.VectorSpaceWithBasis(graph.nodes[expr.label][nodes.OUTPUT_BASIS])


def _own_block(graph: nx.DiGraph, node_id: str, bos_direction: bases.BasisDirection,
               causal: bool) -> Any:
    expr = graph.nodes[node_id][nodes.EXPR]
    output = bases.VectorSpaceWithBasis(graph.nodes[node_id][nodes.OUTPUT_BASIS])
    if isinstance(expr, PolyMap):
        units = poly_units(expr, lambda key: _space(graph, expr.leaves[key]).basis[0],
                           None if expr.base is None else expr.base.label, ONE, bos_direction)
        return blocks.reglu_mlp(units, output, expr.label)
    if isinstance(expr, LayerNormPick):
        row = [_space(graph, gather).basis[0] for gather in expr.gathers]
        return blocks.layer_norm_pick(row, expr.slots, rasp.indices.label, output, expr.eps,
                                      expr.label)
    if isinstance(expr, SoftmaxPick):
        select = expr.select
        return blocks.softmax_pick(
            _space(graph, expr.score).basis[0], _space(graph, select.queries),
            _space(graph, select.keys), select.predicate, _space(graph, rasp.indices), output,
            bos_direction, ONE, expr.margin, causal, expr.label)
    if isinstance(expr, rasp.Map):
        return blocks.signed_map_mlp(_space(graph, expr.inner), output, expr.f,
                                     hidden_name=f"_hidden_{expr.label}_")
    select = expr.selector
    # tracr's own default (None for categorical, 0 for numerical) unless rasp-sim's differs
    default = expr.annotations[DEFAULT] if DEFAULT in expr.annotations else expr.default
    return blocks.aggregate_head(
        _space(graph, select.queries), _space(graph, select.keys), _space(graph, expr.sop),
        output, bos_direction, ONE, select.predicate, default, causal,
        numerical=rasp.is_numerical(expr),
        scale=expr.annotations[SCALE] if SCALE in expr.annotations else 1.0,
        value_map=expr.annotations[VALUE_MAP] if VALUE_MAP in expr.annotations else None)
