"""Running a program file and picking out the s-op or selector a command works on, and
the `--sandbox` option of every command that runs program files."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import RaspNameError, RaspTypeError
from ..graph import Node
from ..interpreter import Interpreter
from ..values import kind_name


def add_sandbox_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sandbox", action="store_true",
                        help="for programs you did not write: `load` reads only .rasp files "
                        "in the program's folder (subfolders included) and the bundled "
                        "library; paths that escape it (.., absolute, symlinks) are refused")


def sandbox_folder(file: str | None, sandbox: bool) -> Path | None:
    """The folder `--sandbox` confines `load` to: FILE's folder, or the current folder
    when there is no FILE (the REPL); None without `--sandbox`."""
    if not sandbox:
        return None
    return Path(file).parent if file else Path()


def load_named_node(file: str, name: str | None, *, exact: bool = False,
                    strict: bool = False, sandbox: bool = False) -> tuple[str, Node]:
    """Run `file` (run mode: no running example) and return `name`'s s-op or selector.

    Without `name`, the last name the program assigned is used. `sandbox`: see
    `add_sandbox_option`."""
    interpreter = Interpreter(exact=exact, strict=strict,
                              sandbox=sandbox_folder(file, sandbox))
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
        kind = kind_name(value)  # atom, list, dict or function here
        article = "an" if kind[0] in "aeiou" else "a"
        raise RaspTypeError(f"{name!r} is {article} {kind}, not an s-op or selector: "
                            "only s-ops and selectors run on inputs")
    return name, value
