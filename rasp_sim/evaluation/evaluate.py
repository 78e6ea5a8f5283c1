"""Evaluate s-op graphs (`rasp_sim.core.graph`) on batches of inputs, vectorised with NumPy.

Public API
----------
`evaluate(roots, inputs, *, exact=False, memory_limit_bytes=DEFAULT_MEMORY_LIMIT)`
    `roots`: a sequence of graph nodes; `inputs`: a sequence of inputs, each a non-empty
    sequence of atoms (a str is a sequence of characters). Returns `out[i][r]`, the value
    of `roots[r]` on `inputs[i]` as plain Python values: an s-op gives a list of atoms
    (int, float, str, bool, or Fraction in exact mode), a selector a list of n rows of
    bools, row q being query q (`M[q][k] = keys[k] op queries[q]`).
`evaluate_one(root, input, **same)`: the value of one node on one input.
`evaluate_groups(roots, inputs, **same, first_index=0)`: `evaluate`'s arrays, one length
    group at a time, with the positions of the group's inputs (what the CLI formats).
`evaluate_batch(roots, batch, **same) -> dict[node, np.ndarray]`: the array-level API for
    benchmarks and the compiler. `batch` is a 2-D array or a list of equal-length inputs;
    an s-op's value is a (batch, n) array, a selector's a (batch, n, n) bool array. The
    array dtypes are those of `rasp_sim.evaluation.columns`.
`evaluate_defined(roots, batch, **same) -> (dict[node, np.ndarray], positions)`:
    `evaluate_batch` on the inputs the program does not fail on, and their positions
    (validation: failing inputs are outside the program's domain), found in bulk.
`estimate_bytes(roots, n, batch=1)`: the memory estimate for `batch` inputs of length n.
`traffic_bytes(roots, n)`: the bytes of values read and written per input (benchmarks).

How it runs: inputs are grouped by length; each group is evaluated node by node in
dependency order (`graph.ancestors`: only what the roots need, each node once, memoised by
identity), a value is dropped once its last consumer has run, and every node is one NumPy
operation over the whole group (rasp_sim/evaluation/). Values follow `rasp_sim.core.semantics`
exactly, including element types; aggregate means are bit-equal to the original's
left-to-right sums (rasp_sim/evaluation/attention.py). `exact=True` computes with
Fractions instead of floats (rasp_sim/core/semantics.py).

Errors: a failing node raises its RaspError with the node's span and the index (in
`inputs`) and an abbreviation of the first input it fails on. Memory: before a group runs,
the peak of the live values is estimated (what the arrays hold: 8 bytes per s-op element,
1 per selector element, plus the temporaries of the node being computed; the values that
do not depend on the input once, not per input); a group that exceeds
`memory_limit_bytes` is split into chunks that fit, and if one input alone exceeds it a
RaspResourceError says so and how to raise the limit. Chunks are also kept near 32 MiB
whatever the limit, which measured fastest. Values that do not depend on the input
(indices, constants, `length`, `select(indices, 0, ==)`) are computed once per group, by
its first chunk, as a single row that later chunks reuse and NumPy broadcasts; they are
kept, read-only, for later calls on inputs of the same length (`_Invariants`), so a program
run on one input at a time computes them once per length.
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from ..core import graph, semantics
from . import fusion
from ..base.errors import RaspError, RaspResourceError, RaspTypeError, Span
from .attention import aggregate, select
from .columns import (CHARACTERS, MixedColumn, as_array, concat_rows, constant, from_objects, object_column,
                      python_rows)
from .elementwise import apply_map
from .texts import Texts, one_length_texts
from ..base.text import short_repr

DEFAULT_MEMORY_LIMIT = 4 * 2**30
# Chunks are also kept near this size even under a high limit: NumPy's large temporaries
# cost page faults and memory traffic, and measured throughput is best around here.
_WORKING_SET_BYTES = 32 * 2**20
# The values that read no input, kept from one call to the next (`_Invariants`): at most
# this many (program, length, mode) entries and bytes (by `_Plan.peak_bytes`' estimate).
_INVARIANT_ENTRIES = 256
_INVARIANT_BYTES = 16 * 2**20


# --------------------------------------------------------------------------- public API


def evaluate(
    roots: Sequence[graph.Node],
    inputs: Sequence[Any],
    *,
    exact: bool = False,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
) -> list[list[Any]]:
    """The value of every root on every input, as plain Python values (`out[i][r]`)."""
    out: list[list[Any]] = [[None] * len(roots) for _ in inputs]
    for ids, arrays in evaluate_groups(roots, inputs, exact=exact,
                                       memory_limit_bytes=memory_limit_bytes):
        for r, root in enumerate(roots):
            for i, value in zip(ids, python_rows(arrays[root])):
                out[i][r] = value
    return out


def evaluate_values(
    root: graph.Node,
    inputs: Sequence[Any] | np.ndarray,
    *,
    exact: bool = False,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
) -> list[Any]:
    """`evaluate`'s values of one root (`out[i][0]`), without its list per input."""
    plan = _plan((root,))
    if isinstance(inputs, Texts):  # one group, read already (`Program.run`'s usual input)
        return python_rows(_run_group(plan, inputs, range(len(inputs)), exact,
                                      memory_limit_bytes)[root])
    out: list[Any] = [None] * len(inputs)
    for ids, group in _length_groups(inputs, 0):
        values = python_rows(_run_group(plan, group, ids, exact, memory_limit_bytes)[root])
        if len(ids) == len(out):  # one length: the values of every input, in order
            return values
        for i, value in zip(ids, values):
            out[i] = value
    return out


def evaluate_groups(
    roots: Sequence[graph.Node],
    inputs: Sequence[Any] | np.ndarray,
    *,
    exact: bool = False,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
    first_index: int = 0,
) -> Iterator[tuple[list[int], dict[graph.Node, np.ndarray]]]:
    """`evaluate` one length group at a time, as arrays: the positions in `inputs` of the
    group's inputs, and each root's value on them (row k is input ids[k]). An int64 or float64
    matrix of inputs (row k is input k) is one group, run without per-input work. Errors name
    the failing input as `first_index` + its position (a caller evaluating a slice of a
    larger batch passes the slice's start)."""
    plan = _plan(tuple(roots))
    for ids, group in _length_groups(inputs, first_index):
        names = [first_index + i for i in ids] if first_index else ids
        yield ids, _run_group(plan, group, names, exact, memory_limit_bytes)


def evaluate_one(root: graph.Node, input: Any, **options: Any) -> Any:
    """The value of `root` on one input (what the REPL displays)."""
    return evaluate([root], [input], **options)[0][0]


def evaluate_batch(
    roots: Sequence[graph.Node],
    batch: Any,
    *,
    exact: bool = False,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
) -> dict[graph.Node, np.ndarray]:
    """Array-level evaluation of a batch of equal-length inputs."""
    plan = _plan(tuple(roots))
    rows: Any = one_length_texts(batch) if isinstance(batch, (list, tuple)) else None
    if rows is None:
        if isinstance(batch, np.ndarray) and batch.ndim == 2 and len(batch) and not batch.shape[1]:
            raise _empty_input(0)  # rows of no positions
        if isinstance(batch, np.ndarray):
            rows = batch  # (its rows have one length)
        else:
            rows = _group_rows(_as_inputs(batch, 0))
            if len(set(map(len, rows))) > 1:
                raise RaspTypeError("evaluate_batch needs inputs of one length; use evaluate "
                                    "for mixed lengths")
    # (a range: a list of 10,000 positions, for messages only, cost 0.01 us an input)
    return _run_group(plan, rows, range(len(rows)), exact, memory_limit_bytes)


def evaluate_defined(
    roots: Sequence[graph.Node],
    batch: Any,
    *,
    exact: bool = False,
    memory_limit_bytes: int = DEFAULT_MEMORY_LIMIT,
) -> tuple[dict[graph.Node, np.ndarray], np.ndarray]:
    """`evaluate_batch` on the inputs of `batch` (one length) on which the program does not
    fail, and their positions in `batch`. A node that fails drops the inputs it fails on
    (found by halving the batch on that node alone) and the rest go on, so k failing
    inputs cost one pass of the program plus O(k log B) evaluations of single nodes, not
    a pass per input (what validation needs: failing inputs are outside the domain)."""
    plan = _plan(tuple(roots))
    rows = batch if isinstance(batch, np.ndarray) else _group_rows(_as_inputs(batch, 0))
    if len(set(map(len, rows))) > 1:
        raise RaspTypeError("evaluate_defined needs inputs of one length")
    n = len(rows[0])
    chunk = _chunk_size(plan, n, memory_limit_bytes)
    parts = [_run_chunk_defined(plan, rows[s : s + chunk], s, exact)
             for s in range(0, len(rows), chunk)]
    parts = [(values, kept) for values, kept in parts if len(kept)]
    if not parts:
        return ({root: np.empty((0, n, n) if isinstance(root, graph.Selector) else (0, n))
                 for root in plan.roots}, np.zeros(0, dtype=np.int64))
    values = {root: concat_rows([p[root] for p, _ in parts]) for root in plan.roots}
    return values, np.concatenate([kept for _, kept in parts])


def _run_chunk_defined(
    plan: _Plan, rows: Any, first: int, exact: bool
) -> tuple[dict[graph.Node, np.ndarray], np.ndarray]:
    kept = np.arange(first, first + len(rows))
    values: dict[graph.Node, np.ndarray] = {}
    for step, node in enumerate(plan.order):
        try:
            values[node] = _compute(node, values, rows, exact, plan.fused.get(node))
        except RaspError:
            failing = set(_failing_rows(plan, node, values, rows, list(range(len(rows))), exact))
            ok = [r for r in range(len(rows)) if r not in failing]
            if not ok:
                return {}, kept[:0]
            rows, kept = _take_rows(rows, ok), kept[ok]
            values = {k: _take(v, ok) for k, v in values.items()}
            values[node] = _compute(node, values, rows, exact, plan.fused.get(node))
        for dropped in plan.drops[step]:
            values.pop(dropped, None)
    return {root: _full_batch(values[root], len(rows)) for root in plan.roots}, kept


def _failing_rows(plan: _Plan, node: graph.Node, values: dict, rows: Any,
                  positions: list[int], exact: bool) -> list[int]:
    """The positions among `positions` of the rows `node` fails on, by halving."""
    sub = {c: _take(values[c], positions) for c in plan.inputs(node)}
    try:
        _compute(node, sub, _take_rows(rows, positions), exact, plan.fused.get(node))
        return []
    except RaspError:
        if len(positions) == 1:
            return positions
        half = len(positions) // 2
        return (_failing_rows(plan, node, values, rows, positions[:half], exact)
                + _failing_rows(plan, node, values, rows, positions[half:], exact))


def _take(value: np.ndarray, positions: list[int]) -> np.ndarray:
    """The rows at `positions` of a value (one shared row stays as it is)."""
    return value[positions] if value.shape[0] > 1 else value


def _take_rows(rows: Any, positions: list[int]) -> Any:
    return rows[positions] if isinstance(rows, np.ndarray) else [rows[i] for i in positions]


def estimate_bytes(roots: Sequence[graph.Node], n: int, batch: int = 1) -> int:
    """Peak memory, in bytes, of evaluating `roots` on `batch` inputs of length n in one
    chunk."""
    per_input, fixed = _plan(tuple(roots)).peak_bytes(n)
    return fixed + batch * per_input


def traffic_bytes(roots: Sequence[graph.Node], n: int) -> int:
    """Bytes of value arrays read and written per input of length n: each node that
    depends on the input writes its value and reads its inputs' (the values shared by the
    batch are counted once per batch, so not at all per input; temporaries are left out).
    Divided by memory bandwidth, a lower bound on the time per input (benchmarks)."""
    plan = _plan(tuple(roots))
    total = 0
    for node in plan.order:
        if node not in plan.invariant:
            total += _value_bytes(node, n) + sum(
                _value_bytes(c, n) for c in plan.inputs(node) if c not in plan.invariant)
    return total


# ------------------------------------------------------------------------------ planning


@functools.lru_cache(maxsize=64)
def _plan(roots: tuple[graph.Node, ...]) -> "_Plan":
    """The plan of `roots`, made once per graph: nodes hash by identity and never change
    (graph.py), so a notebook, the REPL or a loop evaluating one program again and again
    plans it once (0.4 ms for sort, tens of ms for the library's larger constructions).
    Plans are read, never changed, by the evaluation."""
    return _Plan(roots)


@dataclass(eq=False)  # hashed by identity: `_chunk_size` caches by plan
class _Plan:
    """The nodes to run, in order, and when each value can be dropped."""

    roots: tuple[graph.Node, ...]

    def __post_init__(self) -> None:
        self.fused = fusion.find(list(graph.ancestors(self.roots)))
        self.order = list(graph.ancestors(self.roots, self.inputs))
        last_use: dict[graph.Node, int] = {}
        for step, node in enumerate(self.order):
            for child in self.inputs(node):
                last_use[child] = step
        keep = set(self.roots)
        # Nodes that read no tokens: the same single row for every chunk of a group.
        self.invariant: set[graph.Node] = set()
        for node in self.order:
            if not isinstance(node, graph.Tokens) and all(c in self.invariant for c in self.inputs(node)):
                self.invariant.add(node)
        self.drops: list[list[graph.Node]] = [[] for _ in self.order]
        for node, step in last_use.items():
            if node not in keep:
                self.drops[step].append(node)
        # (node, the values to drop once it has run), in order: every node, or those
        # that read the input (`_run_chunk`)
        self.steps = list(zip(self.order, self.drops))
        self.varying_steps = [step for step in self.steps if step[0] not in self.invariant]

    def inputs(self, node: graph.Node) -> Sequence[graph.Node]:
        """The values `node` is computed from: its children, or its fused pattern's inputs."""
        fused = self.fused.get(node)
        return node.children() if fused is None else fused.inputs

    def peak_bytes(self, n: int) -> tuple[int, int]:
        """(bytes per input, fixed bytes) at the peak of evaluating inputs of length n.

        What the arrays hold: 8 bytes per s-op element (int64, float64, object pointers;
        a mixed column's mask adds 1), 1 per selector element (bool). The invariant values
        are one row for the whole group, kept while it runs: the fixed part. Per input,
        the live values plus the temporaries of the node being computed."""
        fixed = sum(_value_bytes(node, n) for node in self.invariant)
        fixed += max((_temporary_bytes(node, n, self) for node in self.invariant), default=0)
        live = peak = 0
        for step, node in enumerate(self.order):
            if node in self.invariant:
                continue
            size = _value_bytes(node, n)
            peak = max(peak, live + size + _temporary_bytes(node, n, self))
            live += size - sum(_value_bytes(d, n) for d in set(self.drops[step])
                               if d not in self.invariant)
        return peak, fixed


_SOP_ELEMENT_BYTES = 8  # int64, float64, or an object pointer
_SELECTOR_ELEMENT_BYTES = 1  # bool


def _value_bytes(node: graph.Node, n: int) -> int:
    if isinstance(node, graph.Selector):
        return n * n * _SELECTOR_ELEMENT_BYTES
    return n * _SOP_ELEMENT_BYTES


def _temporary_bytes(node: graph.Node, n: int, plan: _Plan) -> int:
    """The largest temporary of computing `node`, per input: an aggregate through a
    selector of its own usually casts it to float32 for a matrix product (n^2 float32s;
    float means that are not integers mask the values as n^2 float64s, twice that);
    through a selector shared by the batch, or fused (evaluation/fusion.py), it gathers
    rows (a few n); a fused equality width counts values in a table of up to 4n + 256
    slots per input, or sorts (input, value) pairs (measured: 0.8-2x of 4n int64s over
    value ranges from 8 to 10^6). Selects write only their result."""
    if (isinstance(node, graph.Aggregate) and node.selector not in plan.invariant
            and node not in plan.fused):
        return n * n * 4
    fused = plan.fused.get(node)
    if fused is not None and fused.kind == "equal width":
        return 4 * n * _SOP_ELEMENT_BYTES
    return 2 * n * _SOP_ELEMENT_BYTES


# ------------------------------------------------------------------------------- running


def _length_groups(inputs: Sequence[Any] | np.ndarray,
                   first_index: int) -> Iterator[tuple[list[int], Any]]:
    """The inputs by length: (positions in `inputs`, the group's rows as `_run_group` takes
    them) per length, each group stacked only when its turn comes. A non-empty int64,
    float64 or one-character string matrix (e.g. a file of integer or float lists read in
    bulk) is one group already, taken whole without per-input work."""
    if (isinstance(inputs, np.ndarray) and inputs.ndim == 2
            and inputs.dtype in (np.int64, np.float64, CHARACTERS) and inputs.size > 0):
        yield list(range(len(inputs))), inputs
        return
    texts = None if isinstance(inputs, np.ndarray) else one_length_texts(inputs)
    if texts is not None:  # strs of one length (one input): their characters read once
        yield list(range(len(inputs))), texts
        return
    rows = _as_inputs(inputs, first_index)
    lengths = list(map(len, rows))
    if len(set(lengths)) == 1:  # a batch of one length: one group, in order
        yield list(range(len(rows))), _group_rows(rows)
        return
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, length in enumerate(lengths):
        by_length[length].append(i)
    for ids in by_length.values():
        yield ids, _group_rows([rows[i] for i in ids])


def _as_inputs(inputs: Sequence[Any] | np.ndarray, first_index: int) -> list:
    """Every input checked and as `_group_rows` takes it (input i named first_index + i);
    a list of non-empty strings as it is, checked at C speed."""
    if set(map(type, inputs)) == {str} and all(inputs):
        return list(inputs)
    return [_as_input(x, first_index + i) for i, x in enumerate(inputs)]


def _as_input(x: Any, i: int) -> Sequence[Any]:
    if isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.kind == "i":
        pass  # an integer row stays an array: a group of them is stacked whole (_group_rows)
    elif not isinstance(x, str):
        try:
            if any(issubclass(t, np.generic) for t in set(map(type, x))):
                x = [v.item() if isinstance(v, np.generic) else v for v in x]
            else:
                x = list(x)
        except TypeError:
            raise RaspTypeError(f"input {i} is not a sequence: {short_repr(x, 60)}") from None
    if len(x) == 0:
        raise _empty_input(i)
    return x


def _empty_input(i: int) -> RaspTypeError:
    return RaspTypeError(f"input {i} is empty: inputs must be non-empty sequences")


def _group_rows(rows: list) -> Any:
    """A group's inputs as `_run_group` takes them: integer arrays (1-D, from `_as_input`)
    stacked into one 2-D array, which `_tokens` reads without looking at each element;
    lists of Python atoms otherwise."""
    arrays = [issubclass(t, np.ndarray) for t in set(map(type, rows))]  # types at C speed
    if any(arrays):
        if all(arrays):
            return np.stack(rows).astype(np.int64, copy=False)
        return [row.tolist() if isinstance(row, np.ndarray) else row for row in rows]
    return rows


def _run_group(
    plan: _Plan, rows: Any, ids: Sequence[int], exact: bool, limit: int
) -> dict[graph.Node, np.ndarray]:
    n = len(rows[0])
    chunk = _chunk_size(plan, n, limit)
    key = (plan.roots, n, exact)
    kept = _INVARIANTS.get(key)
    # the invariant values: kept from an earlier call, else computed by chunk 1
    shared: dict[graph.Node, Any] = {} if kept is None else kept
    if len(rows) <= chunk:  # one chunk (one input)
        values = _run_chunk(plan, rows, ids, exact, shared)
    else:
        parts = [_run_chunk(plan, _chunk_rows(rows, s, s + chunk), ids[s : s + chunk], exact,
                            shared)
                 for s in range(0, len(rows), chunk)]
        values = {root: concat_rows([p[root] for p in parts]) for root in plan.roots}
    if kept is None:
        _INVARIANTS.put(key, shared, plan.peak_bytes(n)[1])
    return values


def _chunk_rows(rows: Any, start: int, stop: int) -> Any:
    """A group's rows start to stop (strs with their characters: `Texts.rows`)."""
    return rows.rows(start, stop) if isinstance(rows, Texts) else rows[start:stop]


class _Invariants:
    """The invariant values of recent groups, by (roots, length, exact), least recently
    used dropped first: a program run on one input at a time (`Program.run` in a
    notebook, the REPL) computes its indices, constants, `length` and selectors such as
    reverse's once per length, not once per call (reverse at n = 64: about 80 us of the
    call). The values are made read-only: every later call reads the same arrays."""

    def __init__(self, entries: int, budget: int):
        self._values: OrderedDict[tuple, tuple[dict[graph.Node, Any], int]] = OrderedDict()
        self._entries, self._budget, self._bytes = entries, budget, 0
        self._lock = threading.Lock()  # threads evaluating at once share the cache

    def get(self, key: tuple) -> dict[graph.Node, Any] | None:
        found = self._values.get(key)  # single C calls, atomic: no lock to read
        if found is None:
            return None
        try:
            self._values.move_to_end(key)  # used last: dropped last
        except KeyError:  # another thread dropped it meanwhile
            pass
        return found[0]

    def put(self, key: tuple, values: dict[graph.Node, Any], size: int) -> None:
        if size > self._budget:
            return
        for value in values.values():
            for array in _arrays(value):
                array.flags.writeable = False
        with self._lock:
            if key in self._values:
                return
            self._values[key] = (values, size)
            self._bytes += size
            while self._bytes > self._budget or len(self._values) > self._entries:
                self._bytes -= self._values.popitem(last=False)[1][1]


def _arrays(value: Any) -> tuple[np.ndarray, ...]:
    """The arrays a column holds (a mixed column's two)."""
    return (value.values, value.ints) if isinstance(value, MixedColumn) else (value,)


_INVARIANTS = _Invariants(_INVARIANT_ENTRIES, _INVARIANT_BYTES)


@functools.lru_cache(maxsize=1024)
def _chunk_size(plan: _Plan, n: int, limit: int) -> int:
    """Inputs of length n per chunk, within the memory limit and near the working set;
    once per plan, length and limit (`peak_bytes` walks the whole plan)."""
    per_input, fixed = plan.peak_bytes(n)
    if fixed + per_input > limit:
        raise RaspResourceError(
            f"evaluating this program on one input of length {n} needs about "
            f"{fixed + per_input:,} bytes, above the memory limit of {limit:,} bytes; raise it "
            "with memory_limit_bytes= (rasp-sim: --memory-limit)"
        )
    return max(1, (min(limit, max(_WORKING_SET_BYTES, 2 * fixed)) - fixed) // max(per_input, 1))


def _run_chunk(
    plan: _Plan, rows: Any, ids: Sequence[int], exact: bool, shared: dict[graph.Node, np.ndarray]
) -> dict[graph.Node, np.ndarray]:
    values: dict[graph.Node, np.ndarray] = dict(shared)
    # once the invariant values are known (an earlier chunk or call), only the others run
    steps = plan.varying_steps if len(shared) == len(plan.invariant) else plan.steps
    for node, dropped in steps:
        values[node] = _compute_located(plan, node, values, rows, ids, exact)
        if node in plan.invariant:
            shared[node] = values[node]
        for done in dropped:
            values.pop(done, None)
    return {root: _full_batch(values[root], len(rows)) for root in plan.roots}


def _compute_located(
    plan: _Plan, node: graph.Node, values: dict, rows: Any, ids: Sequence[int], exact: bool
) -> np.ndarray:
    """`_compute`, with a failure located at the first failing input and a span."""
    try:
        return _compute(node, values, rows, exact, plan.fused.get(node))
    except RaspError as exc:
        error = _locate(plan, node, values, rows, ids, exact, exc)
        raise error.with_span(_first_user_span(plan, node)) from None
    except MemoryError:
        raise RaspResourceError(
            "out of memory; lower memory_limit_bytes (rasp-sim: --memory-limit) so "
            "that batches are split into smaller chunks", node.span
        ) from None


def _full_batch(value: Any, b: int) -> np.ndarray:
    """A root's value as handed out: an ndarray (a mixed int/float column as its atoms),
    one row for the batch broadcast (read-only) to every input. The arrays the caller
    must not write are read-only already: the kept invariant values (`_Invariants`) and
    the caller's own tokens (`_tokens`)."""
    array = as_array(value)
    if array.shape[0] == b:
        return array
    return np.broadcast_to(array, (b,) + array.shape[1:])


def _locate(
    plan: _Plan, node: graph.Node, values: dict, rows: Any, ids: Sequence[int], exact: bool,
    exc: RaspError,
) -> RaspError:
    """Re-run the failing node input by input to name the first input it fails on."""
    for r in range(len(rows)):
        sub = {c: _row(values[c], r) for c in plan.inputs(node)}
        try:
            _compute(node, sub, rows[r : r + 1], exact, plan.fused.get(node))
        except RaspError as err:
            where = f"input {ids[r]} ({short_repr(rows[r], 60)})"
            located = type(err)(f"{err.message}, on {where}", err.span or node.span)
            located.notes = err.notes
            return located
    return exc.with_span(node.span)


def _first_user_span(plan: _Plan, node: graph.Node) -> Span | None:
    """Where `node` is used, for nodes without a span of their own: the base values
    (`tokens_float`, ...) are shared by every program, so their failures are located at
    the first expression of the program that reads them, as written (not as fused: a
    fused pattern reads its inputs at its last node)."""
    for user in graph.ancestors(plan.roots):
        if user.span is not None and any(child is node for child in user.children()):
            return user.span
    return None


def _row(value: np.ndarray, r: int) -> np.ndarray:
    return value[r : r + 1] if value.shape[0] > 1 else value


def _compute(node: graph.Node, values: dict, rows: Any, exact: bool,
             fused: fusion.Fused | None = None) -> np.ndarray:
    n = len(rows[0])
    if fused is not None:
        return fusion.compute(fused, node, [values[c] for c in fused.inputs], n, exact)
    if isinstance(node, graph.Tokens):
        return _tokens(rows, node.kind, exact)
    # Values that are the same for every input of the group (indices, constants, and
    # everything computed from them alone) are kept as one row, shape (1, n[, n]), and
    # broadcast by NumPy: e.g. `length` and `select(indices, 0, ==)` are computed once.
    if isinstance(node, graph.Indices):
        return np.arange(n, dtype=np.int64)[None, :]
    if isinstance(node, graph.Full):
        return constant(node.value, (1, n), exact=exact)
    if isinstance(node, graph.Map):
        return apply_map(node.op, [values[c] for c in node.inputs], node.params, exact)
    if isinstance(node, graph.Select):
        return select(values[node.keys], values[node.queries], node.op, exact)
    if isinstance(node, graph.SelectorAnd):
        return values[node.left] & values[node.right]
    if isinstance(node, graph.SelectorOr):
        return values[node.left] | values[node.right]
    if isinstance(node, graph.SelectorNot):
        return ~values[node.operand]
    if isinstance(node, graph.Aggregate):
        return aggregate(values[node.selector], values[node.values], node.default, node.reduction, exact)
    raise TypeError(f"not a graph node: {node!r}")


def _tokens(rows: Any, kind: str, exact: bool) -> np.ndarray:
    """`tokens_<kind>` of a group of equal-length inputs."""
    if isinstance(rows, np.ndarray):
        if kind in ("asis", "int") and rows.dtype.kind == "i":
            return rows.astype(np.int64)
        if kind in ("asis", "float") and rows.dtype.kind == "f" and not exact:
            return rows.astype(np.float64)
        if kind in ("asis", "str") and rows.dtype == CHARACTERS and rows.view(np.uint32).all():
            # what the joined strings below give (an element "" may be "\0"); the caller's
            # own array, which a result that is the tokens must not let it write through
            tokens = rows.view()
            tokens.flags.writeable = False
            return tokens
        rows = rows.tolist()
    if isinstance(rows, Texts) and kind in ("asis", "str"):
        return rows.characters
    text = _joined(rows) if kind in ("asis", "str") else None
    if text is not None and "\0" not in text:
        return np.array([text]).view(CHARACTERS).reshape(len(rows), len(rows[0]))
    # (a text input's row is a str: beside list rows, NumPy refuses the ragged array)
    if kind == "float" and not exact and not any(isinstance(r, str) for r in rows):
        numbers = np.array(rows)  # float(x) of ints, floats and bools is NumPy's cast
        if numbers.dtype.kind in "bif" and numbers.ndim == 2:
            return numbers.astype(np.float64)
    if kind in ("asis", "int") and all(type(x) is int for r in rows for x in r):
        try:
            return np.array(rows, dtype=np.int64)
        except OverflowError:
            pass
    shape = (len(rows), len(rows[0]))
    items = (semantics.convert_token(kind, x, exact=exact) for r in rows for x in r)
    return from_objects(object_column(items, shape), exact=exact)


def _joined(rows: Any) -> str | None:
    """A group's rows joined, if they are all strs (of one length, as a group's rows are),
    else None: the join is the check, with no pass over the rows' types of its own (the
    input was checked by `_as_inputs` already where it came as strs)."""
    try:
        return "".join(rows)
    except TypeError:  # a row that is not a str: a list of atoms
        return None
