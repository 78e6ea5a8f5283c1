"""The interpreter and the weights' NumPy forward compared in bulk, on arrays.

`agreement.agree` decides one output position at a time, in Python; on a whole domain of
10^7 inputs that is most of the time. Here a batch of inputs of one length is compared
with the same rules, vectorised:
- a categorical output: the interpreter's column is reduced to its distinct values, each
  value gets the set of output-encoder entries `agree` accepts for it (a small table),
  and the forward's arg-max must be in that set;
- a numerical output: |model - program| <= NUMERIC_TOLERANCE * max(1, |program|) (or
  equal, for infinities), on float64 arrays, as `agree` computes it with float(b).
A column the interpreter holds as Python objects (mixed types) is compared element by
element with `agree` itself, so the rules stay one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from rasp_sim.core import graph as g
from rasp_sim.evaluation.evaluate import evaluate_defined

from ..forward import forward
from ..weights import Transformer
from .agreement import agree, vocabulary_ids
from .runtime import NUMERIC_TOLERANCE, rows_per_pass

# Bytes of activations one forward pass may take, at the most (rows_per_pass): a bound for
# the worst case, every position's row distinct. A token batch runs on its distinct rows
# (compiler/forward.py), a small fraction of that, so large passes cost little memory and
# save the per-pass work of every block (Dyck-2's proof: 79k -> 121k inputs/s per core
# from 256 MiB to 1 GiB); passes of the row-by-row forward stay within PASS_BYTES.
FORWARD_MEMORY = 1024 * 2**20
_SCALAR_KINDS = {"i": int, "f": float, "b": bool, "U": str}  # dtype.kind -> Python type


@dataclass
class Encoding:
    """How one compiled model reads and writes: token ids, the interpreter's input form."""

    vocab: tuple[Any, ...]
    vocab_ids: np.ndarray  # the input encoder's id of each vocabulary entry
    bos: int
    numeric: bool  # a numerical output (one unembedding column), else categorical
    output_values: tuple[Any, ...] | None  # the categorical output's values

    @classmethod
    def of(cls, weights: Transformer, vocab: Sequence[Any]) -> "Encoding":
        encoder = weights.input_encoder
        assert encoder is not None, "token models only (numeric inputs have no finite domain)"
        values = None if weights.output_encoder is None else weights.output_encoder.values
        return cls(tuple(vocab), vocabulary_ids(encoder.tokens, vocab),
                   list(encoder.tokens).index(encoder.bos), values is None,
                   None if values is None else tuple(values))

    def interpreter_rows(self, rows: np.ndarray) -> Any:
        return interpreter_rows(self.vocab, rows)


def interpreter_rows(vocab: Sequence[Any], rows: np.ndarray) -> Any:
    """Vocabulary-index rows as the interpreter's batched API takes them, built without a
    Python loop per token where the vocabulary allows: an int64 matrix for int tokens, one
    string per input for one-character tokens, else lists of tokens."""
    if all(type(t) is int for t in vocab):
        try:
            return np.array(vocab, dtype=np.int64)[rows]
        except OverflowError:
            pass
    if all(type(t) is str and len(t) == 1 for t in vocab) and rows.size:
        chars = np.array(vocab, dtype="<U1")[rows]
        return np.ascontiguousarray(chars).view(f"<U{rows.shape[1]}").ravel().tolist()
    return [[vocab[i] for i in row] for row in rows.tolist()]


@dataclass
class Tally:
    """What a comparison found: counts (`wrong`: the inputs the model gets wrong), the largest numerical error, the first
    disagreement (input, position, program's value, model's value) and the program's
    output types."""

    compared: int = 0
    undefined: int = 0
    wrong: int = 0  # inputs with at least one disagreeing position
    max_numeric_error: float = 0.0
    disagreement: tuple[list, int, Any, Any] | None = None
    output_types: set[type] | None = None

    def __post_init__(self) -> None:
        if self.output_types is None:
            self.output_types = set()


def compare_rows(reference: g.SOp, weights: Transformer, encoding: Encoding,
                 rows: np.ndarray, tally: Tally) -> None:
    """Compare the program `reference` and the weights on vocabulary-index `rows` (one
    length), into `tally`; inputs the interpreter fails on count as undefined."""
    values, defined = evaluate_defined([reference], encoding.interpreter_rows(rows))
    tally.undefined += len(rows) - len(defined)
    if not len(defined):
        return
    rows = rows[defined]
    want = np.broadcast_to(values[reference], (len(rows), rows.shape[1]))
    tally.compared += len(rows)
    ids = np.concatenate([np.full((len(rows), 1), encoding.bos, dtype=np.int64),
                          encoding.vocab_ids[rows]], axis=1)
    step = rows_per_pass(weights, ids.shape[1], FORWARD_MEMORY)
    outputs = [forward(weights, ids[s:s + step]) for s in range(0, len(ids), step)]
    out = np.concatenate(outputs)[:, 1:]
    if want.dtype.kind not in _SCALAR_KINDS:
        _compare_objects(want, out, encoding, rows, tally)
        return
    tally.output_types.add(_SCALAR_KINDS[want.dtype.kind])  # type: ignore[union-attr]
    if encoding.numeric:
        got = out[..., 0]
        if want.dtype.kind == "U":  # a string is never a number (agree: float() fails)
            _first_failure(np.zeros(want.shape, dtype=bool), rows, encoding, want, got.tolist,
                           tally)
        else:
            _compare_numbers(got, want.astype(np.float64), want, encoding, rows, tally)
        return
    chosen = out.argmax(axis=-1)
    distinct, inverse = np.unique(want, return_inverse=True)
    accepts = _acceptance(distinct.tolist(), encoding.output_values or ())
    ok = accepts[inverse.reshape(want.shape), chosen]
    values_out = encoding.output_values or ()
    _first_failure(ok, rows, encoding, want,
                   lambda: [[values_out[i] for i in row] for row in chosen.tolist()], tally)


def _compare_numbers(got: np.ndarray, expected: np.ndarray, want: np.ndarray,
                     encoding: Encoding, rows: np.ndarray, tally: Tally) -> None:
    """A numerical output: |model - program| <= NUMERIC_TOLERANCE * max(1, |program|) or
    equal, with `expected` the program's values as floats (`agree`'s float(b))."""
    with np.errstate(invalid="ignore"):
        error = np.abs(got - expected)
        ok = (got == expected) | (error <= NUMERIC_TOLERANCE * np.maximum(1.0, np.abs(expected)))
    error = np.where(got == expected, 0.0, error)
    finite = error[~np.isnan(error)]  # `agree`'s running max skips nan, as max() does
    if finite.size:
        tally.max_numeric_error = max(tally.max_numeric_error, float(finite.max()))
    _first_failure(ok, rows, encoding, want, got.tolist, tally)


def _acceptance(program_values: list, model_values: Sequence[Any]) -> np.ndarray:
    """(distinct program values, model output values) bools: `agree(model, program)`."""
    return np.array([[agree(m, p, False)[0] for m in model_values] for p in program_values],
                    dtype=bool).reshape(len(program_values), len(model_values))


def _first_failure(ok: np.ndarray, rows: np.ndarray, encoding: Encoding, want: np.ndarray,
                   decoded, tally: Tally) -> None:
    """Record the first position (in row order) where `ok` is False, unless one is
    recorded already, and count the rows with a False; `decoded()` gives the model's
    values as Python lists."""
    if ok.all():
        return
    tally.wrong += int(np.count_nonzero(~ok.all(axis=1)))
    if tally.disagreement is not None:
        return
    row, position = (int(i) for i in np.argwhere(~ok)[0])
    value = want[row, position]  # a NumPy scalar, or the object itself in an object column
    tally.disagreement = ([encoding.vocab[i] for i in rows[row].tolist()], position,
                          value.item() if isinstance(value, np.generic) else value,
                          decoded()[row][position])


def _compare_objects(want: np.ndarray, out: np.ndarray, encoding: Encoding,
                     rows: np.ndarray, tally: Tally) -> None:
    """An object column: `agree` per distinct value (a categorical output) or per element
    (a numerical one), as validation does."""
    if not encoding.numeric:
        try:
            _compare_categorical_objects(want, out, encoding, rows, tally)
            return
        except TypeError:  # an unhashable value: element by element below
            pass
    else:
        values = want.ravel().tolist()
        kinds = set(map(type, values))
        if kinds <= {int, float, bool}:  # numbers of mixed types: float(b), as `agree` does
            try:
                expected = np.array(values, dtype=np.float64).reshape(want.shape)
            except OverflowError:  # an int beyond float64: element by element below
                pass
            else:
                tally.output_types.update(kinds)  # type: ignore[union-attr]
                _compare_numbers(out[..., 0], expected, want, encoding, rows, tally)
                return
    if encoding.numeric:
        got = out[..., 0].tolist()
    else:
        values_out = encoding.output_values or ()
        got = [[values_out[i] for i in row] for row in out.argmax(axis=-1).tolist()]
    for r, (model_row, program_row) in enumerate(zip(got, want.tolist())):
        tally.output_types.update(map(type, program_row))  # type: ignore[union-attr]
        row_wrong = False
        for position, (a, b) in enumerate(zip(model_row, program_row)):
            same, error = agree(a, b, encoding.numeric)
            if encoding.numeric:
                tally.max_numeric_error = max(tally.max_numeric_error, error)
            row_wrong = row_wrong or not same
            if not same and tally.disagreement is None:
                tally.disagreement = ([encoding.vocab[i] for i in rows[r].tolist()], position,
                                      b, a)
        tally.wrong += row_wrong


def _compare_categorical_objects(want: np.ndarray, out: np.ndarray, encoding: Encoding,
                                 rows: np.ndarray, tally: Tally) -> None:
    """A categorical output whose program column mixes types (e.g. ints and None): each
    distinct value, keyed by its type too (True == 1 in Python, but a bool is not an
    int), gets its accepted model outputs once (`_acceptance`), then every position is
    looked up, as for a typed column. Raises TypeError on an unhashable value."""
    codes: dict[tuple[type, Any], int] = {}
    flat = np.fromiter((codes.setdefault((type(value), value), len(codes))
                        for value in want.ravel().tolist()), dtype=np.int64, count=want.size)
    tally.output_types.update(kind for kind, _ in codes)  # type: ignore[union-attr]
    accepts = _acceptance([value for _, value in codes], encoding.output_values or ())
    chosen = out.argmax(axis=-1)
    ok = accepts[flat.reshape(want.shape), chosen]
    values_out = encoding.output_values or ()
    _first_failure(ok, rows, encoding, want,
                   lambda: [[values_out[i] for i in row] for row in chosen.tolist()], tally)
