"""Property tests of programs/classic.rasp against plain-Python definitions."""
from __future__ import annotations

from collections import Counter

from hypothesis import given, settings, strategies as st

from lib_refs import run1

FAST = settings(max_examples=50, deadline=None)
words = st.text(alphabet="abcd", min_size=1, max_size=12)
ints = st.lists(st.integers(-20, 20), min_size=1, max_size=12)


@FAST
@given(w=words)
def test_reverse_histogram_sorts(w):
    assert "".join(run1("reverse(tokens)", w)) == w[::-1]
    counts = Counter(w)
    assert run1("histogram(tokens)", w) == [counts[ch] for ch in w]
    assert run1("histogram_bos(tokens)", "<" + w) == [0] + [counts[ch] for ch in w]
    by_freq = sorted(range(len(w)), key=lambda i: (-counts[w[i]], i))
    assert "".join(run1("sort_by_freq(tokens)", w)) == "".join(w[i] for i in by_freq)
    best = max(counts, key=lambda ch: (counts[ch], -w.index(ch)))
    assert run1("most_frequent(tokens)", w) == [best] * len(w)


@FAST
@given(xs=ints)
def test_sort_by_is_stable(xs):
    order = sorted(range(len(xs)), key=lambda i: (xs[i], i))
    assert run1("sort_by(indices, tokens_int)", xs) == order
    distinct = list(dict.fromkeys(xs))
    assert run1("sort_unique(tokens_int, tokens_int)", distinct) == sorted(distinct)


def prefix_states(w, pairs, typed):
    """'T'/'P'/'F' per prefix: balanced / unfinished / broken (underflow or, if typed,
    a close that does not match the innermost open)."""
    out, broken, stack, counts = [], False, [], Counter()
    for ch in w:
        for o, c in pairs:
            if ch == o:
                counts[o] += 1
                stack.append(o)
            elif ch == c:
                counts[o] -= 1
                if counts[o] < 0 if not typed else (not stack or stack[-1] != o):
                    broken = True
                if stack and (not typed or stack[-1] == o):
                    stack.pop()
        if not typed:
            broken = broken or any(v < 0 for v in counts.values())
        depth_open = any(v > 0 for v in counts.values()) if not typed else bool(stack)
        out.append("F" if broken else ("P" if depth_open else "T"))
    return out


@FAST
@given(w=st.text(alphabet="(){}", min_size=1, max_size=12))
def test_dyck_languages(w):
    assert run1('shuffle_dyck(tokens, ["()", "{}"])', w) == prefix_states(w, ["()", "{}"], False)
    assert run1("dyck2(tokens)", w) == prefix_states(w, ["()", "{}"], True)
    w1 = w.replace("{", "(").replace("}", ")")
    assert run1("dyck1(tokens)", w1) == prefix_states(w1, ["()"], False)


@FAST
@given(bits=st.lists(st.integers(0, 1), min_size=1, max_size=16), data=st.data())
def test_parities(bits, data):
    n = len(bits)
    assert run1("parity(tokens_int)", bits) == [sum(bits) % 2] * n
    s = sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1)))
    assert run1(f"sparse_parity(tokens_int, {s})", bits) == [sum(bits[i] for i in s) % 2] * n
    mask = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    expected = sum(b * m for b, m in zip(bits, mask)) % 2
    assert run1(f"masked_parity(tokens_int, {n})", bits + mask) == [expected] * (2 * n)


@FAST
@given(xs=st.lists(st.integers(-40, 40), min_size=1, max_size=10), p=st.integers(2, 19),
       allow_self=st.booleans())
def test_match2(xs, p, allow_self):
    expected = [int(any((xs[i] + xs[j]) % p == 0 for j in range(len(xs)) if allow_self or j != i))
                for i in range(len(xs))]
    assert run1(f"match2(tokens_int, {p}, {allow_self})", xs) == expected


def test_match2_residue_zero_and_zero_values():
    # the authors' version misses both (docs/constructions.md)
    assert run1("match2(tokens_int, 19, True)", [19, 38, 5]) == [1, 1, 0]
    assert run1("match2(tokens_int, 5, False)", [0, 0, 3]) == [1, 1, 0]


@FAST
@given(xs=st.lists(st.integers(-9, 9), min_size=1, max_size=11))
def test_maxmin(xs):
    expected = []
    for m in range(0, len(xs) - 1, 2):
        expected += [max(xs[m], xs[m + 1]), min(xs[m], xs[m + 1])]
    if len(xs) % 2:
        expected.append(xs[-1])
    assert run1("maxmin(tokens_int)", xs) == expected
