"""The REPL's `draw(x)`: a picture of x's computation on the input, written to a file.

As the original REPL writes each `draw` to `comp_flows/<name>(<input>)` (a Graphviz PDF),
this writes `<folder>/<name>(<input>).<format>` (default `comp_flows/`, PDF; `--draw-dir`,
`--draw-format svg|png|pdf`) with `rasp-sim draw`'s picture on that input, and prints
where. Drawing the same s-op on the same input again replaces the file.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, TextIO

from ..core import graph
from ..base.errors import RaspError

DRAW_FOLDER = "comp_flows"  # the original's folder
DRAW_FORMATS = ("pdf", "svg", "png")
_NAME_CHARS = 80  # a file name longer than this is cut (the input can be long)


def picture_name(node: graph.SOp, example: Any) -> str:
    """`reverse("hey")`, `sort([3, 1])`: the s-op's name and the input, with the
    characters that are unsafe in file names replaced by `_`."""
    from ..language.analyse import node_label

    shown = f'"{example}"' if isinstance(example, str) else str(list(example))
    name = f"{node_label(node)}({shown})"
    return re.sub(r'[\\/:*?<>|\x00-\x1f]', "_", name)[:_NAME_CHARS]


def picture_writer(folder: str | Path, form: str, exact: bool,
                   out: TextIO) -> Callable[[graph.SOp, Any], None]:
    """The interpreter's `draw_hook`: draw `node` on `example` into `folder`."""
    def write(node: graph.SOp, example: Any) -> None:
        from ..language.analyse import analyse
        from ..pictures.draw import drawing, render
        from ..evaluation.evaluate import evaluate
        from ..core.graph import ancestors

        nodes = list(ancestors(node))
        (values,) = evaluate(nodes, [example if isinstance(example, str) else list(example)],
                             exact=exact)
        target = Path(folder)
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise RaspError(f"cannot draw into {target}: {error.strerror or error}") from None
        path, _ = render(drawing(analyse(node), dict(zip(nodes, values)), list(example)),
                         target / f"{picture_name(node, example)}.{form}")
        print(f"drew {path}", file=out)

    return write
