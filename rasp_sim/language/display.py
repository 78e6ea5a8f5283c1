"""The original's REPL display conventions (docs/language.md), as text.

Display is not part of the value semantics: tests compare values, and these functions
only format values computed elsewhere. Graph nodes are evaluated through the `run`
callback the interpreter passes in (`run(node, example) -> values`), so this module
never evaluates anything itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core import graph
from ..core.semantics import sequence_type
from .values import Applied, Function, node_name


def type_label(values: list) -> str:
    """The plural type name the original prints after a sequence: ints, floats, ..."""
    return sequence_type(values) + "s"


# The label of every row of a value column (rasp_sim.evaluation.columns) by dtype kind;
# object columns (mixed rows, big ints, Fractions) have none: label them row by row.
_COLUMN_LABELS = {"b": "bools", "i": "ints", "f": "floats", "U": "strings"}


def column_type_label(dtype: Any) -> str | None:
    """type_label of each row of a column of this NumPy dtype, or None for object columns."""
    return _COLUMN_LABELS.get(dtype.kind)


Runner = Callable[[graph.Node, Any], list]


@dataclass
class DisplaySettings:
    sop_examples: bool = True
    selector_examples: bool = True
    full_seq: bool = False  # `full seq display on`: two aligned rows per s-op


def quote(value: Any) -> str:
    """The original's formatstr: strings quoted, everything else str()."""
    return f'"{value}"' if isinstance(value, str) else str(value)


def small(value: Any) -> str:
    """One sequence element: floats rounded to 3 digits, bools T/F, strings bare."""
    if isinstance(value, bool):
        return "T" if value else "F"
    if isinstance(value, float):
        return str(round(value, 3))
    return str(value)


def sequence_text(values: list) -> str:
    """`[0, 1, 2] (ints)`; an all-equal sequence longer than 1 as `[5]*5 (ints)`."""
    label = f"({type_label(values)})"
    if len(values) > 1 and len(set(values)) == 1:
        return f"[{small(values[0])}]*{len(values)} {label}"
    return "[" + ", ".join(small(v) for v in values) + "] " + label


def selector_lines(example: Any, matrix: list[list[bool]], prefix: str = "") -> list[str]:
    """A header row of the keys, then one row per query: `q | 1   1`."""
    tokens = [str(v) for v in example]
    lines = [f"{prefix} \t\t\t     " + " ".join(tokens)]
    for token, row in zip(tokens, matrix):
        lines.append(f"{prefix} \t\t\t {token} | " + " ".join("1" if v else " " for v in row))
    return lines


def full_sequence_lines(example: Any, values: list, lead: str, prefix: str = "") -> list[str]:
    """`full seq display on`: `lead`, then input and output rows right-aligned to a
    common width; all-equal values on the lead line instead."""
    if len(set(values)) == 1:
        return [f"{lead} {sequence_text(values)} [skipped full display: identical values]"]

    def cells(seq: list) -> list[str]:
        if seq and isinstance(seq[0], bool):  # mark the rarer value only
            t = "T" if seq.count(True) <= seq.count(False) else ""
            f = "F" if seq.count(False) <= seq.count(True) else ""
            return [t if v else f for v in seq]
        return [str(v) for v in seq]

    example = list(example)
    ins, outs = cells(example), cells(values)
    width = max(len(c) for c in ins + outs)

    def row(cs: list[str]) -> str:
        return " ".join(c.rjust(width) for c in cs)

    return [
        lead,  # the original labels the input row after turning it into text: "strings"
        f"{prefix} \t\tinput:   {row(ins)} \t (strings)",
        f"{prefix} \t\toutput:  {row(outs)} \t ({type_label(values)})",
    ]


def _flat_text(value: list | dict) -> str:
    """A list or dict of atoms and functions as the original prints it: Python's repr,
    a function as the original's Python object repr (an address, of rasp-sim's object)."""
    def text(v: Any) -> str:
        if isinstance(v, Function):
            return f"<RASP_support.Evaluator.RASPFunction object at {id(v):#x}>"
        return repr(v)

    if isinstance(value, list):
        return "[" + ", ".join(text(v) for v in value) + "]"
    return "{" + ", ".join(f"{k!r}: {text(v)}" for k, v in value.items()) + "}"


@dataclass
class Display:
    """Formats named values the way the original's REPL prints them."""

    settings: DisplaySettings
    run: Runner
    sop_example: Any = "hello"  # None: no running example (run mode), headers only
    selector_example: Any = "hello"

    def named(self, name: str | None, value: Any, tabs: int = 0, first: str = "") -> list[str]:
        if isinstance(value, (list, dict)):
            return self._container(name, value, tabs, first)
        pre = "\t" * tabs
        if isinstance(value, (graph.SOp, graph.Selector)) and name is None:
            name = node_name(value)
        if isinstance(value, graph.SOp):
            lines = [f"{pre} {first}    s-op: {name}"]
            if self.settings.sop_examples and self.sop_example is not None:
                values = self.run(value, self.sop_example)
                if self.settings.full_seq:
                    lead = f"{pre} \t Example:"
                    if len(set(values)) == 1:
                        lead += f" {name}({quote(self.sop_example)}) ="
                    # the original's input row shows the selector example (a quirk)
                    lines += full_sequence_lines(self.selector_example, values, lead, pre)
                else:
                    lines.append(
                        f"{pre} \t Example: {name}({quote(self.sop_example)}) = "
                        + sequence_text(values)
                    )
            return lines
        if isinstance(value, graph.Selector):
            lines = [f"{pre} {first}    selector: {name}"]
            if self.settings.selector_examples and self.selector_example is not None:
                lines.append(f"{pre} \t Example:")
                matrix = self.run(value, self.selector_example)
                lines += selector_lines(self.selector_example, matrix, pre)
            return lines
        if isinstance(value, Function):
            return [f"{pre} {first}    {value.describe()}"]
        named = f"{name} = " if name is not None else ""
        return [f"{pre}    value: {named} {quote(value)}"]

    def _container(self, name: str | None, value: Any, tabs: int, first: str) -> list[str]:
        """A list or dict, its nested elements indented below it. Iterative (a stack of
        pending elements and closing lines), so a value nested 1,000 deep displays
        without exhausting Python's recursion limit."""
        lines: list[str] = []
        pending: list = [(name, value, tabs, first)]
        while pending:
            task = pending.pop()
            if isinstance(task, str):  # a closing bracket line
                lines.append(task)
                continue
            name, value, tabs, first = task
            if not isinstance(value, (list, dict)):
                lines += self.named(name, value, tabs, first)
                continue
            pre = "\t" * tabs
            is_list = isinstance(value, list)
            head = ("   list: " if is_list else "   dict: ") + (f"{name} = " if name is not None else "")
            items = value if isinstance(value, list) else list(value.values())
            if not any(isinstance(v, (list, dict, graph.SOp, graph.Selector)) for v in items):
                lines.append(f"{pre} {first} {head}{_flat_text(value)}")
                continue
            lines.append(f"{pre} {first} {head}{pre} " + ("[" if is_list else "{"))
            pending.append(pre + " " * (len(head) + 2) + ("]" if is_list else "}"))
            if isinstance(value, list):
                children = [(None, v, tabs + 2, "") for v in value]
            else:
                children = [(None, v, tabs + 3, f"{quote(k)} : ") for k, v in value.items()]
            pending.extend(reversed(children))
        return lines

    def applied(self, value: Applied) -> list[str]:
        """The result of `e(input)` or `draw(e, input)`."""
        if value.kind == "selector":
            return ["\t = "] + selector_lines(value.input, list(value))
        if self.settings.full_seq:
            # all equal: the original's print of two empty prefixes leaves three spaces
            lead = "\t =  " if len(set(value)) == 1 else "\t = "
            return full_sequence_lines(value.input, list(value), lead)
        return ["\t =  " + sequence_text(list(value))]

    def example(self, target: str) -> list[str]:
        lines = []
        if target in ("both", "s-op"):
            lines.append(f"\ts-op example: {quote(self.sop_example)}")
        if target in ("both", "selector"):
            lines.append(f"\tselector example: {quote(self.selector_example)}")
        return lines
