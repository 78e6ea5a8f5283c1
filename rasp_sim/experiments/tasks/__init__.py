"""Task generators: each yields `Batch`es (batch.py) of token ids with per-position loss
weights; `make_task` finds one by name."""
from __future__ import annotations

from ..errors import ExperimentError


def make_task(name: str, **options):
    """The task called `name` ("dyck1" or "khop") with its generator options."""
    from .dyck import Dyck1
    from .khop import KHop
    tasks = {"dyck1": Dyck1, "khop": KHop}
    if name not in tasks:
        raise ExperimentError(f"task: unknown task {name!r}; known tasks: {', '.join(tasks)}")
    return tasks[name](**options)
