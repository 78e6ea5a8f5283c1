"""Layer/head analysis against docs/language.md and docs/constructions.md.

Graphs are built by hand from `rasp_sim.core.graph` nodes, following the standard library's
definitions (docs/language.md) operation by operation, so the reference costs test the
analyser alone, independently of the interpreter.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rasp_sim.core import graph as G
from rasp_sim.language.analyse import analyse, format_table
from rasp_sim.base.errors import RaspTypeError

indices = G.Indices()
tokens = G.Tokens("str")
tokens_int = G.Tokens("int")
tokens_float = G.Tokens("float")
# The library's full_s is ONE object shared by every user (docs/language.md).
full_s = G.Select(G.Full(1), G.Full(1), "==", name="full_s")


def m(op: str, *inputs: G.SOp) -> G.Map:
    return G.Map(op, inputs)


def const(value: object) -> G.Full:
    return G.Full(value)


def length() -> G.SOp:
    """round(1/aggregate(full_s, indicator(indices==0)))"""
    frac = G.Aggregate(full_s, m("indicator", m("==", indices, const(0))))
    return m("round", m("/", const(1), frac))


def selector_width(sel: G.Selector) -> G.SOp:
    """The position-0 trick: OR `sel` with "key 0", average the key-0 indicator, invert,
    subtract 1, then add back whether `sel` itself selected key 0 (through `sel and key 0`)."""
    key0 = G.Select(indices, const(0), "==")
    light0 = m("indicator", m("==", indices, const(0)))
    or0_width = m("/", const(1), G.Aggregate(G.SelectorOr(sel, key0), light0))
    and0_width = G.Aggregate(G.SelectorAnd(sel, key0), light0)
    return m("round", m("+", m("-", or0_width, const(1)), and0_width))


def count(seq: G.SOp, atom: object) -> G.SOp:
    """round(length * mean(indicator(seq == atom))), through the shared full_s."""
    frac = G.Aggregate(full_s, m("indicator", m("==", seq, const(atom))))
    return m("round", m("*", length(), frac))


def widths(analysis) -> list[list[int]]:
    return [[h.value_width for h in layer.heads] for layer in analysis.layers]


# ------------------------------------------------------------ reference costs (docs/language.md)


def test_length_is_one_layer_one_head() -> None:
    a = analyse(length())
    assert (a.n_layers, a.heads) == (1, (1,))
    assert a.layers[0].heads[0].selector is full_s
    # == and indicator act on the inputs; / and round follow the attention of layer 1.
    assert (len(a.input_maps), len(a.layers[0].maps)) == (2, 2)


def test_selector_width_is_one_layer_two_heads() -> None:
    a = analyse(selector_width(G.Select(indices, indices, "<")))
    assert (a.n_layers, a.heads) == (1, (2,))


def test_selector_width_sits_at_its_selectors_depth() -> None:
    deep = G.Aggregate(G.Select(indices, indices, "=="), tokens_int)  # depth 1
    a = analyse(selector_width(G.Select(deep, indices, "<")))  # that select: depth 2
    assert (a.n_layers, a.heads) == (2, (1, 2))


def test_one_selector_two_value_columns_is_one_wide_head() -> None:
    s = G.Select(indices, indices, "==")
    a = analyse(m("+", G.Aggregate(s, tokens_int), G.Aggregate(s, tokens_float)))
    assert (a.n_layers, a.heads) == (1, (1,))
    assert widths(a) == [[2]]
    assert a.layers[0].heads[0].values == (tokens_int, tokens_float)


def test_two_textually_equal_selects_are_two_heads() -> None:
    s1 = G.Select(indices, indices, "==")
    s2 = G.Select(indices, indices, "==")
    a = analyse(m("+", G.Aggregate(s1, tokens_int), G.Aggregate(s2, tokens_float)))
    assert (a.n_layers, a.heads) == (1, (2,))
    assert widths(a) == [[1, 1]]


def test_same_value_twice_through_one_selector_is_width_one() -> None:
    s = G.Select(indices, indices, "==")
    a = analyse(m("+", G.Aggregate(s, tokens_int), G.Aggregate(s, tokens_int, default=5)))
    assert (a.heads, widths(a)) == ((1,), [[1]])


def test_value_depth_needs_the_plus_one() -> None:
    a_ = G.Aggregate(G.Select(indices, indices, "=="), tokens_int)
    sel_b = G.Select(indices, indices, "==")
    b = G.Aggregate(sel_b, a_)
    analysis = analyse(b)
    assert analysis.n_layers == 2 and analysis.heads == (1, 1)
    assert analysis.node_depth(a_) == 1
    assert analysis.selector_depth(sel_b) == 1  # the selector is ready before its values
    assert analysis.node_depth(b) == 2


def test_shared_full_s_merges_users_of_one_layer_into_one_head() -> None:
    avg = G.Aggregate(full_s, tokens_int)  # average(tokens_int)
    a = analyse([count(tokens, "a"), avg])
    # length's indicator, count's indicator and tokens_int: three columns, one head.
    assert (a.n_layers, a.heads) == (1, (1,))
    assert widths(a) == [[3]]


def test_full_s_counts_once_in_each_layer_it_is_used() -> None:
    first = G.Aggregate(G.Select(indices, indices, "=="), tokens_int)
    a = analyse(m("+", length(), G.Aggregate(full_s, first)))  # average of a layer-1 value
    # Layer 1: full_s (length) and the select under `first`; layer 2: full_s again.
    assert (a.n_layers, a.heads) == (2, (2, 1))
    assert all(any(h.selector is full_s for h in layer.heads) for layer in a.layers)


def test_selector_used_in_two_layers_counts_once_in_each() -> None:
    s = G.Select(indices, indices, "==")
    a1 = G.Aggregate(s, tokens_int)
    a2 = G.Aggregate(s, a1)
    a3 = G.Aggregate(s, tokens_float)
    analysis = analyse(m("+", a2, a3))
    assert analysis.heads == (1, 1)
    assert widths(analysis) == [[2], [1]]
    assert [layer.heads[0].selector for layer in analysis.layers] == [s, s]


def test_composite_selector_depth_covers_all_underlying_sops() -> None:
    deep = G.Aggregate(G.Select(indices, indices, "=="), tokens_int)  # depth 1
    left = G.Select(tokens, tokens, "==")  # depth 1
    right = G.Select(indices, deep, "<")  # depth 2
    both = G.SelectorAnd(left, right)
    neither = G.SelectorNot(G.SelectorOr(left, G.SelectorNot(left)))
    out = m("+", G.Aggregate(both, tokens_int), G.Aggregate(neither, tokens_int))
    a = analyse(out)
    assert a.selector_depth(both) == 2
    assert a.selector_depth(neither) == 1
    # One composite is one head; its operands are not heads of their own.
    assert a.heads == (2, 1)
    assert {id(h.selector) for h in a.layers[0].heads} == {id(neither), id(deep.selector)}


def test_sum_aggregate_counts_as_a_head_like_mean() -> None:
    s = G.Select(indices, indices, "<")
    shared = m("+", G.Aggregate(s, tokens_int, reduction="sum"), G.Aggregate(s, tokens_float))
    a = analyse(shared)
    assert a.heads == (1,) and a.layers[0].heads[0].reductions == ("mean", "sum")
    alone = analyse(G.Aggregate(G.Select(indices, indices, "<"), tokens_int, reduction="sum"))
    assert alone.heads == (1,) and alone.layers[0].heads[0].reductions == ("sum",)


def test_inputs_alone_have_no_layers() -> None:
    a = analyse(m("+", tokens_int, const(1)))
    assert (a.n_layers, a.heads, len(a.input_maps)) == (0, (), 1)
    assert a.to_json() == {"layers": 0, "heads": [], "input_maps": 1, "per_layer": []}


def test_a_selector_root_occupies_its_layer_without_heads() -> None:
    a = analyse(G.Select(indices, indices, "<"))
    assert (a.n_layers, a.heads) == (1, (0,))


# --------------------------------------------------- property: the rules of docs/language.md


def _literal_depth(node: G.Node) -> int:
    """docs/language.md read literally and recursively (small graphs only); the
    composite rule walks to the underlying selects, unlike the analyser's shortcut."""
    if isinstance(node, (G.Tokens, G.Indices, G.Full)):
        return 0
    if isinstance(node, G.Map):
        return max((_literal_depth(c) for c in node.inputs), default=0)
    if isinstance(node, G.Aggregate):
        return max(_literal_depth(node.selector), _literal_depth(node.values) + 1)
    stack, sops = [node], []
    while stack:
        sel = stack.pop()
        if isinstance(sel, G.Select):
            sops += [sel.keys, sel.queries]
        else:
            stack.extend(sel.children())
    return 1 + max(_literal_depth(s) for s in sops)


@st.composite
def random_graphs(draw: st.DrawFn) -> list[G.Node]:
    sops: list[G.SOp] = [indices, tokens_int, const(draw(st.integers(0, 3)))]
    sels: list[G.Selector] = []
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["map", "select", "and", "not", "aggregate"]))
        pick = st.sampled_from(sops)
        if kind == "map":
            sops.append(G.Map("+", (draw(pick), draw(pick))))
        elif kind == "select" or not sels:
            sels.append(G.Select(draw(pick), draw(pick), "<"))
        elif kind == "and":
            sels.append(G.SelectorAnd(draw(st.sampled_from(sels)), draw(st.sampled_from(sels))))
        elif kind == "not":
            sels.append(G.SelectorNot(draw(st.sampled_from(sels))))
        else:
            sops.append(G.Aggregate(draw(st.sampled_from(sels)), draw(pick)))
    return sops + sels


@settings(max_examples=150, deadline=None)
@given(random_graphs())
def test_depths_match_the_literal_rules(nodes: list[G.Node]) -> None:
    a = analyse(nodes)
    depths = {id(n): _literal_depth(n) for n in nodes}
    assert all(a.node_depth(n) == depths[id(n)] for n in nodes)
    assert a.n_layers == max(depths.values())
    # Heads: distinct selector objects among the aggregates of each depth.
    expected = [set() for _ in range(a.n_layers)]
    for n in nodes:
        if isinstance(n, G.Aggregate):
            expected[depths[id(n)] - 1].add(id(n.selector))
    assert list(a.heads) == [len(e) for e in expected]
    maps_by_depth = [sum(isinstance(n, G.Map) and depths[id(n)] == d for n in nodes)
                     for d in range(a.n_layers + 1)]
    assert [len(a.input_maps)] + [len(layer.maps) for layer in a.layers] == maps_by_depth


# ------------------------------------------------------------------------- deep graphs


def test_a_5000_deep_chain_of_maps() -> None:
    node: G.SOp = tokens_int
    for _ in range(5000):
        node = m("+", node, const(1))
    a = analyse(node)
    assert (a.n_layers, len(a.input_maps)) == (0, 5000)


def test_a_500_deep_chain_of_aggregates() -> None:
    node: G.SOp = tokens_int
    for _ in range(500):
        node = G.Aggregate(G.Select(indices, indices, "=="), node)
    a = analyse(node)
    assert a.n_layers == 500 and a.heads == (1,) * 500
    assert a.node_depth(node) == 500
    assert repr(a.layers[-1]).startswith("Layer(500, heads=(Head(layer=500, selector='select(==)'")


def test_a_deep_chain_of_composite_selectors() -> None:
    sel: G.Selector = G.Select(indices, indices, "<")
    for _ in range(3000):
        sel = G.SelectorNot(sel)
    a = analyse(G.Aggregate(sel, tokens_int))
    assert (a.n_layers, a.heads, a.selector_depth(sel)) == (1, (1,), 1)


# ------------------------------------------------------------------------ output formats


def test_json_round_trip_and_contents() -> None:
    s = G.Select(indices, indices, "==", name="same_pos")
    two = m("+", G.Aggregate(s, tokens_int), G.Aggregate(s, tokens_float, reduction="sum"))
    a = analyse(m("*", length(), G.Aggregate(G.Select(indices, indices, "<"), two)))
    data = a.to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["layers"] == a.n_layers == 2
    assert data["heads"] == list(a.heads) == [2, 1]
    layer1 = data["per_layer"][0]
    assert layer1["layer"] == 1 and layer1["maps"] == 1 + 2  # the "+" and length's / and round
    by_selector = {h["selector"]: h for h in layer1["heads"]}
    assert by_selector["full_s"]["value_width"] == 1
    assert by_selector["same_pos"] == {
        "selector": "same_pos", "value_width": 2,
        "values": ["tokens_int", "tokens_float"], "reductions": ["mean", "sum"],
    }
    assert data["per_layer"][1]["heads"][0]["selector"] == "select(<)"


def test_format_table_rows() -> None:
    s = G.Select(indices, indices, "==")
    wide = m("+", G.Aggregate(s, tokens_int), G.Aggregate(s, tokens_float, reduction="sum"))
    text = format_table(analyse(m("+", length(), wide)))
    lines = text.splitlines()
    assert lines[0] == "layers: 1  heads: [2]"
    assert lines[1].split() == ["layer", "heads", "value", "widths", "maps"]
    assert lines[2].split() == ["inputs", "-", "-", "2"]
    # full_s carries one column; s carries two, one of them a sum. Maps: / round + +.
    cells = [c.strip() for c in lines[3].split("  ") if c.strip()]
    assert cells == ["1", "2", "1, 2 (mean+sum)", "4"]


def test_analysing_a_non_node_is_a_type_error() -> None:
    with pytest.raises(RaspTypeError) as info:
        analyse(3)  # type: ignore[arg-type]
    assert "can only analyse s-ops and selectors, got int: 3" in info.value.format()
    with pytest.raises(RaspTypeError, match="got list"):
        analyse([])


def test_depth_of_a_foreign_node_is_a_key_error() -> None:
    a = analyse(tokens_int)
    with pytest.raises(KeyError, match="indices"):
        a.node_depth(indices)
    with pytest.raises(TypeError, match="expected a selector, got Tokens"):
        a.selector_depth(tokens_int)  # type: ignore[arg-type]


# The original's numbers (its width_and_depth on tech-srl/RASP 61dde62): `atom in s-op`
# aggregates through an internal all-true selector of the original's own, one object for
# every `atom in s-op` but not the library's full_s (length, count, average).
ATOM_IN_SOP_COSTS = {
    'length + indicator("a" in tokens)': (1, (2,)),
    'indicator("a" in tokens) + indicator("b" in tokens)': (1, (1,)),
    'indicator("a" in tokens) + count(tokens, "b")': (1, (2,)),
    '"a" in tokens': (1, (1,)),
    'indicator("a" in aggregate(select(indices, indices, ==), tokens)) + length': (2, (2, 1)),
    'indicator("a" in aggregate(select(indices, indices, ==), tokens))'
    ' + indicator("b" in tokens)': (2, (2, 1)),
    'average(indicator("a" in tokens))': (2, (1, 1)),
}


@pytest.mark.parametrize("expression", ATOM_IN_SOP_COSTS)
def test_atom_in_sop_has_a_selector_of_its_own_as_in_the_original(expression: str) -> None:
    from rasp_sim import parse

    a = parse(f"x = {expression};").analyse("x")
    assert (a.n_layers, a.heads) == ATOM_IN_SOP_COSTS[expression]
