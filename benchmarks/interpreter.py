"""Vectorised evaluator vs tracr's reference evaluator: sequences per second.

    python benchmarks/interpreter.py [--quick]

Programs (the standard library's definitions, LANGUAGE.md 5.2, built as graph nodes):
`length`, `hist` = selector_width(select(tokens, tokens, ==)), `reverse` =
aggregate(select(indices, length - indices - 1, ==), tokens), `sort(tokens, tokens)`.
tracr gets the same algorithms in its own RASP (its SelectorWidth primitive stands in for
the selector_width trick). Both evaluate the same random batch of 10,000 inputs over an
8-letter alphabet at n = 16 and n = 64. tracr evaluates one input at a time, so it is
timed on a subsample and its rate extrapolated; the output says so.
"""
from __future__ import annotations

import argparse
import random
import time
from typing import Callable

from rasp_sim import graph as g
from rasp_sim.evaluate import evaluate_batch

ALPHABET = "abcdefgh"


# ------------------------------------------------------------------- rasp-sim graphs


def _full(value: object) -> g.Full:
    return g.Full(value=value)


def _map(op: str, *inputs: g.SOp) -> g.Map:
    return g.Map(op=op, inputs=inputs)  # type: ignore[arg-type]


def _is_index0() -> g.Map:
    return _map("indicator", _map("==", g.Indices(), _full(0)))


def rasp_length() -> g.SOp:
    full_s = g.Select(keys=_full(1), queries=_full(1), op="==")
    return _map("round", _map("/", _full(1), g.Aggregate(selector=full_s, values=_is_index0())))


def rasp_selector_width(sel: g.Selector) -> g.SOp:
    key0 = g.Select(keys=g.Indices(), queries=_full(0), op="==")
    share = g.Aggregate(selector=g.SelectorOr(left=sel, right=key0), values=_is_index0())
    had_key0 = g.Aggregate(selector=g.SelectorAnd(left=sel, right=key0), values=_full(1), default=0)
    return _map("round", _map("+", _map("-", _map("/", _full(1), share), _full(1)), had_key0))


def rasp_programs() -> dict[str, g.SOp]:
    tokens, indices = g.Tokens(kind="str"), g.Indices()
    length = rasp_length()
    opposite = _map("-", _map("-", length, indices), _full(1))
    before = g.SelectorOr(
        left=g.Select(keys=tokens, queries=tokens, op="<"),
        right=g.SelectorAnd(
            left=g.Select(keys=tokens, queries=tokens, op="=="),
            right=g.Select(keys=indices, queries=indices, op="<"),
        ),
    )
    target = rasp_selector_width(before)
    return {
        "length": length,
        "hist": rasp_selector_width(g.Select(keys=tokens, queries=tokens, op="==")),
        "reverse": g.Aggregate(selector=g.Select(keys=indices, queries=opposite, op="=="), values=tokens),
        "sort": g.Aggregate(selector=g.Select(keys=target, queries=indices, op="=="), values=tokens),
    }


# ----------------------------------------------------------------------- tracr programs


def tracr_programs() -> dict[str, object]:
    from tracr.rasp import rasp

    cmp = rasp.Comparison
    length = rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, cmp.TRUE))
    opposite = rasp.SequenceMap(lambda n, i: n - i - 1, length, rasp.indices)
    before = rasp.SelectorOr(
        rasp.Select(rasp.tokens, rasp.tokens, cmp.LT),
        rasp.SelectorAnd(
            rasp.Select(rasp.tokens, rasp.tokens, cmp.EQ),
            rasp.Select(rasp.indices, rasp.indices, cmp.LT),
        ),
    )
    target = rasp.SelectorWidth(before)
    return {
        "length": length,
        "hist": rasp.SelectorWidth(rasp.Select(rasp.tokens, rasp.tokens, cmp.EQ)),
        "reverse": rasp.Aggregate(rasp.Select(rasp.indices, opposite, cmp.EQ), rasp.tokens),
        "sort": rasp.Aggregate(rasp.Select(target, rasp.indices, cmp.EQ), rasp.tokens),
    }


# ----------------------------------------------------------------------------- timing


def _rate(fn: Callable[[], object], count: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller batch and tracr subsample")
    args = parser.parse_args()
    from tracr.rasp import rasp

    batch_size = 1000 if args.quick else 10_000
    tracr_sample = 20 if args.quick else 200
    ours, theirs = rasp_programs(), tracr_programs()
    rng = random.Random(0)
    print(f"batch: {batch_size} random inputs; tracr timed on the first {tracr_sample} "
          "of them (it evaluates one input at a time) and extrapolated per sequence")
    print(f"{'program':8} {'n':>3} {'rasp-sim seq/s':>15} {'tracr seq/s':>12} {'ratio':>8}")
    for n in (16, 64):
        batch = ["".join(rng.choice(ALPHABET) for _ in range(n)) for _ in range(batch_size)]
        for name, root in ours.items():
            result = evaluate_batch([root], batch)[root]
            sample = batch[:tracr_sample]
            expected = [rasp.evaluate(theirs[name], list(x)) for x in sample]
            if result[:tracr_sample].tolist() != expected:
                raise SystemExit(f"{name}: rasp-sim and tracr disagree at n = {n}")
            ours_rate = _rate(lambda: evaluate_batch([root], batch), batch_size, 3)
            tracr_rate = _rate(lambda: [rasp.evaluate(theirs[name], list(x)) for x in sample],
                               tracr_sample, 1)
            print(f"{name:8} {n:>3} {ours_rate:>15,.0f} {tracr_rate:>12,.1f} "
                  f"{ours_rate / tracr_rate:>7,.0f}x")


if __name__ == "__main__":
    main()
