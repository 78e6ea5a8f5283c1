"""`rasp-sim report`: one self-contained HTML page about a compiled model on one input."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import UsageError
from .options import add_memory_limit_option, add_unvalidated_option, check_output
from .trace import add_model_and_input

if TYPE_CHECKING:
    from ..model import Model
    from ..report import Reference


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report", help="a compiled model on one input, as one self-contained HTML page",
        description="Run the compiled MODEL on one input and write an HTML page with the "
        "layer diagram (each block's RASP operations and source lines), the residual "
        "stream after every block, every head's attention pattern, every MLP's "
        "activations, and the decoded output next to the interpreter's. The page loads "
        "nothing: its figures are inline.")
    add_model_and_input(parser)
    parser.add_argument("-o", "--output", required=True, metavar="OUT.html",
                        help="the page to write")
    add_unvalidated_option(parser)
    add_memory_limit_option(parser, "size of the model's arrays to read")
    parser.set_defaults(handler=run_report)


def _reference(model: "Model", sequence: Any) -> "Reference":
    """The interpreter's output on `sequence` for the program the compile record names,
    or a `Reference` saying why there is none (the program file moved, or fails)."""
    from ..errors import RaspError
    from ..report import Reference
    from .program import load_program

    info = model.info
    file, name = info.get("program"), info.get("name")
    if not file or not Path(file).is_file():
        return Reference(None, f"the compiled program {file!r} is not readable from here")
    try:
        return Reference(load_program(file).run([sequence], name)[0])
    except RaspError as error:
        return Reference(None, f"the interpreter fails on it: {error.message}")


def run_report(args: argparse.Namespace) -> int:
    from ..atomic_write import write_bytes
    from ..errors import RaspError
    from ..model import load_model
    from ..report import report_html
    from .inputs import atoms, command_line_input

    if Path(args.output).suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"-o {args.output}: the report is an HTML page (OUT.html)")
    check_output(args.output, args.model)
    model = load_model(args.model, allow_unvalidated=args.allow_unvalidated,
                       memory_limit=args.memory_limit)
    if model.warning:
        print(model.warning, file=sys.stderr)
    sequence = atoms(command_line_input(args.input, 1))
    trace = model.trace(sequence)
    page = report_html(model, trace, _reference(model, sequence),
                       f"rasp-sim report: {Path(args.model).name}")
    try:
        write_bytes(Path(args.output), page.encode("utf-8"))
    except OSError as error:
        raise RaspError(f"cannot write {args.output}: {error.strerror or error}") from None
    print(f"wrote {args.output}")
    return 0
