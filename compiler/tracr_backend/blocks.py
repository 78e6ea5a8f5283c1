"""Craft blocks rasp-sim builds itself, in tracr's residual-space vocabulary (tracr.craft).

- `signed_map_mlp`: a categorical -> numerical map of any sign. tracr's block writes f(x)
  into one hidden unit and applies ReLU, so negative values become 0 silently
  (google-deepmind/tracr#24). Here h+ = ReLU(sum_v f(v)[x=v]) and h- = ReLU(-sum_v f(v)[x=v]),
  output h+ - h-: exact, because exactly one indicator [x=v] is 1 (docs/compiler.md).
- `aggregate_head`: tracr's attention head with rasp-sim's default. For a categorical
  aggregate tracr forces default None and writes the zero vector on an empty row, which
  decodes as an arbitrary value (upstream issue 25), for a numerical one it forces 0; here
  the BOS key, attended exactly when nothing else is selected, carries the default
  (its one-hot, or the number) (docs/compiler.md).

The BOS invariant. tracr's heads give the BOS key the logit 0.5 * coldness through the
query's `one` direction, and assume that at the BOS position every s-op direction is zero
(its selector width scrubs what it writes there for that reason). A block that writes
something at BOS breaks it: the BOS key then also matches a predicate, gets 1.5 * coldness
and wins over the real keys (a silent miscompile that only some inputs show). Two kinds of
block write at BOS, and each gets its fix here:
- `gated_at_bos`: a discretising MLP (a map of a numerical s-op) reads `one`, so at BOS it
  would write f(grid point nearest 0); every hidden unit gets a negative weight on the BOS
  token's direction that switches it off there (and is multiplied by 0 everywhere else);
- `scrubbed`: a head whose default is carried by the BOS key also writes that default at
  the BOS query (which attends only BOS); an MLP right after it subtracts exactly that
  vector at the BOS position, as tracr's selector width does.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np
from tracr.craft import bases, transformers, vectorspace_fns

from .bases import typed
from .predicates import predicate_table

# The coldness of rasp-sim's heads: selected keys get this logit, BOS half of it, the others
# 0. tracr uses 100, which leaves weight e^-50 on BOS and e^-100 on every other key: a
# value 1e200 on an unselected key then leaks 4e156 into a mean. At 1,500 every weight
# that should be 0 is e^-750 or less, which is exactly 0 in float64 (and float32): gathers
# copy values bit for bit and means weight exactly the selected keys.
SOFTMAX_COLDNESS = 1500.0


def signed_map_mlp(input_space: bases.VectorSpaceWithBasis,
                   output_space: bases.VectorSpaceWithBasis,
                   f: Callable[[Any], Any], hidden_name: str) -> transformers.MLP:
    """MLP computing the number f(x) from the one-hot x, negative values included.
    Values where f gives None (undefined in rasp-sim) write 0."""
    bases.ensure_dims(output_space, num_dims=1, name="output_space")
    hidden = bases.VectorSpaceWithBasis([bases.BasisDirection(hidden_name, sign)
                                         for sign in (1, -1)])
    # hidden direction (name, s) holds ReLU(s * f(x)); out = sum_s s * h_s = h+ - h-.
    signs = np.array([d.value for d in hidden.basis], dtype=float)
    table = np.zeros((input_space.num_dims, 2))
    for row, direction in enumerate(input_space.basis):
        value = f(direction.value)
        if value is not None:
            table[row] = signs * float(value)
    first = vectorspace_fns.Linear(input_space, hidden, table)
    second = vectorspace_fns.Linear(hidden, output_space, signs[:, None])
    return transformers.MLP(first, second)


def _qk_with_bos(query_space: bases.VectorSpaceWithBasis, key_space: bases.VectorSpaceWithBasis,
                 bos_direction: bases.BasisDirection, one_direction: bases.BasisDirection,
                 predicate: Callable[[Any, Any], bool]) -> vectorspace_fns.ScalarBilinear:
    """Logits (x coldness): 1 for a selected key, 0 for the others, 0.5 for BOS (read by the
    query's `one` direction), so BOS wins only on an empty row (tracr's construction)."""
    queries = bases.join_vector_spaces(query_space, bases.VectorSpaceWithBasis([one_direction]))
    keys = bases.join_vector_spaces(key_space, bases.VectorSpaceWithBasis([bos_direction]))
    qk = np.zeros((queries.num_dims, keys.num_dims))
    rows = [queries.index_by_direction[q] for q in query_space.basis]
    columns = [keys.index_by_direction[k] for k in key_space.basis]
    selected = predicate_table(predicate, [k.value for k in key_space.basis],
                               [q.value for q in query_space.basis])
    qk[np.ix_(rows, columns)] = SOFTMAX_COLDNESS * selected
    qk[queries.index_by_direction[one_direction], keys.index_by_direction[bos_direction]] = \
        0.5 * SOFTMAX_COLDNESS
    return vectorspace_fns.ScalarBilinear(queries, keys, qk)


def aggregate_head(query_space: bases.VectorSpaceWithBasis,
                   key_space: bases.VectorSpaceWithBasis,
                   value_space: bases.VectorSpaceWithBasis,
                   output_space: bases.VectorSpaceWithBasis,
                   bos_direction: bases.BasisDirection, one_direction: bases.BasisDirection,
                   predicate: Callable[[Any, Any], bool], default: Any, causal: bool,
                   numerical: bool, scale: float = 1.0,
                   value_map: Callable[[Any], Any] | None = None) -> transformers.AttentionHead:
    """An aggregate whose empty rows give `default`: BOS, attended exactly then, carries it.

    Categorical: values are matched to outputs by value, so the output basis may hold the
    default as an extra direction (None: the zero vector). Numerical: the mean of the one
    value direction, BOS carrying the number `default`; where keys are selected BOS's
    weight is e^-50 of theirs, so it adds at most 2e-22 * |default|. With `value_map` f
    the value space is a categorical s-op x and the head averages f(x): the row of value
    x holds f(x) (its one-hot, or the number), and 0 where f is undefined (the program
    fails on inputs that select such a key)."""
    values = bases.join_vector_spaces(value_space, bases.VectorSpaceWithBasis([bos_direction]))
    if numerical:
        if value_map is None:
            bases.ensure_dims(value_space, num_dims=1, name="value_space")

        def weight(v: bases.BasisDirection) -> float:
            # a sum over a fixed width k is k x the mean: the values scaled, the default not
            if v == bos_direction:
                return float(default)
            value = 1.0 if value_map is None else value_map(v.value)  # the direction's number
            return 0.0 if value is None else float(scale) * float(value)
        ov = np.array([[weight(v)] for v in values.basis])
    else:
        label = output_space.basis[0].name
        ov = np.zeros((values.num_dims, output_space.num_dims))
        for i, v in enumerate(values.basis):
            target = bases.BasisDirection(label, typed(default) if v == bos_direction
                                          else v.value if value_map is None
                                          else value_map(v.value))
            if target in output_space and (v != bos_direction or default is not None):
                ov[i, output_space.index_by_direction[target]] = 1.0
    return transformers.AttentionHead(
        _qk_with_bos(query_space, key_space, bos_direction, one_direction, predicate),
        vectorspace_fns.Linear(values, output_space, ov), causal=causal)


def gated_at_bos(mlp: transformers.MLP, bos_direction: bases.BasisDirection,
                 one_direction: bases.BasisDirection) -> transformers.MLP:
    """`mlp` with every hidden unit switched off at the BOS position.

    At BOS every s-op input is 0 (the invariant above), so a unit's pre-activation there
    is its weight from `one`, w; a weight -(max(w, 0) + 1) from the BOS direction makes it
    at most -1, so ReLU gives exactly 0 there. Elsewhere the BOS direction is 0 and the
    unit is unchanged."""
    first = mlp.fst
    inputs = bases.join_vector_spaces(first.input_space,
                                      bases.VectorSpaceWithBasis([bos_direction]))
    matrix = np.zeros((inputs.num_dims, first.output_space.num_dims))
    for row, direction in enumerate(first.input_space.basis):
        matrix[inputs.index_by_direction[direction]] = first.matrix[row]
    from_one = (first.matrix[first.input_space.index_by_direction[one_direction]]
                if one_direction in first.input_space else np.zeros(matrix.shape[1]))
    matrix[inputs.index_by_direction[bos_direction]] = -(np.maximum(from_one, 0.0) + 1.0)
    return transformers.MLP(vectorspace_fns.Linear(inputs, first.output_space, matrix), mlp.snd)


def scrubbed(head: transformers.AttentionHead, written: np.ndarray,
             bos_direction: bases.BasisDirection, hidden_name: str
             ) -> transformers.SeriesWithResiduals:
    """`head`, then an MLP that subtracts `written` (what the head writes at the BOS query,
    a vector of its output space) at the BOS position: ReLU(BOS) is 1 there, 0 elsewhere."""
    output = head.w_ov.output_space
    hidden = bases.VectorSpaceWithBasis([bases.BasisDirection(hidden_name)])
    first = vectorspace_fns.Linear(bases.VectorSpaceWithBasis([bos_direction]), hidden,
                                   np.ones((1, 1)))
    second = vectorspace_fns.Linear(hidden, output, -np.asarray(written, float)[None, :])
    return transformers.SeriesWithResiduals([head, transformers.MLP(first, second)])


def written_at_bos(head: transformers.AttentionHead, bos_direction: bases.BasisDirection
                   ) -> np.ndarray:
    """What the head writes at the BOS query: its OV image of the BOS key (the BOS query
    attends only BOS, whose other value directions are 0 by the invariant)."""
    ov = head.w_ov
    if bos_direction not in ov.input_space:
        return np.zeros(ov.output_space.num_dims)
    return ov.matrix[ov.input_space.index_by_direction[bos_direction]]


# ---------------------------------------------------------------- continuous blocks

REGLU = "_reglu_"  # hidden directions (REGLU + label, (k, "act" | "gate")): unit k's pair


def reglu_mlp(units: list[tuple[dict, dict]], output_space: bases.VectorSpaceWithBasis,
              label: str) -> transformers.MLP:
    """A gated-ReLU MLP, out = sum_k relu(a_k . x) * (g_k . x), as a craft MLP.

    tracr's craft MLP has no gate, so each unit k is two hidden directions: "act" (a_k,
    the one written to the output) and "gate" (g_k, writing nothing); assemble.py pairs
    them into the weight format's gated MLP. `units` holds (a_k, g_k) as dicts from residual
    directions to weights. Only rasp-sim's assembler and forward read such blocks."""
    hidden_name = f"{REGLU}{label}"
    hidden = bases.VectorSpaceWithBasis(
        [bases.BasisDirection(hidden_name, (k, part)) for k in range(len(units))
         for part in ("act", "gate")])
    inputs = bases.VectorSpaceWithBasis(sorted({d for act, gate in units for d in (*act, *gate)}))
    first = np.zeros((inputs.num_dims, hidden.num_dims))
    second = np.zeros((hidden.num_dims, output_space.num_dims))
    for k, (act, gate) in enumerate(units):
        for part, weights in (("act", act), ("gate", gate)):
            column = hidden.index_by_direction[bases.BasisDirection(hidden_name, (k, part))]
            for direction, weight in weights.items():
                first[inputs.index_by_direction[direction], column] += weight
        second[hidden.index_by_direction[bases.BasisDirection(hidden_name, (k, "act"))], 0] = 1.0
    return transformers.MLP(vectorspace_fns.Linear(inputs, hidden, first),
                            vectorspace_fns.Linear(hidden, output_space, second))


@dataclasses.dataclass
class NormedMLP(transformers.MLP):
    """A craft MLP whose input is first normalised over the directions `normalised` by a
    LayerNorm (gain 1, bias 0, `eps`), the other directions passing through: the weight
    format's MLP block with a LayerNorm of those residual columns (assemble.py). Only
    rasp-sim's allocation and assembler know it; two in one layer are never combined."""

    normalised: tuple[bases.BasisDirection, ...] = ()
    eps: float = 1e-5


def layer_norm_pick(row: list[bases.BasisDirection], slots: dict[int, int],
                    indices_label: str, output_space: bases.VectorSpaceWithBasis, eps: float,
                    label: str) -> NormedMLP:
    """LayerNorm of the gathered row (the directions `row`, slot j holding the row's j-th
    value), then the query's own entry n_slot: units relu(+-n_j) gated by +-[index is in
    slot j] (a readout of the indices one-hot, 0 at BOS and where no row is used)."""
    units: list[tuple[dict, dict]] = []
    for j, direction in enumerate(row):
        gate = {bases.BasisDirection(indices_label, q): 1.0 for q, s in slots.items() if s == j}
        if gate:
            units += [({direction: 1.0}, gate), ({direction: -1.0}, {d: -1.0 for d in gate})]
    mlp = reglu_mlp(units, output_space, label)
    return NormedMLP(mlp.fst, mlp.snd, normalised=tuple(row), eps=eps)


def softmax_pick(score: bases.BasisDirection, query_space: bases.VectorSpaceWithBasis,
                 key_space: bases.VectorSpaceWithBasis, predicate: Callable[[Any, Any], bool],
                 indices_space: bases.VectorSpaceWithBasis, output_space: bases.VectorSpaceWithBasis,
                 bos_direction: bases.BasisDirection, one_direction: bases.BasisDirection,
                 margin: float, causal: bool, label: str) -> transformers.SeriesWithResiduals:
    """softmax over the selected keys of `score`, taken at the query's own position.

    The head's logit for key k is score_k (query `one` x key score), minus `margin` where
    the predicate rejects k (the query's one-hot against the key's), and -margin/2 for BOS:
    with margin >= 2 max|score| + 1500 every rejected key (and BOS, unless nothing is
    selected) has weight e^-750 or less, i.e. exactly 0 in float64, and selected keys' logits
    are the scores themselves (the mask adds exactly 0 there). The value is the key's
    position one-hot, so the head writes the whole distribution; the MLP after it picks the
    query's own entry, relu(p_j) * [index = j] (p_j >= 0)."""
    queries = bases.join_vector_spaces(query_space, bases.VectorSpaceWithBasis([one_direction]))
    keys = bases.join_vector_spaces(key_space, bases.VectorSpaceWithBasis([score, bos_direction]))
    qk = np.zeros((queries.num_dims, keys.num_dims))
    one, index = queries.index_by_direction[one_direction], keys.index_by_direction
    qk[one, index[score]] = 1.0
    qk[one, index[bos_direction]] = -margin / 2
    rows = [queries.index_by_direction[q] for q in query_space.basis]
    columns = [index[k] for k in key_space.basis]
    selected = predicate_table(predicate, [k.value for k in key_space.basis],
                               [q.value for q in query_space.basis])
    qk[np.ix_(rows, columns)] = np.where(selected, qk[np.ix_(rows, columns)], -margin)
    weights_name = f"_softmax_{label}"
    weights = bases.VectorSpaceWithBasis([bases.BasisDirection(weights_name, d.value)
                                          for d in indices_space.basis])
    head = transformers.AttentionHead(
        vectorspace_fns.ScalarBilinear(queries, keys, qk),
        vectorspace_fns.Linear(indices_space, weights, np.eye(indices_space.num_dims)),
        causal=causal)
    units = [({bases.BasisDirection(weights_name, d.value): 1.0}, {d: 1.0})
             for d in indices_space.basis]
    return transformers.SeriesWithResiduals([head, reglu_mlp(units, output_space, label)])


def unique_clean_bos_unit(block: transformers.SeriesWithResiduals, label: str
                          ) -> transformers.SeriesWithResiduals:
    """tracr's selector width with its BOS-cleaning hidden unit renamed after `label`.

    tracr names that unit "_hidden_clean_bos_" in every selector width, so two selector
    widths in one layer share it once their MLPs are combined in parallel: the unit then
    reads BOS twice and subtracts both blocks' vectors twice, leaving -1 at BOS in each
    output (a later head keyed on either then matches BOS: a miscompile found by the
    random-program test)."""
    attention, mlp = block.blocks
    def rename(space: bases.VectorSpaceWithBasis) -> bases.VectorSpaceWithBasis:
        return bases.VectorSpaceWithBasis([
            bases.BasisDirection(f"_hidden_clean_bos_{label}", d.value)
            if d.name == "_hidden_clean_bos_" else d for d in space.basis])
    hidden = rename(mlp.fst.output_space)
    first = vectorspace_fns.Linear(mlp.fst.input_space, hidden, mlp.fst.matrix)
    second = vectorspace_fns.Linear(hidden, mlp.snd.output_space, mlp.snd.matrix)
    return transformers.SeriesWithResiduals([attention, transformers.MLP(first, second)])
