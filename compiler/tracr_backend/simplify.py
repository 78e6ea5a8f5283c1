"""Graph-to-graph simplification before lowering: what a check or a constant costs the
interpreter should not cost the model a layer.

Two rules, applied bottom-up to a copy of the graph (the program's own graph is kept for
validation):
- a Map whose inputs are all constants is the constant it evaluates to (by
  rasp_sim.core.semantics); where that evaluation fails, the Map is kept as it is;
- `a if c else a` (both branches the same node, or equal constants of the same type) is
  `a`. This removes the library's input checks, `check(y, bad, msg)` = `y if ok else y`
  with `ok` an `assert` (a dictionary lookup under --strict) that fails where `bad`,
  and `alongside(v, x)` = `v if x == x else v`.

Both rules keep the value wherever the original program is defined; dropping `c` can
only remove errors, i.e. make the model defined on inputs the program rejects. Validation
compares on the program's domain, where they agree.
"""
from __future__ import annotations

from typing import cast

from rasp_sim.core import graph as g
from rasp_sim.base.errors import RaspError

from .atoms import atom_function

def simplify(root: g.SOp) -> g.SOp:
    """The simplified copy of `root`'s graph (nodes that need no change are shared)."""
    copies: dict[int, g.Node] = {}
    for node in g.ancestors(root):
        children = [copies[id(child)] for child in node.children()]
        changed = any(new is not old for new, old in zip(children, node.children()))
        copy = node.with_children(children) if changed else node
        copies[id(node)] = _rewrite(copy) if isinstance(copy, g.Map) else copy
    return cast(g.SOp, copies[id(root)])


def _same(a: g.Node, b: g.Node) -> bool:
    return a is b or (isinstance(a, g.Full) and isinstance(b, g.Full)
                      and type(a.value) is type(b.value) and a.value == b.value)


def _rewrite(node: g.Map) -> g.SOp:
    if node.op == "where" and _same(node.inputs[1], node.inputs[2]):
        return node.inputs[1]
    constants = [x.value for x in node.inputs if isinstance(x, g.Full)]
    if len(constants) == len(node.inputs):
        try:
            value = atom_function(node)(*constants)
        except RaspError:
            return node
        return g.Full(value=value, span=node.span, name=node.name)
    return node
