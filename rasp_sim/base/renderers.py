"""Renderers found by name when a picture is asked for. The pictures (`rasp_sim.pictures`)
sit above the objects they draw (docs/architecture.md): an s-op's, a `Program`'s or a
`Trace`'s notebook repr looks its renderer (and the pictures' helpers it needs, such as
the names of folded library calls) up here instead of importing upward, so the
core graph depends on no renderer and `import rasp_sim` loads no drawing code until
Jupyter asks for a picture."""
from __future__ import annotations

import importlib
from typing import Any, Callable


def renderer(module: str, name: str) -> Callable[..., Any]:
    """`rasp_sim.pictures.<module>.<name>`, imported on first use."""
    function: Callable[..., Any] = getattr(
        importlib.import_module(f"rasp_sim.pictures.{module}"), name)
    return function
