"""Validation of numeric-token models (continuous.py) on random real inputs.

The domain is infinite, so this is always a sample: for every length min_len..max_len,
inputs of independent standard-normal values (clipped to the declared token range), plus
the all-zero input and inputs of one value repeated (which make every score of a softmax
tie and every difference vanish). The weights' NumPy forward is compared with the
interpreter in float64 within validate.NUMERIC_TOLERANCE (|a - b| <= 1e-9 max(1, |b|)):
every block is exact up to one rounding per product and sum, so a model agrees to a few
ulps times the number of operations on a path (about 1e-15 relative on the library's
constructions), and 1e-9 leaves a margin of about 10^6 while any wrong block (a lost term,
a wrong coefficient or mask) is off by far more. Inputs where the interpreter fails (e.g.
an unshifted softmax overflowing) are outside the program's domain and only counted.
"""
from __future__ import annotations

import time

import numpy as np

from rasp_sim.core import graph as g

from ..weights import Transformer
from .continuous import NumericDomain
from .runtime import run_weights
from .agreement import agree
from .validate import Disagreement, Report, causal_program, interpret

# Random inputs per numeric validation by default: the domain is infinite, so the sample
# is the second line (the lowering is exact by construction) and is kept to a second or so.
NUMERIC_SAMPLES = 300


def numeric_inputs(domain: NumericDomain, samples: int, seed: int) -> list[list[float]]:
    """The sample: per length, the structured inputs and about samples / lengths random ones."""
    rng = np.random.default_rng(seed)
    lengths = range(domain.min_len, domain.max_len + 1)
    per_length = max(1, samples // len(lengths))
    inputs: list[list[float]] = []
    for n in lengths:
        inputs.append([0.0] * n)
        inputs += [[float(v)] * n for v in np.clip(rng.normal(size=2), domain.low, domain.high)]
        random = np.clip(rng.normal(size=(per_length, n)), domain.low, domain.high)
        inputs += random.tolist()
    return inputs


def validate_numeric(root: g.SOp, weights: Transformer, domain: NumericDomain, *,
                     samples: int, seed: int) -> Report:
    start = time.perf_counter()
    reference = causal_program(root) if weights.causal else root
    inputs = numeric_inputs(domain, samples, seed)
    report = Report("sampled (real inputs)", inputs=len(inputs), seed=seed)
    expected = interpret(reference, inputs)
    got = run_weights(weights, inputs)
    for values, want, have in zip(inputs, expected, got):
        if want is None:
            report.undefined += 1
            continue
        report.compared += 1
        for position, (a, b) in enumerate(zip(have, want)):
            same, error = agree(a, b, True)
            report.max_numeric_error = max(report.max_numeric_error, error)
            if not same and report.disagreement is None:
                report.disagreement = Disagreement(values, position, b, a, "the interpreter",
                                                   "the weights' NumPy forward")
    report.seconds = time.perf_counter() - start
    return report

