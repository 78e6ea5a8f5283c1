"""Validation on every compile (docs/compiler.md): three implementations must agree.

On the declared input domain (every sequence over the vocabulary of length 1..max_len),
in float64:
- the rasp-sim interpreter (`rasp_sim.evaluation.evaluate`) on the program,
- the NumPy forward pass of the exported weights (runtime.py),
- tracr's own haiku model (the module `AssembledTransformerModel.apply` runs, jitted and
  batched, inputs padded with tracr's PAD token under its input mask: driver.tracr_forward).
Categorical outputs must be equal. Numerical outputs must agree within
|a - b| <= NUMERIC_TOLERANCE * max(1, |b|): in float64 a compiled model differs from exact
arithmetic only by softmax leakage (e^-50 ~ 2e-22 per key at coldness 100 with the logit
fix), discretisation exactly on its grid (bases.py picks the exactness) and rounding
(~1e-15 for means of at most 256 values); 1e-9 leaves a margin of 10^5 over that and is far
below the smallest distinction a program can make (1/max_len^2 >= 1.5e-5).

Which inputs:
- at most `EXHAUSTIVE_LIMIT` inputs in the domain: all of them ("exhaustive"; the model
  is then correct on the whole declared domain, up to the tolerance);
- else ("sampled") a seeded uniform random sample of `samples` inputs plus structured
  inputs, because a miscompile that shows only on a structured input (an empty
  selection, one token at the last position) is nearly never drawn uniformly:
  * every length 1..max_len, and at each length a covering design: for j < |V| the input
    vocab[(p + j) % |V|] at position p, so every token stands at every position of every
    length, plus the constant inputs (one token everywhere);
  * each selector's edge cases: for every selector of the program and every length, an
    input on which some query selects no key (the compiled head then attends only to
    BOS), exactly one key, and every key, when a candidate pool (the structured inputs,
    plus inputs with one token everywhere but at one position, uniform random ones and
    random ones over two or three tokens so that tokens repeat; or every input of a
    length when there are few) holds one. The selectors are evaluated on the pool by the
    batched interpreter and a greedy cover picks a few inputs.
  Nothing is proven about the inputs not drawn; `Coverage` records what was.

Inputs on which the interpreter itself fails (a RaspError: e.g. averaging strings) are not
in the program's domain; they are counted and reported, not compared.
"""
from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, cast

import numpy as np

from tqdm import tqdm

from rasp_sim.core import graph as g
from rasp_sim.evaluation.evaluate import evaluate_defined

from ..weights import Transformer
from .agreement import agree, vocabulary_ids
from .bulk_compare import Encoding, Tally, compare_rows
from .runtime import NUMERIC_TOLERANCE, run_ids
from .static import causal_nodes

EXHAUSTIVE_LIMIT = 100_000
DEFAULT_SAMPLES = 10_000
BATCH = 2_048
# The edge cases of a selector, per query: no key selected, exactly one, every key.
EDGE_CASES = ("none", "one", "all")
# Random candidates for the edge cases, spread over the lengths; a length with fewer
# inputs than its share is enumerated instead.
POOL_SIZE = 4_096
# Selector values of the pool are evaluated in chunks of about this many booleans.
_POOL_CHUNK_CELLS = 2**25


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
class Coverage:
    """What a sampled validation drew: its input counts by origin, and per edge case
    (EDGE_CASES) how many of the program's selectors had an input with that case among
    those validated (`covered`) and how many had none in the whole pool (`absent`)."""

    random: int = 0
    structured: int = 0
    edge_case: int = 0
    selectors: int = 0
    covered: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EDGE_CASES, 0))
    absent: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EDGE_CASES, 0))

    def as_metadata(self) -> dict:
        return {"random": self.random, "structured": self.structured,
                "edge_case": self.edge_case, "selectors": self.selectors,
                "edge_cases": {case: {"covered": self.covered[case],
                                      "absent": self.absent[case]} for case in EDGE_CASES}}


@dataclass
class Report:
    mode: str  # "exhaustive" | "sampled"
    inputs: int = 0
    compared: int = 0
    undefined: int = 0
    max_numeric_error: float = 0.0
    disagreement: Disagreement | None = None
    seconds: float = 0.0
    coverage: Coverage | None = None  # sampled mode only
    seed: int | None = None  # of the sample; None where the whole domain was checked
    output_types: set[type] = field(default_factory=set)  # of the interpreter's values

    @property
    def ok(self) -> bool:
        return self.disagreement is None and self.compared > 0

    @property
    def output_type(self) -> str | None:
        """The program's output type on every compared input ("int", "float", "bool",
        "str"), None where the types were mixed or nothing was compared: the type a
        numerical model's outputs are given back in (runtime.as_program_types)."""
        if len(self.output_types) != 1:
            return None
        (kind,) = self.output_types
        return {int: "int", float: "float", bool: "bool", str: "str"}.get(kind)

    def as_metadata(self) -> dict:
        error = self.max_numeric_error  # JSON has no inf or nan
        record = {"mode": self.mode, "inputs": self.inputs, "compared": self.compared,
                  "undefined": self.undefined,
                  "max_numeric_error": error if math.isfinite(error) else repr(error),
                  "tolerance": NUMERIC_TOLERANCE, "seconds": round(self.seconds, 3),
                  "ok": self.ok}
        if self.coverage is not None:
            record["coverage"] = self.coverage.as_metadata()
        if self.seed is not None:
            record["seed"] = self.seed
        return record


COUNT_CAP = 2**64  # domain sizes are counted exactly up to here (see domain_size)


def domain_size(vocab_size: int, max_len: int, min_len: int = 1, cap: int = COUNT_CAP) -> int:
    """The number of inputs of lengths min_len..max_len over `vocab_size` tokens, or
    cap + 1 if there are more than `cap`: found in at most about log2(cap) steps, so a
    max_len of 10^15 (a forged compile record) costs nothing."""
    if vocab_size <= 1:
        return min(max(max_len - min_len + 1, 0) * vocab_size, cap + 1)
    total = 0
    for n in range(min_len, max_len + 1):
        if n > cap.bit_length():  # vocab_size ** n >= 2 ** n > cap
            return cap + 1
        total += vocab_size ** n
        if total > cap:
            return cap + 1
    return total


def describe_size(size: int) -> str:
    """A domain_size result in words: its value, or "more than" the cap."""
    return f"more than {COUNT_CAP:,}" if size > COUNT_CAP else f"{size:,}"


def every_input(vocab_size: int, max_len: int, min_len: int = 1, batch: int = BATCH
                ) -> Iterator[np.ndarray]:
    """Every vocabulary-index row of length min_len..max_len, in batches of one length."""
    for n in range(min_len, max_len + 1):
        rows = itertools.product(range(vocab_size), repeat=n)
        while chunk := list(itertools.islice(rows, batch)):
            yield np.array(chunk, dtype=np.int64)


def domain(vocab_size: int, max_len: int, samples: int, seed: int, min_len: int = 1
           ) -> tuple[str, int, Iterator[np.ndarray]]:
    """(mode, count, batches of vocabulary-index rows of one length): the whole domain, or
    the seeded uniform random sample (the structured inputs are `structured_inputs`)."""
    size = domain_size(vocab_size, max_len, min_len)
    if size <= EXHAUSTIVE_LIMIT:
        return "exhaustive", size, every_input(vocab_size, max_len, min_len)

    def sampled() -> Iterator[np.ndarray]:
        rng = np.random.default_rng(seed)
        lengths = rng.integers(min_len, max_len + 1, size=samples)
        # the lengths drawn, ascending (not every length up to max_len: it may be huge)
        for n in np.unique(lengths).tolist():
            count = int((lengths == n).sum())
            for start in range(0, count, BATCH):
                yield rng.integers(0, vocab_size, size=(min(BATCH, count - start), n))
    return "sampled", samples, sampled()


def covering_rows(vocab_size: int, n: int) -> np.ndarray:
    """Vocabulary-index rows of length n with every token at every position (row j holds
    (p + j) % |V| at position p) and the constant rows, without repeats."""
    shift = np.arange(vocab_size, dtype=np.int64)[:, None]
    cyclic = (shift + np.arange(n, dtype=np.int64)[None, :]) % vocab_size
    constant = np.repeat(shift, n, axis=1)
    return np.unique(np.concatenate([cyclic, constant]), axis=0)


def _pool_rows(vocab_size: int, n: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Candidate rows of length n: every row of that length if there are at most 2 count,
    else the rows with one token everywhere but at one position (all of them if at most
    `count`, else `count` random ones) and `count` random rows, half uniform, half over
    two or three random tokens, so that tokens repeat."""
    if vocab_size ** n <= 2 * count:
        return np.array(list(itertools.product(range(vocab_size), repeat=n)), dtype=np.int64)
    families = [rng.integers(0, vocab_size, size=(count // 2, n))]
    if vocab_size > 1:  # one exception: an empty / one-key selection often needs just that
        if vocab_size * (vocab_size - 1) * n <= count:
            base, other, at = (a.ravel() for a in np.meshgrid(
                np.arange(vocab_size), np.arange(1, vocab_size), np.arange(n), indexing="ij"))
        else:
            base = rng.integers(0, vocab_size, size=count)
            other, at = rng.integers(1, vocab_size, size=count), rng.integers(0, n, size=count)
        exception = np.repeat(base[:, None], n, axis=1)
        exception[np.arange(len(base)), at] = (base + other) % vocab_size
        families.append(exception)
    few = count - count // 2
    alphabets = rng.integers(0, vocab_size, size=(few, 3))
    sizes = rng.integers(2, 4, size=(few, 1))
    choice = (rng.random((few, n)) * sizes).astype(np.int64)
    families.append(np.take_along_axis(alphabets, choice, axis=1))
    return np.concatenate(families)


def program_selectors(root: g.SOp) -> list[g.Selector]:
    """Every selector (Select and composite) the program's value depends on."""
    return [node for node in g.ancestors(root) if isinstance(node, g.Selector)]


def _features(selectors: Sequence[g.Selector], inputs: list[list]
              ) -> tuple[np.ndarray, np.ndarray]:
    """(len(defined), 3 * len(selectors)) bools: on the inputs the program is defined on,
    does some query of selector s select no key / one key / every key (column 3 s +
    case); and those inputs' positions in `inputs` (the others are left out: failing
    inputs are outside the program's domain)."""
    values, defined = evaluate_defined(selectors, inputs)
    n = len(inputs[0])
    columns = []
    for selector in selectors:
        width = np.broadcast_to(values[selector], (len(defined), n, n)).sum(axis=2)
        columns += [(width == 0).any(axis=1), (width == 1).any(axis=1),
                    (width == n).any(axis=1)]
    # The shape given whole: where the interpreter fails on every input of the chunk
    # (a value read by the selectors fails at this length), there are no rows, and -1
    # cannot be inferred from an empty array.
    return np.stack(columns, axis=1).reshape(len(defined), 3 * len(selectors)), defined


def _greedy_cover(features: np.ndarray, covered: np.ndarray) -> list[int]:
    """Rows of `features` that together add every column not yet `covered` that any row
    has; greedy (the row adding the most first), so a few rows usually suffice."""
    gain = features & ~covered
    chosen: list[int] = []
    while gain.any():
        best = int(gain.sum(axis=1).argmax())
        chosen.append(best)
        gain &= ~features[best]
    return chosen


def structured_inputs(root: g.SOp, vocab: Sequence[Any], max_len: int, seed: int,
                      min_len: int = 1) -> tuple[dict[int, np.ndarray], Coverage]:
    """The structured inputs of a sampled validation, as vocabulary-index rows by length
    (the covering rows first, then the selectors' edge cases), and what they cover."""
    selectors = program_selectors(root)
    rng = np.random.default_rng([seed, 1])  # independent of the random sample's stream
    share = max(64, POOL_SIZE // max_len)
    coverage = Coverage(selectors=len(selectors))
    seen = np.zeros((len(selectors), len(EDGE_CASES)), dtype=bool)
    rows: dict[int, np.ndarray] = {}
    for n in range(min_len, max_len + 1):
        covering = covering_rows(len(vocab), n)
        coverage.structured += len(covering)
        rows[n] = covering
        if not selectors:
            continue
        pool = np.concatenate([covering, _pool_rows(len(vocab), n, share, rng)])
        chunk = max(1, _POOL_CHUNK_CELLS // (n * n * len(selectors)))
        parts = [_features(selectors, [[vocab[i] for i in row] for row in
                                       pool[start:start + chunk].tolist()])
                 for start in range(0, len(pool), chunk)]
        features = np.concatenate([f for f, _ in parts])
        ids = np.concatenate([i + start for (_, i), start in
                              zip(parts, range(0, len(pool), chunk))])
        from_covering = ids < len(covering)
        candidates = features[~from_covering]
        chosen = _greedy_cover(candidates, np.asarray(features[from_covering].any(axis=0)))
        extra = pool[ids[~from_covering][chosen]]
        coverage.edge_case += len(extra)
        rows[n] = np.concatenate([covering, extra])
        seen |= features.any(axis=0).reshape(len(selectors), len(EDGE_CASES))
    for c, case in enumerate(EDGE_CASES):
        coverage.covered[case] = int(seen[:, c].sum())
        coverage.absent[case] = len(selectors) - coverage.covered[case]
    return rows, coverage


def _batches(rows: dict[int, np.ndarray]) -> Iterator[np.ndarray]:
    for n in sorted(rows):
        for start in range(0, len(rows[n]), BATCH):
            yield rows[n][start:start + BATCH]


def interpret(root: g.SOp, inputs: list[list]) -> list[list | None]:
    """The interpreter's outputs; None for inputs on which the program fails (found in
    bulk, one evaluation per length: `evaluate_defined`)."""
    by_length: dict[int, list[int]] = {}
    for i, x in enumerate(inputs):
        by_length.setdefault(len(x), []).append(i)
    out: list[list | None] = [None] * len(inputs)
    for positions in by_length.values():
        values, defined = evaluate_defined([root], [inputs[i] for i in positions])
        for j, row in zip(defined.tolist(), values[root].tolist()):
            out[positions[j]] = row
    return out


def causal_program(root: g.SOp) -> g.SOp:
    """What a causal model computes: the selector of every aggregate, whole, restricted to
    keys k <= q (static.causal_nodes, which the compile-time static values use too)."""
    return cast(g.SOp, causal_nodes([root])[0])


def validate(root: g.SOp, weights: Transformer, vocab: Sequence[Any], max_len: int, *,
             tracr_forward: Callable[[np.ndarray], list[list]] | None = None,
             samples: int = DEFAULT_SAMPLES, seed: int = 0, progress: bool = False,
             structured: bool = True, min_len: int = 1) -> Report:
    """Compare interpreter, NumPy weights and (if given) tracr's model on the domain.

    A sampled validation also checks the structured inputs (`structured_inputs`), first;
    `structured=False` leaves them out (the plain random sample, for comparisons)."""
    start = time.perf_counter()
    reference = causal_program(root) if weights.causal else root
    numeric = weights.output_encoder is None or weights.output_encoder.values is None
    encoder = weights.input_encoder
    assert encoder is not None, "numeric-input models are validated by validate_numeric"
    bos = list(encoder.tokens).index(encoder.bos)
    vocab_ids = vocabulary_ids(encoder.tokens, vocab)
    mode, count, batches = domain(len(vocab), max_len, samples, seed, min_len)
    coverage = None
    if mode == "sampled":
        coverage = Coverage(random=count)
        if structured:
            extra, coverage = structured_inputs(reference, vocab, max_len, seed, min_len)
            coverage.random = count
            count += sum(len(rows) for rows in extra.values())
            batches = itertools.chain(_batches(extra), batches)
    report = Report(mode, inputs=count, coverage=coverage,
                    seed=seed if mode == "sampled" else None)
    bar = tqdm(total=count, desc=f"validating ({mode})", unit="input", disable=not progress,
               leave=False)
    for rows in batches:
        bar.update(len(rows))
        _compare(report, reference, rows, vocab, vocab_ids, bos, numeric, weights,
                 tracr_forward)
        if report.disagreement is not None:
            break
    bar.close()
    report.seconds = time.perf_counter() - start
    return report


def _compare(report: Report, reference: g.SOp, rows: np.ndarray, vocab: Sequence[Any],
             vocab_ids: np.ndarray, bos: int, numeric: bool, weights: Transformer,
             tracr_forward: Callable[[np.ndarray], list[list]] | None) -> None:
    """One batch of inputs of one length: the outputs compared, into `report`. Without
    tracr's model, in bulk (bulk_compare.py, the same rules on arrays)."""
    if tracr_forward is None:
        tally = Tally(max_numeric_error=report.max_numeric_error)
        compare_rows(reference, weights, Encoding.of(weights, vocab), rows, tally)
        report.compared += tally.compared
        report.undefined += tally.undefined
        report.max_numeric_error = tally.max_numeric_error
        report.output_types.update(tally.output_types or ())
        if tally.disagreement is not None and report.disagreement is None:
            tokens, position, expected, actual = tally.disagreement
            report.disagreement = Disagreement(tokens, position, expected, actual,
                                               "the interpreter", "the weights' NumPy forward")
        return
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
        report.output_types.update(map(type, want))
        for who, got in outputs:
            for position, (a, b) in enumerate(zip(got[i], want)):
                same, error = agree(a, b, numeric)
                if numeric:
                    report.max_numeric_error = max(report.max_numeric_error, error)
                if not same and report.disagreement is None:
                    report.disagreement = Disagreement(inputs[i], position, b, a,
                                                       "the interpreter", who)
