"""The explicit {0,1} universal transformer (docs/universal.md) and its embedding map.

The state Y_s after s layers is a row of blocks; each block holds one view X_s V_path T_t.
A block's address (its *key*) depends on the layout:

- "tied" (looped, no residual): key ((kind, h), sigma) for a Q/K view and (("O",), sigma) for
  the read-out, sigma = the heads still to be taken. The terminal layer is implicit
  (s + |sigma|), so one R^V_h -- strip a leading h -- serves every layer. Read-out blocks
  exist for every |sigma| <= L.
- "compact" (untied, no residual): as tied for Q/K; the read-out chain of length L - s is
  stored at (0,)*s + sigma, so only H^L read-out blocks exist (for H = 1: the shift register,
  m = 2kL + c).
- "residual" (untied): key (terminal, path) with absolute layers, the same at every stage, so
  the identity residual carries the views of paths that skip a layer.

R^Q_lh / R^K_lh select the block (terminal (Q|K, l, h), empty path) at stage l, R^V_lh moves
the block (t, ((l, h),) + rest) at stage l onto (t, rest) at stage l+1, P selects the
read-out at stage L. Nothing here reads a target: the weights depend on the shape only.
"""
from __future__ import annotations

from itertools import product

import numpy as np

from ..weights import AttentionBlock, AttentionHead, SparseMatrix, Transformer
from .paths import Path, Terminal, constraints, paths, terminal_layer, terminal_width, terminals
from .spec import Spec, check_tied, write_spec
from .target import Shape


def layout_name(shape: Shape, tied: bool) -> str:
    check_tied(shape, tied)
    if shape.residual:
        return "residual"
    return "tied" if tied else "compact"


def block_key(layout: str, stage: int, terminal: Terminal, path: Path) -> tuple:
    if layout == "residual":
        return (terminal, path)
    sigma = tuple(head for _, head in path)
    if terminal[0] == "O":
        return (("O",), ((0,) * stage if layout == "compact" else ()) + sigma)
    return ((terminal[0], terminal[2]), sigma)


class BlockTable:
    """Column slices of the m-dimensional state, one per key, for a shape and layout."""

    def __init__(self, shape: Shape, layout: str):
        self.shape, self.layout = shape, layout
        widths = {block_key(layout, 0, t, p): terminal_width(t, shape)
                  for t, p in constraints(shape)}
        if layout == "tied":  # read-out blocks for the shorter chains of later stages
            for length in range(shape.layers):
                for sigma in product(range(shape.heads), repeat=length):
                    widths[(("O",), sigma)] = shape.out_dim
        order = sorted(widths, key=self._order) if layout != "residual" else list(widths)
        self.offsets: dict[tuple, int] = {}
        self.m = 0
        for key in order:
            self.offsets[key] = self.m
            self.m += widths[key]
        self.widths = widths

    @staticmethod
    def _order(key: tuple) -> tuple:
        # By length, then sigma, then head, Q before K; read-out blocks last (UNIVERSAL 4.4).
        (kind, *head), sigma = key
        return (kind == "O", len(sigma), sigma, tuple(head), kind == "K")

    def labels(self) -> tuple[str, ...]:
        """A name per state dimension, for its contents at the input (stage 0): "Q1<0.1>[0]"
        is the query view of head 1 still to pass heads 0 then 1 (layouts compact, tied);
        "K@2.0<(0,1)>[0]" the key view of layer 2 head 0 still to pass layer 0 head 1
        (residual); "O<...>" a read-out view."""
        names = [""] * self.m
        for key, offset in self.offsets.items():
            if self.layout == "residual":
                (kind, *where), path = key
                head = f"@{where[0]}.{where[1]}" if kind != "O" else ""
                route = ",".join(f"({l},{h})" for l, h in path)
            else:
                (kind, *head_index), sigma = key
                head = "".join(map(str, head_index))
                route = ".".join(map(str, sigma))
            for i in range(self.widths[key]):
                names[offset + i] = f"{kind}{head}<{route}>[{i}]"
        return tuple(names)

    def columns(self, stage: int, terminal: Terminal, path: Path) -> np.ndarray:
        key = block_key(self.layout, stage, terminal, path)
        return self.offsets[key] + np.arange(self.widths[key])


def _moves(table: BlockTable, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
    """(source, destination) columns of R^V for (layer, head): strip a leading (layer, head)."""
    shape, src, dst = table.shape, [], []
    for terminal in terminals(shape):
        if terminal_layer(terminal) <= layer:  # already read by an earlier layer
            continue
        for path in paths(layer, terminal_layer(terminal), shape):
            if path and path[0] == (layer, head):
                src.append(table.columns(layer, terminal, path))
                dst.append(table.columns(layer + 1, terminal, path[1:]))
    if not src:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


def _value_matrix(table: BlockTable, layer: int, head: int, tied: bool) -> SparseMatrix:
    if not tied:
        src, dst = _moves(table, layer, head)
    else:  # one matrix for every layer: the union of all layers' moves (they agree)
        pairs = {pair for l in range(table.shape.layers) for pair in zip(*_moves(table, l, head))}
        src, dst = (np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2).T
                    if pairs else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        if len(set(src.tolist())) != len(src):
            raise AssertionError("tied layout routes one block to two places")
    return SparseMatrix.ones((table.m, table.m), src, dst)


def _selector(table: BlockTable, stage: int, terminal: Terminal) -> SparseMatrix:
    rows = table.columns(stage, terminal, ())
    return SparseMatrix.ones((table.m, rows.size), rows, np.arange(rows.size))


def build_sparse(shape: Shape, tied: bool = False) -> Transformer:
    """The fixed {0,1} universal transformer for `shape` (no embedding: input_proj is None)."""
    layout = layout_name(shape, tied)
    table = BlockTable(shape, layout)
    layers = []
    for layer in range(shape.layers):
        heads = tuple(
            AttentionHead(_selector(table, layer, ("Q", layer, head)),
                          _selector(table, layer, ("K", layer, head)),
                          _value_matrix(table, layer, head, tied))
            for head in range(shape.heads))
        layers.append(AttentionBlock(heads, scale=1.0, residual=shape.residual))
    spec = Spec(shape, "sparse", layout, tied)
    return Transformer(layers=tuple(layers),
                       unembed=_selector(table, shape.layers, ("O", shape.layers)),
                       causal=shape.causal, residual_labels=table.labels(),
                       metadata=write_spec(spec, {"m": table.m, "blocks": len(table.offsets)}))


def sparse_embedding(views: list[np.ndarray], spec: Spec) -> np.ndarray:
    """E (d x m): every view V_path T_terminal (paths.target_views) in its stage-0 block."""
    table = BlockTable(spec.shape, spec.layout)
    embedding = np.zeros((views[0].shape[0], table.m))
    for (terminal, path), view in zip(constraints(spec.shape), views):
        embedding[:, table.columns(0, terminal, path)] = view
    return embedding
