"""Running a program file and picking out the s-op or selector a command works on."""
from __future__ import annotations

from ..errors import RaspNameError, RaspTypeError
from ..graph import Node
from ..interpreter import Interpreter
from ..values import kind_name


def load_named_node(file: str, name: str | None, *, exact: bool = False,
                    strict: bool = False) -> tuple[str, Node]:
    """Run `file` (run mode: no running example) and return `name`'s s-op or selector.

    Without `name`, the last name the program assigned is used."""
    interpreter = Interpreter(exact=exact, strict=strict)
    interpreter.run_file(file)
    if name is None:
        name = interpreter.last_assigned_name
        if name is None:
            raise RaspNameError(f"{file} assigns no names: nothing to evaluate "
                                "(pass --name NAME)")
    try:
        value = interpreter.lookup(name)
    except RaspNameError:
        raise RaspNameError(f"{file} defines no name {name!r}") from None
    if not isinstance(value, Node):
        raise RaspTypeError(f"{name!r} is a {kind_name(value)}, not an s-op or selector: "
                            "only s-ops and selectors run on inputs")
    return name, value
