"""Pin the layer and head counts `rasp-sim analyse` reports for the library
(docs/constructions.md's cost tables), so a regression in depth or head count is caught."""
from __future__ import annotations

import pytest

from rasp_sim.language import library

SM = "softmax_unshifted"

COSTS = [
    # linear algebra (docs/constructions.md)
    ("transpose(tokens_float, 3, 5)", 1, (1,)),
    ("transpose_blocks(tokens_float, 4, 2, 3)", 1, (1,)),
    ("matmul(tokens_float, 3, 2, 4)", 2, (7, 1)),
    ("matmul(tokens_float, 4, 1, 4)", 2, (8, 1)),
    ("matmul_per_entry(tokens_float, 3, 3, 3)", 2, (6, 9)),
    ('elementwise(tokens_float, 2, 3, "*")', 1, (1,)),
    ("softmax_unshifted(tokens_float, 3, 4)", 1, (1,)),
    ("softmax_base(tokens_float, 3, 3, 2.718)", 1, (1,)),
    ("softmax(tokens_float, 5, 2)", 3, (2, 1, 1)),
    ("cofactor3(tokens_float)", 1, (4,)),
    ("det3(tokens_float)", 2, (4, 1)),
    ("inverse3(tokens_float)", 2, (5, 1)),
    ("inverse(tokens_float, 2)", 7, (4, 1, 1, 3, 1, 1, 1)),  # + 1 head: sum |M_ij|
    ("det(tokens_float, 3)", 8, (6, 1, 3, 3, 1, 3, 3, 1)),
    # U (docs/constructions.md): the reference head counts of its table
    ("attention_unshifted(tokens_float, 3, 3, 3, 3, 1)", 7, (12, 1, 6, 1, 1, 3, 1)),
    ("attention_unshifted(tokens_float, 4, 2, 3, 2, 1 / sqrt(3))", 7, (12, 1, 6, 1, 1, 4, 1)),
    ("attention_unshifted(tokens_float, 2, 3, 2, 4, 1 / sqrt(2))", 7, (10, 1, 6, 1, 1, 2, 1)),
    ("attention(tokens_float, 3, 3, 3, 3, 1)", 9, (12, 1, 6, 1, 2, 1, 1, 3, 1)),
    ("attention_linear(tokens_float, 3, 3, 3, 3, 1)", 6, (12, 1, 6, 1, 3, 1)),
    (f"attention_xav(tokens_float, 3, 3, 1, {SM})", 7, (9, 1, 6, 1, 1, 3, 1)),
    # multi-head U (9): depth 7 for any H; selectors shared across heads where possible
    ("mha_unshifted(tokens_float, 3, 2, 2, 2, 2, 1)", 7, (19, 2, 7, 2, 4, 3, 1)),
    ("mha_unshifted(tokens_float, 2, 3, 2, 2, 3, 1)", 7, (32, 2, 11, 2, 6, 2, 1)),
    ("mha(tokens_float, 3, 2, 2, 2, 2, 1)", 9, (19, 2, 7, 2, 6, 2, 2, 3, 1)),
    # encoder layer (10): 11 layers, 15 with LayerNorm
    (f'encoder_with(tokens_float, 3, 2, 2, 2, 1, 4, 1, {SM}, "none", 0.00001)', 11,
     (19, 2, 5, 2, 3, 3, 1, 3, 1, 3, 1)),
    (f'encoder_with(tokens_float, 3, 2, 2, 2, 1, 4, 1, {SM}, "post", 0.00001)', 15,
     (19, 2, 5, 2, 3, 3, 1, 1, 1, 3, 1, 3, 1, 1, 1)),
    (f'encoder_with(tokens_float, 3, 2, 2, 2, 1, 4, 1, {SM}, "pre", 0.00001)', 15,
     (17, 2, 5, 1, 5, 1, 1, 3, 1, 1, 1, 3, 1, 3, 1)),
    ("layer_norm(tokens_float, 3, 4, 0.00001)", 2, (1, 1)),
    # classic programs and tasks (Weiss et al.; docs/constructions.md)
    ("reverse(tokens)", 2, (1, 1)),
    ("histogram(tokens)", 1, (2,)),
    ("histogram_bos(tokens)", 1, (1,)),
    ("sort_by(tokens, tokens_int)", 2, (2, 1)),
    ("sort_by_freq(tokens)", 3, (2, 2, 1)),
    ("most_frequent(tokens)", 3, (2, 2, 1)),
    ("dyck1(tokens)", 2, (1, 1)),
    ('shuffle_dyck(tokens, ["()", "{}"])', 2, (1, 1)),
    ("dyck2(tokens)", 4, (1, 4, 1, 1)),
    ("parity(tokens_int)", 1, (1,)),
    ("sparse_parity(tokens_int, [0, 2, 3])", 1, (1,)),
    ("masked_parity(tokens_int, 4)", 2, (1, 1)),
    ("match2(tokens_int, 19, True)", 1, (1,)),
    ("match2(tokens_int, 19, False)", 1, (1,)),
    ("maxmin(tokens_int)", 1, (1,)),
]


@pytest.mark.parametrize("expr,layers,heads", COSTS, ids=[c[0] for c in COSTS])
def test_cost(expr, layers, heads):
    assert library.cost(expr) == (layers, heads)


@pytest.mark.parametrize("r,k,c", [(1, 1, 1), (2, 5, 3), (6, 1, 2)])
def test_matmul_cost_formula(r, k, c):
    assert library.cost(f"matmul(tokens_float, {r}, {k}, {c})") == (2, (r + c, 1))


@pytest.mark.parametrize("n,d,dk,dv", [(1, 1, 1, 1), (5, 2, 4, 3), (2, 6, 1, 5)])
def test_u_cost_formula(n, d, dk, dv):
    expected = (n + 2 * dk + dv, 1, n + dv, 1, 1, n, 1)
    assert library.cost(f"attention_unshifted(tokens_float, {n}, {d}, {dk}, {dv}, 1)") == (7, expected)


@pytest.mark.parametrize("h", [1, 2, 4])
def test_multi_head_depth_does_not_grow_with_h(h):
    assert library.cost(f"mha_unshifted(tokens_float, 2, 2, 2, 2, {h}, 1)")[0] == 7


@pytest.mark.parametrize("n", [1, 2, 4])
def test_gauss_jordan_depth(n):
    assert library.cost(f"inverse(tokens_float, {n})")[0] == 3 * n + 1
