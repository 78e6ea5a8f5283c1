"""The smallest certified width (`rasp-sim compress --find-width`;
docs/compiler.md#compression-with-a-certificate).

The rank of the residual states over the domain is exact without training, so it is the
search's upper end. Below it the search bisects on "certified exact": it tries the middle
of the interval still open and keeps the lower half when that width is exact. The count
of wrong inputs need not fall as the width grows (each width is trained on its own), so
bisection finds a width w that is exact with w - 1 not exact, which need not be the
smallest exact width of all; every width tried is reported with its count.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..base.atomic_write import replacing
from ..compiler.weights import Transformer
from ..core.graph import SOp
from .certified import (COMPRESSION_KEY, Report, Settings, check_compressible,
                        compress_weights_certified, describe, domain_principal)

DPI = 200


@dataclass(frozen=True)
class Tried:
    """One width the search compressed to, its count of wrong inputs and the model."""

    width: int
    wrong: int
    exact: bool
    weights: Transformer


def find_width(weights: Transformer, root: SOp, settings: Settings = Settings(),
               report: Report = lambda line: None) -> tuple[list[Tried], Tried | None]:
    """Every width tried (by width) and the smallest certified one (None if none is):
    bisection below the rank bound (module docstring); each width's certificate line goes
    to `report`."""
    check_compressible(weights, 1)
    tried: dict[int, Tried] = {}

    principal = domain_principal(weights)

    def attempt(width: int) -> bool:
        compressed = compress_weights_certified(weights, root, width, settings,
                                                principal=principal)
        record = compressed.metadata[COMPRESSION_KEY]
        cert = record["certificate"]
        tried[width] = Tried(width, cert["wrong"], cert["exact"], compressed)
        report(describe(record))
        return bool(cert["exact"])

    bound = principal.rank
    high = bound if attempt(bound) else weights.width  # rounding could spoil the bound
    if high != bound and not attempt(high):
        return sorted(tried.values(), key=lambda t: t.width), None
    low = 1
    while low < high:
        middle = (low + high) // 2
        if attempt(middle):
            high = middle
        else:
            low = middle + 1
    found = tried[high]
    curve = [{"width": t.width, "wrong": t.wrong} for t in sorted(tried.values(),
                                                                   key=lambda t: t.width)]
    metadata = dict(found.weights.metadata)
    metadata[COMPRESSION_KEY] = {**metadata[COMPRESSION_KEY],
                                 "search": {"method": "bisection below the rank bound",
                                            "tried": curve}}
    found = Tried(found.width, found.wrong, found.exact,
                  found.weights.replace(metadata=metadata))
    tried[high] = found
    return sorted(tried.values(), key=lambda t: t.width), found


def plot_curve(tried: list[Tried], bound: int, source_width: int, title: str,
               path: str | Path) -> None:
    """A PNG of the wrong inputs against the width tried (matplotlib's Agg canvas, as
    rasp_sim/experiments/plot.py draws), the rank bound dashed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 3.6))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    widths = [t.width for t in tried]
    axes.plot(widths, [t.wrong for t in tried], "o-", color="C0", label="inputs wrong")
    exact = [t for t in tried if t.exact]
    axes.plot([t.width for t in exact], [0] * len(exact), "s", color="C2",
              label="certified exact")
    axes.axvline(bound, color="grey", linestyle="--", label=f"rank bound {bound}")
    axes.set_xlabel(f"residual width (of {source_width})")
    axes.set_ylabel("inputs of the domain wrong")
    axes.set_title(title)
    axes.legend(loc="upper right")
    figure.tight_layout()
    with replacing(path) as handle:
        figure.savefig(handle, format="png", dpi=DPI)
