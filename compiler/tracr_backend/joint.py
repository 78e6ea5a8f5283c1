"""Maps of several s-ops on merged values: decided where their operands meet, or refused.

A map of several s-ops is one lookup table over its operands' stored values (bases.py),
and a stored value of a numerical s-op may stand for near-equal floats (0.4 and
0.4000000000000001). Where the map sends two such floats to different values (`m *
(indices + 1) == 1.2`), the table is exact only if the pair never meets the other
operand's value at one position. The product of the value sets cannot tell: it pairs
values that never meet (Dyck's depth, a difference of prefix means times `indices + 1`,
is an integer wherever the two meet), so refusing every such pair would refuse Dyck, and
leaving them to validation let a sampled validation write a wrong model as validated.

So each such map (`ValueSets.undecided`) is decided on the values that do meet: its
operands are evaluated by the interpreter on every input of the domain, and every
distinct tuple of values found at one position must give, through the stored values
that carry it, what the program gives (`ValueSets.misread`); otherwise the compile is
refused, naming the map, the values, an input where they meet and the map's line. This
costs one interpreter pass over the domain, so it runs only up to `JOINT_LIMIT` inputs.
Above it, nothing short of every input can rule a pair out: the compile
is refused, pointing at `--exhaustive`, unless the caller proves the model on the whole
domain (`whole_domain`), whose proof is then what makes the model exact. Real-valued
tokens have no finite domain: there such a map is refused.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from tracr.rasp import rasp

from rasp_sim.core import graph as g
from rasp_sim.evaluation.evaluate import evaluate_defined

from .bases import OPERANDS, Undecided, ValueSets, plain, typed
from .bulk_compare import interpreter_rows
from .checks import Unsupported
from .validate import causal_program, describe_size, domain_size, every_input

# The most inputs the operands are evaluated on: the interpreter alone, on the maps'
# operands only, runs at about 10^5 inputs/s (Dyck-2), so at most ~10 s of a compile that
# has such a map; validation's exhaustive limit is 10x lower because it also runs the model.
JOINT_LIMIT = 1_000_000


def decide_joint_maps(value_sets: ValueSets, vocab: Sequence[Any], max_len: int, *,
                      min_len: int = 1, causal: bool = False, numeric: bool = False,
                      whole_domain: bool = False) -> list[str]:
    """Check every map of several s-ops that maps members of one stored value differently
    (see the module's docstring); refuse one that is wrong where its operands meet, or
    that cannot be decided. Returns the maps left to a whole-domain proof (`whole_domain`
    on a domain above JOINT_LIMIT inputs), as "Kind 'label' at file:line:col"."""
    undecided = list(value_sets.undecided.values())
    if not undecided:
        return []
    first = undecided[0]
    if numeric:
        raise Unsupported(first.name, f"{first.reason()}; its operands come from real-valued "
                          "tokens, so whether the two meet at one position cannot be checked "
                          "on every input", first.span)
    size = domain_size(len(vocab), max_len, min_len)
    if size > JOINT_LIMIT:
        if whole_domain:
            return [f"{u.name} at {u.span}" for u in undecided]
        raise Unsupported(first.name, f"{first.reason()}; whether they meet at one position "
                          f"is known only by checking every input, and the domain has "
                          f"{describe_size(size)} inputs, above the {JOINT_LIMIT:,} on which "
                          "the compiler checks it: compile with `rasp-sim compile "
                          "--exhaustive` (the model is then proven on every input), or "
                          "narrow the domain (--vocab, --max-len)", first.span)
    _check_where_operands_meet(undecided, value_sets, vocab, max_len, min_len, causal)
    return []


def _check_where_operands_meet(undecided: list[Undecided], value_sets: ValueSets,
                               vocab: Sequence[Any], max_len: int, min_len: int,
                               causal: bool) -> None:
    operands = {u.expr.label: _evaluated(u.expr, causal) for u in undecided}
    nodes = list({id(n): n for nodes in operands.values() for n in nodes}.values())
    seen: dict[str, set] = {u.expr.label: set() for u in undecided}
    for rows in every_input(len(vocab), max_len, min_len):
        values, defined = evaluate_defined(nodes, interpreter_rows(vocab, rows))
        shape = (len(defined), rows.shape[1])
        for u in undecided:
            columns = [np.broadcast_to(values[n], shape).ravel() for n in operands[u.expr.label]]
            for meeting, at in _distinct(columns):
                if meeting in seen[u.expr.label]:
                    continue
                seen[u.expr.label].add(meeting)
                wrong = value_sets.misread(u.expr, _as_operands(meeting))
                if wrong is not None:
                    row, position = divmod(at, shape[1])
                    tokens = [vocab[i] for i in rows[defined[row]].tolist()]
                    raise Unsupported(u.name, _meeting_reason(u.expr, value_sets, meeting,
                                                              wrong, tokens, position), u.span)


def _distinct(columns: list[np.ndarray]) -> list[tuple[tuple, int]]:
    """The distinct tuples of the columns' values at one index (bases.typed: True is not
    1), each with an index where it occurs: by one NumPy sort where every column is bools
    or numbers (Dyck-2 at max-len 9 has 3 million positions), else in Python."""
    if all(c.dtype.kind in "biuf" for c in columns):
        records = np.rec.fromarrays(columns)
        _, first = np.unique(records, return_index=True)
        return [(typed(tuple(records[i].tolist())), int(i)) for i in first.tolist()]
    found: dict[tuple, int] = {}
    for at, meeting in enumerate(zip(*(c.tolist() for c in columns))):
        found.setdefault(typed(meeting), at)
    return list(found.items())


def _evaluated(expr: rasp.SOp, causal: bool) -> list[g.SOp]:
    """The rasp-sim s-ops the map reads, as the compiled model computes them (a causal
    model masks every selector: validate.causal_program)."""
    nodes = list(expr.annotations[OPERANDS])
    return [causal_program(n) for n in nodes] if causal else nodes


def _as_operands(meeting: tuple) -> tuple[Any, Any]:
    """The program's values (typed) at one position as the map's two operands take them:
    (first, second), or (tuple of all but the last, last) for a map of more s-ops."""
    return (meeting[0], meeting[1]) if len(meeting) == 2 else (meeting[:-1], meeting[-1])


def _meeting_reason(expr: rasp.SequenceMap, value_sets: ValueSets, meeting: tuple,
                    wrong: tuple[Any, Any], tokens: list, position: int) -> str:
    """Why the table is wrong where these operand values meet: the program's values, the
    stored ones that carry them, and an input where they meet."""
    first, last = _as_operands(meeting)
    stored = [value_sets.stored_of(expr.fst, first), value_sets.stored_of(expr.snd, last)]
    carried = (*stored[0], stored[1]) if len(meeting) > 2 else stored
    program, model = wrong
    return (f"its value depends on float rounding: on operands {_shown(meeting)} the program "
            f"gives {plain(program)!r}, but a compiled model cannot tell them from "
            f"{_shown(carried)} (they differ in the last bits), which give {plain(model)!r}; "
            f"they meet at position {position} of the input {tokens!r}")


def _shown(values: Sequence[Any]) -> str:
    return ", ".join(repr(plain(v)) for v in values)
