"""Task generators: each yields `Batch`es of token ids with per-position loss weights."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExperimentError


@dataclass(frozen=True, eq=False)
class Batch:
    """inputs/targets: (B, N) int32 token ids; weights: (B, N) float, 1 where the loss and
    accuracy count; groups: (B,) int, a per-sample label for grouped accuracy (k-hop: k)."""

    inputs: np.ndarray
    targets: np.ndarray
    weights: np.ndarray
    groups: np.ndarray

    def __len__(self) -> int:
        return int(self.inputs.shape[0])


def majority_accuracy(batch: Batch) -> float:
    """Accuracy of always answering the most common target where the loss counts."""
    answers = batch.targets[batch.weights > 0]
    return float(np.unique(answers, return_counts=True)[1].max() / answers.size)


def make_task(name: str, **options):
    """The task called `name` ("dyck1" or "khop") with its generator options."""
    from .dyck import Dyck1
    from .khop import KHop
    tasks = {"dyck1": Dyck1, "khop": KHop}
    if name not in tasks:
        raise ExperimentError(f"task: unknown task {name!r}; known tasks: {', '.join(tasks)}")
    return tasks[name](**options)
