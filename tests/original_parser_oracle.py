"""Run by tests/test_parser_differential.py under ANOTHER Python, one that has
antlr4-python3-runtime 4.9.x: parses text with the original RASP's own generated ANTLR
parser, from a local checkout given as argv[1] (nothing of it is copied here).

Protocol: one JSON request per input line, {"mode": "program" | "assignment", "text": ...};
one JSON answer per line, {"ok": no syntax error, "shape": ...}. For "assignment" (text
`x = EXPR;`) the shape is EXPR rendered fully parenthesised, in the same notation as
tests/ast_text.py's `unparse`, read off the original's parse-tree labels.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(sys.argv[1]) / "RASP_support"))

from antlr4 import CommonTokenStream, InputStream  # noqa: E402
from antlr4.error.ErrorListener import ErrorListener  # noqa: E402
from zzantlr.RASPLexer import RASPLexer  # noqa: E402
from zzantlr.RASPParser import RASPParser  # noqa: E402


class Counter(ErrorListener):
    def __init__(self):
        self.errors = 0

    def syntaxError(self, *args):
        self.errors += 1


def chain(ctx, attribute="first"):
    """The items of the original's right-recursive `first (',' cont)?` lists."""
    items = []
    while ctx is not None:
        items.append(getattr(ctx, attribute))
        ctx = ctx.cont
    return items


def names(ctx):
    return ", ".join(token.text for token in chain(ctx))


def joined(exprs):
    return ", ".join(render(e) for e in exprs)


def render(e):
    if e.bracketed is not None:
        return render(e.bracketed)
    if e.indexable is not None:
        return f"{render(e.indexable)}[{render(e.index)}]"
    if e.unfORfun is not None:
        return f"{render(e.unfORfun)}({joined(chain(e.inputexprs))})"
    if e.uop is not None:
        if e.uop.text in ("round", "indicator"):
            return f"{e.uop.text}({render(e.uexpr)})"
        return f"({e.uop.text} {render(e.uexpr)})"
    if e.bop is not None:
        return f"({render(e.left)} {e.bop.text} {render(e.right)})"
    if e.selop is not None:
        return f"select({render(e.key)}, {render(e.query)}, {e.selop.text})"
    if e.res1 is not None:
        return f"({render(e.res1)} if {render(e.cond)} else {render(e.res2)})"
    if e.contained is not None:
        return f"({render(e.contained)} in {render(e.container)})"
    if e.var is not None:
        return e.var.text
    if e.standalone is not None:
        atom = e.standalone
        return str(int(atom.anint.text)) if atom.anint is not None else (atom.afloat or atom.astring).text
    if e.aggregate is not None:
        agg = e.aggregate
        return f"aggregate({joined([agg.sel, agg.seq] + ([agg.default] if agg.default else []))})"
    if e.rangevals is not None:
        return f"range({joined(chain(e.rangevals))})"
    if e.lists is not None:
        return f"zip({joined(chain(e.lists))})"
    if e.singleList is not None:
        return f"len({render(e.singleList)})"
    if e.listcomp is not None:
        c = e.listcomp
        return f"[{render(c.val)} for {names(c.iterator)} in {render(c.iterable)}]"
    if e.dictcomp is not None:
        c = e.dictcomp
        return f"{{{render(c.key)}: {render(c.val)} for {names(c.iterator)} in {render(c.iterable)}}}"
    if e.aList() is not None:
        return f"[{joined(chain(e.aList().listContents))}]"
    if e.aDict() is not None:
        pairs = chain(e.aDict().dictContents)
        return "{" + ", ".join(f"{render(p.key)}: {render(p.val)}" for p in pairs) + "}"
    raise ValueError(f"unknown expression form: {e.getText()}")


def answer(request):
    counter = Counter()
    lexer = RASPLexer(InputStream(request["text"]))
    lexer.removeErrorListeners()
    lexer.addErrorListener(counter)
    parser = RASPParser(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser.addErrorListener(counter)
    tree = parser.r()
    shape = None
    if request["mode"] == "assignment" and counter.errors == 0:
        shape = render(tree.statement(0).raspstatement().assign().val.first)
    return {"ok": counter.errors == 0, "shape": shape}


for line in sys.stdin:
    print(json.dumps(answer(json.loads(line))), flush=True)
