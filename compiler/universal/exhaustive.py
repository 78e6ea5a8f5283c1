"""Check a universal transformer programmed with a compiled RASP model on EVERY input of the
model's domain (each token sequence over its vocabulary, lengths min_len..max_len).

On each input three outputs are decoded as `run_weights` decodes them (the arg-max over the
output values, or the numeric read-out, BOS dropped): the machine's UT(X; E), the compiled
model's own, and, when the program is given, the interpreter's. They must agree as the
compile's validation requires (agreement.agree: categorical values equal, numbers within
1e-9 relative); inputs on which the interpreter fails are outside the program's domain
and are compared with the model only.

A random machine is refused before that check when its expected error already exceeds
what the outputs must agree to (`check_expected_error`, docs/universal.md): E solves
E M = T only to the residual rho (relative to T's largest entry, T_max), so every view,
hence every query and key, is off by up to rho T_max, and a score q.k by about
rho T_max^2; a compiled head's scores are of the size of its logit scale (1,500), which
`embed.balanced` spreads evenly over queries and keys, so T_max^2 is about that scale. The
estimate is rho T_max^2: over 101 random machines for 5 compiled programs (1 to 3 layers,
1 or 2 heads, m from C to 2C) the measured error was 0.1 to 2.8 times it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from rasp_sim.core import graph as g
from rasp_sim.base.errors import RaspResourceError

from ..forward import forward
from ..tracr_backend.runtime import NUMERIC_TOLERANCE, compile_info, decode, run_ids
from ..tracr_backend.agreement import agree, vocabulary_ids
from ..tracr_backend.validate import (Disagreement, causal_program, describe_size, domain_size,
                                      every_input, interpret)
from ..weights import Transformer
from .compiled import one_hot_inputs
from .embed import Embedding, program
from .errors import UniversalError
from .paths import constraint_count
from .spec import read_spec

# Categorical outputs are one-hot rows decoded by arg-max: an error below half the gap
# between the 1 and the 0s cannot change the decoded value.
ONE_HOT_MARGIN = 0.5


@dataclass
class DomainCheck:
    inputs: int = 0                 # every input of the domain
    agree_with_model: int = 0       # inputs on which the machine decodes as the model
    agree_with_program: int = 0     # ... as the interpreter (of those in its domain)
    undefined: int = 0              # inputs on which the interpreter fails
    with_program: bool = False
    max_numeric_error: float = 0.0  # largest |machine - model| of a numeric output
    disagreement: Disagreement | None = None
    seconds: float = 0.0

    @property
    def compared_with_program(self) -> bool:
        """Without a program, or with one that is defined on some input (a program that
        fails on every input, e.g. the wrong one, checks nothing)."""
        return not self.with_program or self.undefined < self.inputs

    @property
    def passed(self) -> bool:
        return self.disagreement is None and self.compared_with_program


def check_domain_size(model: Transformer, limit: int) -> tuple[int, int]:
    """(number of inputs, longest id row incl. BOS) of the compiled model's domain, or a
    RaspResourceError when there are more than `limit` (checked before any work)."""
    info = compile_info(model)
    size = domain_size(len(info["vocab"]), info["max_len"], info["min_len"])
    if size > limit:
        raise RaspResourceError(
            f"the model's domain has {describe_size(size)} inputs ({len(info['vocab'])} "
            f"tokens, lengths "
            f"{info['min_len']}..{info['max_len']}), above the limit of {limit:,} inputs "
            "checked one by one; raise it with --max-inputs N")
    return size, info["max_len"] + 1


def expected_error(embedding: Embedding) -> float | None:
    """rho T_max^2 (module docstring) for a solved (random) E; None for a sparse one, which
    repeats the model's own operations."""
    if embedding.residual is None:
        return None
    return embedding.residual * embedding.view_scale ** 2


def check_expected_error(ut: Transformer, embedding: Embedding, model: Transformer) -> None:
    """A UniversalError, with the reason, when the random machine's expected error exceeds
    what the compiled `model`'s outputs must agree to (1e-9 for numbers, at the smallest,
    half the one-hot gap for categorical values)."""
    estimate = expected_error(embedding)
    if estimate is None:
        return
    numeric = model.output_encoder is None or model.output_encoder.values is None
    tolerance, outputs = ((NUMERIC_TOLERANCE, "numbers") if numeric
                          else (ONE_HOT_MARGIN, "one-hot outputs"))
    if estimate <= tolerance:
        return
    count = constraint_count(read_spec(ut).shape)
    raise UniversalError(
        f"accuracy: the random machine's E solves E M = T only to a residual of "
        f"{embedding.residual:.2g} of T's largest entry (cond(M) = {embedding.condition:.3g}), "
        f"and the compiled heads' scores, up to T_max^2 = {embedding.view_scale ** 2:.3g} "
        f"(their logit scale), turn it into an expected output error of {estimate:.2g}, above "
        f"the {tolerance:g} its {outputs} must agree to; use the sparse machine (build "
        f"without --random) or a wider random one (--m {2 * count}, twice C: cond(M) near 10)")


def check_every_input(ut: Transformer, embedding: Embedding, model: Transformer,
                      root: g.SOp | None, batch: int) -> DomainCheck:
    """Run the programmed machine, the compiled model and the interpreter (root, if given)
    on every input of the model's domain, `batch` inputs at a time, counting the inputs
    each agrees on and keeping the first disagreement."""
    started = time.perf_counter()
    info = compile_info(model)
    vocab = info["vocab"]
    encoder = model.input_encoder
    assert encoder is not None  # a token model (compiled.as_target refused the others)
    bos = list(encoder.tokens).index(encoder.bos)
    ids_of = vocabulary_ids(encoder.tokens, vocab)
    numeric = model.output_encoder is None or model.output_encoder.values is None
    reference = None if root is None else causal_program(root) if model.causal else root
    simulator = program(ut, embedding.matrix)
    check = DomainCheck(with_program=root is not None)
    for rows in every_input(len(vocab), info["max_len"], info["min_len"], batch):
        ids = np.concatenate([np.full((len(rows), 1), bos), ids_of[rows]], axis=1)
        inputs = [[vocab[i] for i in row] for row in rows.tolist()]
        machine = decode(model, forward(simulator, one_hot_inputs(model, ids)))
        expected = run_ids(model, ids)
        programs = interpret(reference, inputs) if reference is not None else None
        for i, got in enumerate(machine):
            check.inputs += 1
            if _compare(check, inputs[i], got, expected[i], "the compiled model", numeric):
                check.agree_with_model += 1
            if programs is None:
                continue
            wanted = programs[i]
            if wanted is None:
                check.undefined += 1
            elif _compare(check, inputs[i], got, wanted, "the interpreter", numeric):
                check.agree_with_program += 1
    check.seconds = time.perf_counter() - started
    return check


def _compare(check: DomainCheck, tokens: list, got: list[Any], want: list[Any], by: str,
             numeric: bool) -> bool:
    """Whether the machine's outputs `got` agree with `want` at every position; the first
    disagreement of the run is kept."""
    for position, (a, b) in enumerate(zip(got, want)):
        same, error = agree(a, b, numeric)
        if numeric and by == "the compiled model":
            check.max_numeric_error = max(check.max_numeric_error, error)
        if not same:
            if check.disagreement is None:
                check.disagreement = Disagreement(tokens, position, b, a, by,
                                                  "the universal transformer")
            return False
    return True
