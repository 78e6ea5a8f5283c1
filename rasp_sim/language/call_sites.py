"""Where an error found inside a loaded file (the standard library, `programs/`) is
reported: at the user's statement that led there. Shared by the command line and the
Python API, so it lives with the language both stand on."""
from __future__ import annotations

from pathlib import Path

from ..base.errors import RaspError, Span, at_caller
from ..base.program_files import read_program
from .ast import Assign
from .parser import parse


def binding_span(file: str, name: str) -> Span | None:
    """The span of the last statement of `file` that binds `name`, or None."""
    try:
        program = parse(read_program(file), file)
    except RaspError:
        return None
    bindings = [s for s in program.statements if isinstance(s, Assign) and name in s.names]
    return bindings[-1].span if bindings else None


def at_call_site(error: RaspError, binding: Span | None) -> RaspError:
    """An error located in a loaded file (the standard library, `programs/`) is reported
    at `binding`, the user's statement that binds the evaluated name (the call that led
    there; see `binding_span`), with the loaded file's line as a note: graph nodes built
    inside a library function remember only the library's lines."""
    if (error.span is None or binding is None
            or Path(error.span.file).resolve() == Path(binding.file).resolve()):
        return error
    return at_caller(error, binding)
