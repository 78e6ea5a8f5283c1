"""Validation on every compile (COMPILER.md 5.5): three implementations must agree.

On the declared input domain (every sequence over the vocabulary of length 1..max_len,
exhaustively when there are at most `EXHAUSTIVE_LIMIT` of them, else a seeded random
sample), in float64:
- the rasp-sim interpreter (`rasp_sim.evaluate`) on the program,
- the NumPy forward pass of the exported weights (runtime.py),
- tracr's own haiku model (the module `AssembledTransformerModel.apply` runs, jitted and
  batched, inputs padded with tracr's PAD token under its input mask: driver.tracr_forward).
Categorical outputs must be equal. Numerical outputs must agree within
|a - b| <= NUMERIC_TOLERANCE * max(1, |b|): in float64 a compiled model differs from exact
arithmetic only by softmax leakage (e^-50 ~ 2e-22 per key at coldness 100 with the logit
fix), discretisation exactly on its grid (bases.py picks the exactness) and rounding
(~1e-15 for means of at most 256 values); 1e-9 leaves a margin of 10^5 over that and is far
below the smallest distinction a program can make (1/max_len^2 >= 1.5e-5).

Inputs on which the interpreter itself fails (a RaspError: e.g. averaging strings) are not
in the program's domain; they are counted and reported, not compared.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from tqdm import tqdm

from rasp_sim import graph as g
from rasp_sim.errors import RaspError
from rasp_sim.evaluate import evaluate

from ..weights import Transformer
from .runtime import run_ids

EXHAUSTIVE_LIMIT = 100_000
DEFAULT_SAMPLES = 10_000
NUMERIC_TOLERANCE = 1e-9
BATCH = 2_048


@dataclass
class Disagreement:
    input: list
    position: int
    expected: Any
    actual: Any
    expected_by: str
    actual_by: str

    def describe(self) -> str:
        return (f"on input {self.input!r} at position {self.position}: {self.expected_by} gives "
                f"{self.expected!r}, {self.actual_by} gives {self.actual!r}")


@dataclass
class Report:
    mode: str  # "exhaustive" | "sampled"
    inputs: int = 0
    compared: int = 0
    undefined: int = 0
    max_numeric_error: float = 0.0
    disagreement: Disagreement | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.disagreement is None and self.compared > 0

    def as_metadata(self) -> dict:
        error = self.max_numeric_error  # JSON has no inf or nan
        return {"mode": self.mode, "inputs": self.inputs, "compared": self.compared,
                "undefined": self.undefined,
                "max_numeric_error": error if math.isfinite(error) else repr(error),
                "tolerance": NUMERIC_TOLERANCE, "seconds": round(self.seconds, 3),
                "ok": self.ok}


def domain_size(vocab_size: int, max_len: int) -> int:
    return sum(vocab_size ** n for n in range(1, max_len + 1))


def domain(vocab_size: int, max_len: int, samples: int, seed: int
           ) -> tuple[str, int, Iterator[np.ndarray]]:
    """(mode, count, batches of vocabulary-index rows of one length)."""
    size = domain_size(vocab_size, max_len)
    if size <= EXHAUSTIVE_LIMIT:
        def exhaustive() -> Iterator[np.ndarray]:
            for n in range(1, max_len + 1):
                rows = itertools.product(range(vocab_size), repeat=n)
                while chunk := list(itertools.islice(rows, BATCH)):
                    yield np.array(chunk, dtype=np.int64)
        return "exhaustive", size, exhaustive()

    def sampled() -> Iterator[np.ndarray]:
        rng = np.random.default_rng(seed)
        lengths = rng.integers(1, max_len + 1, size=samples)
        for n in range(1, max_len + 1):
            count = int((lengths == n).sum())
            for start in range(0, count, BATCH):
                yield rng.integers(0, vocab_size, size=(min(BATCH, count - start), n))
    return "sampled", samples, sampled()


def interpret(root: g.SOp, inputs: list[list]) -> list[list | None]:
    """The interpreter's outputs; None for inputs on which the program fails (found by
    splitting the batch, since one failing input fails the whole batch)."""
    try:
        return [row[0] for row in evaluate([root], inputs)]
    except RaspError:
        if len(inputs) == 1:
            return [None]
        half = len(inputs) // 2
        return interpret(root, inputs[:half]) + interpret(root, inputs[half:])


def _agree(a: Any, b: Any, numeric: bool) -> tuple[bool, float]:
    """(equal within the rules, absolute error if numbers)."""
    # True == 1 in Python, but the program's values are typed: a bool is not an int.
    same_kind = isinstance(a, str) == isinstance(b, str) and isinstance(a, bool) == isinstance(b, bool)
    if a == b and same_kind:  # also inf == inf, whose difference is nan
        return True, 0.0
    if numeric or (isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool)):
        try:
            error = abs(float(a) - float(b))
        except (TypeError, ValueError):
            return False, math.inf
        return error <= NUMERIC_TOLERANCE * max(1.0, abs(float(b))), error
    return False, 0.0


def causal_program(root: g.SOp) -> g.SOp:
    """What a causal model computes: every selector restricted to keys k <= query q."""
    copies: dict[int, g.Node] = {}
    positions = g.Indices(name="indices")
    for node in g.ancestors(root):
        changes = {}
        for name in ("inputs", "values", "selector", "keys", "queries", "left", "right",
                     "operand"):
            value = getattr(node, name, None)
            if isinstance(value, tuple):
                changes[name] = tuple(copies[id(v)] for v in value)
            elif isinstance(value, g.Node):
                changes[name] = copies[id(value)]
        copy = replace(node, **changes) if changes else node
        if isinstance(node, g.Select):
            copy = g.SelectorAnd(left=copy, right=g.Select(keys=positions, queries=positions,
                                                          op="<="), span=node.span, name=node.name)
        copies[id(node)] = copy
    return copies[id(root)]


def validate(root: g.SOp, weights: Transformer, vocab: Sequence[Any], max_len: int, *,
             tracr_forward: Callable[[np.ndarray], list[list]] | None = None,
             samples: int = DEFAULT_SAMPLES, seed: int = 0, progress: bool = False) -> Report:
    """Compare interpreter, NumPy weights and (if given) tracr's model on the domain."""
    start = time.perf_counter()
    reference = causal_program(root) if weights.causal else root
    numeric = weights.output_encoder is None or weights.output_encoder.values is None
    tokens = list(weights.input_encoder.tokens)
    bos = tokens.index(weights.input_encoder.bos)
    vocab_ids = np.array([next(i for i, t in enumerate(tokens) if t == v and type(t) is type(v))
                          for v in vocab], dtype=np.int64)
    mode, count, batches = domain(len(vocab), max_len, samples, seed)
    report = Report(mode, inputs=count)
    bar = tqdm(total=count, desc=f"validating ({mode})", unit="input", disable=not progress,
               leave=False)
    for rows in batches:
        bar.update(len(rows))
        inputs = [[vocab[i] for i in row] for row in rows.tolist()]
        ids = np.concatenate([np.full((len(rows), 1), bos), vocab_ids[rows]], axis=1)
        expected = interpret(reference, inputs)
        outputs = [("the weights' NumPy forward", run_ids(weights, ids))]
        if tracr_forward is not None:
            outputs.append(("tracr's model", tracr_forward(ids)))
        for i, want in enumerate(expected):
            if want is None:
                report.undefined += 1
                continue
            report.compared += 1
            for who, got in outputs:
                for position, (a, b) in enumerate(zip(got[i], want)):
                    same, error = _agree(a, b, numeric)
                    if numeric:
                        report.max_numeric_error = max(report.max_numeric_error, error)
                    if not same and report.disagreement is None:
                        report.disagreement = Disagreement(inputs[i], position, b, a,
                                                           "the interpreter", who)
        if report.disagreement is not None:
            break
    bar.close()
    report.seconds = time.perf_counter() - start
    return report
