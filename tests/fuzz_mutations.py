"""Mutations of RASP source files for the CLI fuzz test (tests/test_fuzz_cli.py).

Each mutation takes the file's bytes and a seeded `random.Random` and returns new bytes:
the kinds of damage a hostile or careless user produces (token edits, random bytes, stray
unicode, very long lines, very deep nesting, truncation) and the resource classes the
limits must refuse (nesting, size, loops, recursion). Deterministic for a given seed,
so a failing case is reproduced by its case number alone.
"""
from __future__ import annotations

import random
import re
from typing import Callable

# Identifiers, numbers, strings, comments, then any single non-space character: a rough
# RASP tokenisation, enough to make edits that stay near the language.
_TOKEN = re.compile(rb'[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|"[^"\n]*"|#[^\n]*|\S')

Mutation = Callable[[bytes, random.Random], bytes]


def _token_spans(source: bytes) -> list[tuple[int, int]]:
    return [match.span() for match in _TOKEN.finditer(source)] or [(0, 0)]


def delete_token(source: bytes, rng: random.Random) -> bytes:
    start, end = rng.choice(_token_spans(source))
    return source[:start] + source[end:]


def duplicate_token(source: bytes, rng: random.Random) -> bytes:
    start, end = rng.choice(_token_spans(source))
    return source[:end] + b" " + source[start:end] + source[end:]


def swap_tokens(source: bytes, rng: random.Random) -> bytes:
    spans = _token_spans(source)
    (a_start, a_end), (b_start, b_end) = sorted(rng.sample(spans, 2) if len(spans) > 1
                                                else spans * 2)
    if a_end > b_start:  # the same token twice
        return source
    return (source[:a_start] + source[b_start:b_end] + source[a_end:b_start]
            + source[a_start:a_end] + source[b_end:])


def random_bytes(source: bytes, rng: random.Random) -> bytes:
    """Bytes of any value, so the file is often not UTF-8."""
    at = rng.randrange(len(source) + 1)
    return source[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))) + source[at:]


_UNICODE = ["é", "λ", "→", "\u200b", "\u202e", "🙂", "\ufeff", "中", "\u0000", "\r", "\t"]


def stray_unicode(source: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(source) + 1)
    text = "".join(rng.choice(_UNICODE) for _ in range(rng.randint(1, 4)))
    return source[:at] + text.encode("utf-8") + source[at:]


def long_line(source: bytes, rng: random.Random) -> bytes:
    """A 100,000-character identifier, number, string or sum on one line."""
    size = 100_000
    piece = rng.choice([b"x" * size, b"9" * size, b'"' + b"a" * size + b'"',
                        b"1" + b" + 1" * (size // 4)])
    at = rng.choice(_token_spans(source))[0]
    return source[:at] + piece + b" " + source[at:]


def deep_nesting(source: bytes, rng: random.Random) -> bytes:
    """A token wrapped in 200 to 5,000 brackets of one kind."""
    depth = rng.choice([200, 1000, 5000])
    opening, closing = rng.choice([(b"(", b")"), (b"[", b"]"), (b"{", b"}")])
    start, end = rng.choice(_token_spans(source))
    return source[:start] + opening * depth + source[start:end] + closing * depth + source[end:]


def truncate(source: bytes, rng: random.Random) -> bytes:
    return source[: rng.randrange(len(source) + 1)]


# ---- the resource classes of issue 22: each must be refused by a stated limit (parser:
# rasp_sim.base.source_limits; loops: rasp_sim.base.limits.MAX_ITERATIONS; sizes:
# rasp_sim.base.limits), quickly and located, never by a hang or a MemoryError.

def _statement_boundary(source: bytes, rng: random.Random) -> int:
    """A place between statements: the start, or just after a ';' that ends a line."""
    ends = [match.end() for match in re.finditer(rb";[ \t]*\n", source)]
    return rng.choice([0, *ends])


def _insert_statement(source: bytes, statement: bytes, rng: random.Random) -> bytes:
    at = _statement_boundary(source, rng)
    return source[:at] + statement + b"\n" + source[at:]


def huge_nesting(source: bytes, rng: random.Random) -> bytes:
    """Brackets nested at, just past or far past the nesting limit (200), up to 10^6."""
    depth = rng.choice([199, 200, 201, 10_000, 1_000_000])
    opening, closing = rng.choice([(b"(", b")"), (b"[", b"]"), (b"select(", b", x, ==)")])
    return _insert_statement(source, b"deep = " + opening * depth + b"1" + closing * depth
                             + b";", rng)


def huge_size(source: bytes, rng: random.Random) -> bytes:
    """Programs at and past the token, statement and statement-size limits: many lines,
    one long sum, a long chain of unary minuses, one long list."""
    count = rng.choice([4_999, 5_001, 30_000, 1_200_000])
    statement = rng.choice([
        b"x = 1;\n" * count,
        b"x = 1" + b" + 1" * count + b";",
        b"x = " + b"- " * count + b"1;",
        b"x = [" + b"1, " * count + b"1];",
    ])
    return _insert_statement(source, statement, rng)


_LOOPS = [
    b"for i in range(10^14) { loop_x = i; }",
    b"for i in range(10^6) { for j in range(10^6) { loop_x = i; } }",
    b"loop_x = [[j for j in range(10^6)] for i in range(10^6)];",
    b"loop_x = [i for i in range(10^7)];",
    b'loop_x = ["ab" * 10^6 for i in range(100)];',
    b'loop_s = "ab"; for i in range(64) { loop_s = loop_s + loop_s; }',
    b"loop_x = {i: i for i in range(10^8)};",
    b"loop_x = [i * 2 for i in range(1000)];",
]


def huge_loop(source: bytes, rng: random.Random) -> bytes:
    """An atom-level loop or comprehension past the iteration or size budget (or a small
    one, which runs)."""
    return _insert_statement(source, rng.choice(_LOOPS), rng)


_RECURSION = [
    b"def rec_f(x) { return rec_f(x); }\nrec_y = rec_f(1);",
    b"def rec_g(x) { return rec_h(x + 1); }\ndef rec_h(x) { return [rec_g(x)]; }\n"
    b"rec_y = rec_g(0);",
    b"def rec_s(x) { return rec_s(x + 1) if 1 < 2 else x; }\nrec_y = rec_s(tokens_int);",
    b"def rec_d(n) { return 0 if n == 0 else rec_d(n - 1) + 1; }\nrec_y = rec_d(999);",
]


def recursion(source: bytes, rng: random.Random) -> bytes:
    """A recursive RASP function: unbounded (refused at the depth limit, 1,000 calls) or
    just within it."""
    return _insert_statement(source, rng.choice(_RECURSION), rng)


MUTATIONS: tuple[Mutation, ...] = (delete_token, duplicate_token, swap_tokens, random_bytes,
                                   stray_unicode, long_line, deep_nesting, truncate,
                                   huge_nesting, huge_size, huge_loop, recursion)
# Token edits are the most likely to reach deep into the interpreter, so they are drawn
# more often than the blunt byte-level damage.
_WEIGHTS = (4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)


def mutate(source: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """`source` with one to three mutations applied, and their names."""
    applied = rng.choices(MUTATIONS, weights=_WEIGHTS, k=rng.randint(1, 3))
    for mutation in applied:
        source = mutation(source, rng)
    return source, [mutation.__name__ for mutation in applied]
