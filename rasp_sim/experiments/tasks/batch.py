"""A batch of a task's token ids with per-position loss weights, and the accuracies
measured on one (the task generators dyck.py and khop.py yield these)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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


def grouped_accuracy(hits: np.ndarray, batch: Batch) -> dict:
    """Accuracy from `hits` (B,), each row's correct answers where the weights count, over
    the batch and per group; group_sizes (the counted positions per group) lets a summary
    pool groups."""
    counted = batch.weights.sum(axis=1)
    labels = np.unique(batch.groups)
    sizes = {str(int(g)): float(counted[batch.groups == g].sum()) for g in labels}
    groups = {str(int(g)): float(hits[batch.groups == g].sum()) / sizes[str(int(g))]
              for g in labels}
    return {"accuracy": float(hits.sum() / counted.sum()), "accuracy_by_group": groups,
            "group_sizes": sizes}
