"""`rasp-sim report`: one self-contained HTML page about a compiled model on one input."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import add_memory_limit_option, add_unvalidated_option, check_output
from .output_file import is_standard_output, output_format, write_output
from .trace import add_model_and_input

if TYPE_CHECKING:
    from ..compiled.model import Model
    from ..compiled.model_files import ModelFiles
    from ..pictures.report import Reference


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
                        help="the page to write; - for standard output")
    add_unvalidated_option(parser)
    add_memory_limit_option(parser, "size of the model's arrays to read")
    parser.set_defaults(handler=run_report)


def _reference(model: "Model", sequence: Any, files: "ModelFiles") -> "Reference":
    """The interpreter's output on `sequence` for the program the compile record names,
    or a `Reference` saying why there is none: the program is not a file the model may
    name (rasp_sim/compiled/model_files.py: its own folder or the library), or it fails."""
    from ..base.errors import RaspError
    from ..compiled.model_files import Refused
    from ..pictures.report import Reference

    file, name = model.info.get("program"), model.info.get("name")
    if not isinstance(file, str) or not file:
        return Reference(None, "the compile record names no program")
    try:
        return Reference(files.run_program(file).run([sequence], name)[0])
    except Refused as refusal:
        return Reference(None, f"the compiled program is not run: {refusal}")
    except RaspError as error:
        return Reference(None, f"the interpreter fails on it: {error.message}")


def run_report(args: argparse.Namespace) -> int:
    from ..base.errors import RaspError
    from ..compiled.model import load_model
    from ..compiled.model_files import ModelFiles
    from ..pictures.report import report_html
    from .inputs import atoms, command_line_input

    output_format(args.output, None, ("html", "htm"))
    check_output(args.output, args.model, stream_ok=True)
    model = load_model(args.model, allow_unvalidated=args.allow_unvalidated,
                       memory_limit=args.memory_limit)
    if model.warning:
        print(model.warning, file=sys.stderr)
    sequence = atoms(command_line_input(args.input, 1))
    trace = model.trace(sequence)
    files = ModelFiles.of(args.model)
    page = report_html(model, trace, _reference(model, sequence, files),
                       f"rasp-sim report: {Path(args.model).name}", files)
    try:
        write_output(args.output, page.encode("utf-8"))
    except OSError as error:
        raise RaspError(f"cannot write {args.output}: {error.strerror or error}") from None
    if not is_standard_output(args.output):
        print(f"wrote {args.output}")
    return 0
