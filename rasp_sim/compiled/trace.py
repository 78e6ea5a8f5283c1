"""A compiled model's computation on one input, laid open (docs/python.md, `rasp-sim
trace`): the counterpart of tracr's `model.apply(...)` output.

`trace(model, input)` runs the weight format's own forward functions (compiler/forward.py)
block by block and keeps what they compute: the residual stream after the embedding and
after every block, each head's attention pattern, each MLP's hidden activations, the
output logits and the decoded output. Every entry is labelled with the block's RASP
operations and their source locations (the compile record), and the residual directions
with tracr's labels (`label:value` for a categorical s-op's value, `label` for a
numerical s-op), so `Trace.sop_values` reads any s-op's value off the stream.
NumPy only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..base.api_arguments import integer, text
from ..compiler.forward import (apply_block, block_input, embed_features, embed_tokens,
                               head_pattern, mlp_hidden, readout)
from ..compiler.tracr_backend.runtime import (as_program_types, decode, is_numeric_input,
                                             numeric_features, token_ids)
from ..compiler.weights import AttentionBlock
from ..base.errors import RaspNameError
from ..base.renderers import renderer

if TYPE_CHECKING:
    from .model import Model, Operation

BOS_LABEL = "BOS"  # position 0 of every compiled model's input (docs/compiler.md)


@dataclass(frozen=True, eq=False)
class Residual:
    """The residual stream (positions x width) after `block` (None: after the embedding)."""

    block: int | None
    operations: tuple["Operation", ...]
    values: np.ndarray


@dataclass(frozen=True, eq=False)
class HeadPattern:
    """Head `head` of attention block `block`: pattern[q, k] is how much query position q
    attends to key position k (rows sum to 1)."""

    block: int
    head: int
    operations: tuple["Operation", ...]
    pattern: np.ndarray


@dataclass(frozen=True, eq=False)
class MLPActivations:
    """MLP block `block`'s hidden activations (positions x hidden units), gate applied."""

    block: int
    operations: tuple["Operation", ...]
    hidden: np.ndarray


@dataclass(frozen=True, eq=False)
class Trace:
    """What a compiled model computes on one input. Position 0 is BOS; `positions` names
    every position, `residual_labels` every residual direction."""

    input: tuple
    positions: tuple[str, ...]
    residual_labels: tuple[str, ...]
    residuals: tuple[Residual, ...]  # [0] after the embedding, [i + 1] after block i
    attention: tuple[HeadPattern, ...]  # every head of every attention block, in order
    mlps: tuple[MLPActivations, ...]  # every MLP block, in order
    logits: np.ndarray  # positions x output columns
    output: list  # decoded as the program's values (BOS dropped)

    @property
    def sops(self) -> tuple[str, ...]:
        """The labels of the s-ops that have residual directions, in residual order."""
        return tuple(dict.fromkeys(label.split(":", 1)[0] for label in self.residual_labels))

    def sop_values(self, label: str, after: int | None = None) -> list:
        """The value of s-op `label` at every position but BOS, read off the residual
        stream after block `after` (default: the last): for a categorical s-op the value
        text of its one direction that holds 1 (None where no direction, or several, do),
        for a numerical s-op the number in its direction."""
        text("sop_values", label, "label")
        if after is not None:  # block indices: residuals[0] is the embedding's stream
            integer("sop_values", after, "after", 0, len(self.residuals) - 2)
        stream = self.residuals[-1 if after is None else after + 1].values[1:]
        columns = [i for i, name in enumerate(self.residual_labels)
                   if name == label or name.startswith(label + ":")]
        if not columns:
            raise RaspNameError(f"no residual direction belongs to an s-op '{label}' "
                                f"(the model's s-ops: {', '.join(self.sops)})")
        if len(columns) == 1 and ":" not in self.residual_labels[columns[0]]:
            return stream[:, columns[0]].tolist()
        values = [self.residual_labels[i].split(":", 1)[1] for i in columns]
        return [_one_hot_value(row, values) for row in stream[:, columns]]

    def plot(self) -> Any:
        """A matplotlib figure: the residual stream after the last block and every
        attention pattern, as labelled heatmaps (rasp_sim/pictures/trace_plot.py). Jupyter
        shows it as a PNG when it is a cell's result, without pyplot or `%matplotlib`."""
        trace_figure = renderer("trace_plot", "trace_figure")

        return trace_figure(self)

    def _repr_svg_(self) -> str:
        """Jupyter's rendering: the `plot()` figure as SVG text."""
        trace_svg = renderer("trace_plot", "trace_svg")

        return trace_svg(self)

    def to_json(self) -> dict[str, Any]:
        """The whole trace as JSON-ready lists (`rasp-sim trace --json`)."""
        def operations(ops: Sequence["Operation"]) -> list[dict[str, Any]]:
            return [{"op": op.op, "at": op.at} for op in ops]

        return {
            "input": list(self.input), "positions": list(self.positions),
            "residual_labels": list(self.residual_labels),
            "residuals": [{"block": r.block, "operations": operations(r.operations),
                           "values": r.values.tolist()} for r in self.residuals],
            "attention": [{"block": a.block, "head": a.head, "operations": operations(a.operations),
                           "pattern": a.pattern.tolist()} for a in self.attention],
            "mlps": [{"block": m.block, "operations": operations(m.operations),
                      "hidden": m.hidden.tolist()} for m in self.mlps],
            "logits": self.logits.tolist(), "output": list(self.output)}


def _one_hot_value(row: np.ndarray, values: list[str]) -> str | None:
    """The value whose direction holds 1 where every other holds 0 (to 1e-9: tracr's
    categorical encoding, up to float64 rounding), else None."""
    hot = np.flatnonzero(np.abs(row - 1.0) <= 1e-9)
    if hot.size != 1 or np.any(np.abs(np.delete(row, hot[0])) > 1e-9):
        return None
    return values[int(hot[0])]


def trace(model: "Model", sequence: Sequence[Any]) -> Trace:
    """Run `model` on one input (a str's characters, or a list of tokens or numbers) and
    keep every intermediate array."""
    weights = model.weights
    if is_numeric_input(weights):
        features = np.array(numeric_features(weights, sequence), dtype=np.float64)
        stream = embed_features(weights, features[None, :, None])
    else:
        stream = embed_tokens(weights, np.array([token_ids(weights, sequence)]))
    blocks = model.layers
    residuals = [Residual(None, (), stream[0])]
    attention: list[HeadPattern] = []
    mlps: list[MLPActivations] = []
    for block, described in zip(weights.layers, blocks):
        inner = block_input(stream, block)
        if isinstance(block, AttentionBlock):
            attention.extend(
                HeadPattern(described.index, h, described.operations,
                            head_pattern(inner, head, block.scale, weights.causal)[0])
                for h, head in enumerate(block.heads))
        else:
            mlps.append(MLPActivations(described.index, described.operations,
                                       mlp_hidden(inner, block)[0]))
        stream = apply_block(stream, block, weights.causal)
        residuals.append(Residual(described.index, described.operations, stream[0]))
    logits = readout(weights, stream)
    output = as_program_types(weights, decode(weights, logits))[0]
    return Trace(tuple(sequence), (BOS_LABEL, *(str(token) for token in sequence)),
                 model.residual_labels, tuple(residuals), tuple(attention), tuple(mlps),
                 logits[0], output)
