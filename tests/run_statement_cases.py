"""Programs with failing statements, one per kind found by fuzzing against the original
(issue 21), and what each gives.

`original` is what the original interpreter prints for `TARGET(INPUT);` after
`set example EXAMPLE` and the program, typed at its prompt, measured with the original itself (tech-srl/RASP
61dde62); tests/test_run_differential.py measures it again whenever RASP_ORIGINAL is set.
`rasp-sim run --example EXAMPLE` must give exactly these values (tests/test_run_statements.py).
`lazy` is what the default `run` (no example) gives: values, or None where it refuses the
target because the target depends on a failed statement.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    program: str  # prog.rasp
    target: str
    inputs: tuple[str, ...]  # JSON lists
    original: tuple[str, ...]  # the original's value on each input
    lazy: tuple[str, ...] | None  # the default run's, None: refused
    example: str = "[1, 2, 3]"
    files: dict[str, str] = field(default_factory=dict)  # other files prog.rasp loads
    failures: int = 1  # statements that fail on the example (faithful warnings)


CASES = {
    "an unused statement with a static type error": Case(
        "a = tokens + select(indices, indices, ==);\nz = indices + 1;\n",
        "z", ("[3, 1, 2]",), ("[1, 2, 3] (ints)",), ("[1, 2, 3] (ints)",)),
    "an unused statement that fails only on the example": Case(
        "a = tokens_int / (indices - 1);\nz = indices * 2;\n",
        "z", ("[3, 1, 2]",), ("[0, 2, 4] (ints)",), ("[0, 2, 4] (ints)",)),
    "V1: a failing re-binding of an atom keeps the atom": Case(
        "x = 1;\nx = tokens_int / (indices - 1);\ny = tokens_int + x;\n",
        "y", ("[3, 1, 2]", "[5]"), ("[4, 2, 3] (ints)", "[6] (ints)"), None),
    "V2: a failing re-binding of tokens keeps the strings": Case(
        "tokens = tokens_int / (indices - 1);\ny = tokens + tokens;\n",
        "y", ("[3, 1, 2]",), ("[33, 11, 22] (strings)",), None),
    "V3: a failing re-binding of an s-op keeps the s-op": Case(
        "x = indices;\ny = x + 1;\nx = tokens_int / (indices - 1);\nz = y + x;\n",
        "z", ("[3, 1, 2]",), ("[1, 3, 5] (ints)",), None),
    "a static type error in a re-binding": Case(
        "x = indices;\nx = tokens + select(indices, indices, ==);\ny = x + 1;\n",
        "y", ("[3, 1, 2]",), ("[1, 2, 3] (ints)",), None),
    "an unused failing sub-expression: rasp-sim's lazy run accepts, the original not": Case(
        "y = indices;\ny = [tokens_int / (indices - 1), indices + 10][1];\n",
        "y", ("[3, 1, 2]",), ("[0, 1, 2] (ints)",), ("[10, 11, 12] (ints)",)),
    "a missing load file": Case(
        'load "nothere";\nz = indices + 1;\n',
        "z", ("[3, 1, 2]",), ("[1, 2, 3] (ints)",), ("[1, 2, 3] (ints)",)),
    "a loaded file that sets a library name": Case(
        'load "lib";\nz = indices + y + length;\n',
        "z", ("[3, 1, 2]",), ("[104, 105, 106] (ints)",), ("[104, 105, 106] (ints)",),
        files={"lib": "length = 100;\ny = length + 1;\n"}),
    "a library name set by a file loaded by a loaded file holds in its loader": Case(
        'load "mid";\nz = indices + m;\n',
        "z", ("[3, 1, 2]",), ("[201, 202, 203] (ints)",), ("[201, 202, 203] (ints)",),
        files={"lib": "length = 100;\ny = length + 1;\n",
               "mid": 'load "lib";\nm = length + y;\n'}),
    "draw in a program": Case(
        "z = indices + 1;\ndraw(z);\nw = z * 3;\n",
        "w", ("[3, 1, 2]",), ("[3, 6, 9] (ints)",), ("[3, 6, 9] (ints)",), failures=0),
}
