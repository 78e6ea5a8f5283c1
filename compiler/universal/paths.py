"""Path expansion (docs/universal.md): the linear conditions attention matching imposes.

A *terminal* is what a view finally meets: ("Q", l, h) or ("K", l, h), read by head h of
layer l (0-based), or ("O", L), the read-out. A *path* is the tuple of (layer, head) pairs a
view travels through before its terminal, in layer order. Without residual connections a path
to a terminal at layer t takes one head in each of the layers 0..t-1 (H^t paths); with them,
any layer may be skipped ((H+1)^t paths). Each (terminal, path) pair is one block of
conditions E R_path R_terminal = V_path T_terminal.
"""
from __future__ import annotations

from itertools import combinations, product

import numpy as np

from .target import Canonical, Shape

Terminal = tuple
Path = tuple[tuple[int, int], ...]


def terminals(shape: Shape) -> list[Terminal]:
    out: list[Terminal] = []
    for layer in range(shape.layers):
        for head in range(shape.heads):
            out += [("Q", layer, head), ("K", layer, head)]
    return out + [("O", shape.layers)]


def terminal_layer(terminal: Terminal) -> int:
    return terminal[1]


def terminal_width(terminal: Terminal, shape: Shape) -> int:
    return shape.out_dim if terminal[0] == "O" else shape.head_dim


def paths(start: int, stop: int, shape: Shape) -> list[Path]:
    """Every path through layers start..stop-1."""
    heads = range(shape.heads)
    if not shape.residual:
        layers = range(start, stop)
        return [tuple(zip(layers, choice)) for choice in product(heads, repeat=stop - start)]
    out: list[Path] = []
    for size in range(stop - start + 1):
        for chosen in combinations(range(start, stop), size):
            out += [tuple(zip(chosen, choice)) for choice in product(heads, repeat=size)]
    return out


def constraints(shape: Shape) -> list[tuple[Terminal, Path]]:
    """All (terminal, path) pairs seen from the input (stage 0)."""
    return [(t, p) for t in terminals(shape) for p in paths(0, terminal_layer(t), shape)]


def base(shape: Shape) -> int:
    """Paths to a terminal at layer t number base^t: one head per layer, or (with residual
    connections) a head or none."""
    return shape.heads + 1 if shape.residual else shape.heads


def geometric(ratio: int, n: int) -> int:
    """The sum of ratio^j for j < n."""
    return n if ratio == 1 else (ratio ** n - 1) // (ratio - 1)


def constraint_total(shape: Shape) -> int:
    """The number of (terminal, path) pairs, len(constraints(shape)), in closed form."""
    paths = base(shape)
    return 2 * shape.heads * geometric(paths, shape.layers) + paths ** shape.layers


def constraint_count(shape: Shape) -> int:
    """C: the number of scalar columns of the system E M = T, in closed form (the widths
    of `constraints(shape)` summed, without enumerating its H^L paths)."""
    paths = base(shape)
    return (2 * shape.heads * shape.head_dim * geometric(paths, shape.layers)
            + shape.out_dim * paths ** shape.layers)


def target_views(target: Canonical, shape: Shape) -> list[np.ndarray]:
    """V_path T_terminal (d x width) for each constraint, prefix products memoised."""
    prefix: dict[Path, np.ndarray] = {(): np.eye(target.unembed.shape[0])}

    def product_of(path: Path) -> np.ndarray:
        if path not in prefix:
            layer, head = path[-1]
            prefix[path] = product_of(path[:-1]) @ target.values[layer][head]
        return prefix[path]

    views = []
    for terminal, path in constraints(shape):
        if terminal[0] == "O":
            end = target.unembed
        else:
            kind, layer, head = terminal
            end = (target.queries if kind == "Q" else target.keys)[layer][head]
        views.append(product_of(path) @ end)
    return views
