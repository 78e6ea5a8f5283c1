"""AST helpers for the parser tests: `unparse` renders a tree back to RASP text with
every operation parenthesised, so a test can state a parse's shape in RASP itself;
`strip_spans` drops positions so two parses can be compared by structure."""
from __future__ import annotations

import dataclasses
from typing import Any

from rasp_sim.language import ast


def _list(items) -> str:
    return ", ".join(unparse(i) for i in items)


def unparse(node: Any) -> str:
    """Fully parenthesised RASP text for an expression or statement node."""
    match node:
        case ast.IntLiteral(value=v):
            return str(v)
        case ast.FloatLiteral(text=t):
            return t
        case ast.StringLiteral(value=v):
            return f'"{v}"'
        case ast.Name(id=i):
            return i
        case ast.BinaryOp(op=op, left=l, right=r):
            return f"({unparse(l)} {op} {unparse(r)})"
        case ast.UnaryOp(op=op, operand=x):
            return f"({op} {unparse(x)})"
        case ast.Ternary(then=a, condition=c, otherwise=b):
            return f"({unparse(a)} if {unparse(c)} else {unparse(b)})"
        case ast.Contains(item=a, container=b):
            return f"({unparse(a)} in {unparse(b)})"
        case ast.Index(target=t, index=i):
            return f"{unparse(t)}[{unparse(i)}]"
        case ast.Call(function=f, args=args):
            return f"{unparse(f)}({_list(args)})"
        case ast.ListLiteral(items=items):
            return f"[{_list(items)}]"
        case ast.DictLiteral(pairs=pairs):
            return "{" + ", ".join(f"{unparse(k)}: {unparse(v)}" for k, v in pairs) + "}"
        case ast.ListComprehension(element=e, names=n, iterable=it):
            return f"[{unparse(e)} for {', '.join(n)} in {unparse(it)}]"
        case ast.DictComprehension(key=k, value=v, names=n, iterable=it):
            return f"{{{unparse(k)}: {unparse(v)} for {', '.join(n)} in {unparse(it)}}}"
        case ast.Select(keys=k, queries=q, op=op):
            return f"select({unparse(k)}, {unparse(q)}, {op})"
        case ast.Aggregate(selector=s, values=v, default=d):
            return f"aggregate({_list([s, v] if d is None else [s, v, d])})"
        case ast.BuiltinCall(name=name, args=args):
            return f"{name}({_list(args)})"
        case ast.ExprStatement(expr=e):
            return f"{unparse(e)};"
        case ast.Assign(names=n, values=v):
            return f"{', '.join(n)} = {_list(v)};"
        case ast.FunctionDef(name=name, params=p, body=body, returns=r):
            inner = "".join(unparse(s) + "\n" for s in body)
            return f"def {name}({', '.join(p)}) {{\n{inner}return {_list(r)};\n}}"
        case ast.For(names=n, iterable=it, body=body):
            inner = "".join(unparse(s) + "\n" for s in body) or "# empty\n"
            return f"for {', '.join(n)} in {unparse(it)} {{\n{inner}}}"
        case ast.Load(name=name):
            return f'load "{name}";'
        case ast.Draw(expr=e, input=i):
            return f"draw({_list([e] if i is None else [e, i])});"
        case ast.SetExample(target=t, example=e):
            return f"set {'' if t == 'both' else t + ' '}example {unparse(e)}\n"
        case ast.ShowExample(target=t):
            return f"show {'' if t == 'both' else t + ' '}example"
        case ast.ExamplesToggle(target=t, on=on):
            return f"{'' if t == 'both' else t + ' '}examples {'on' if on else 'off'}"
        case ast.FullSeqDisplay(on=on):
            return f"full seq display {'on' if on else 'off'}"
        case ast.Exit():
            return "exit"
        case ast.Program(statements=s):
            return "".join(unparse(x) + "\n" for x in s)
    raise TypeError(f"not an AST node: {node!r}")


def strip_spans(node: Any) -> Any:
    """The node as nested tuples without spans (or file names), for structural equality."""
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple(
            strip_spans(getattr(node, f.name))
            for f in dataclasses.fields(node) if f.name not in ("span", "file")
        )
    if isinstance(node, tuple):
        return tuple(strip_spans(x) for x in node)
    return node
