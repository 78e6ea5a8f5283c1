"""`rasp-sim analyse` and `rasp-sim draw`: the layers and heads a program needs."""
from __future__ import annotations

import argparse

from ..pictures.draw_formats import DEFAULT_DPI, DRAW_FORMATS
from .json_text import json_text
from .options import (
    add_example_input_option, add_exact_option, add_json_option, add_name_options, add_sandbox_option, add_strict_option,
    chosen_name, refuse_options, check_output,
)
from .output_file import add_format_option, is_standard_output, output_file, output_format


def register(subparsers: argparse._SubParsersAction) -> None:
    analyse = subparsers.add_parser(
        "analyse", aliases=["analyze"],
        help="layers, heads per layer and head widths of an s-op",
        description="Schedule NAME into transformer layers with the original RASP's rules "
        "and print layers, heads per layer, each head's value width and the maps per layer.",
    )
    _common(analyse)
    add_json_option(analyse, "print the analysis as JSON")
    analyse.set_defaults(handler=run_analyse)

    draw = subparsers.add_parser(
        "draw", help="draw an s-op's graph, one band per layer (.svg, .png, .pdf or .dot)",
        description="Write NAME's computation graph, grouped into layers: OUT.svg, OUT.png "
        "or OUT.pdf (a picture), or OUT.dot (Graphviz DOT text). Each call into a library "
        "is one box named by the call, constants are written into the nodes that use "
        "them, and with --input every s-op shows its value and every selector its query x "
        "key grid.",
    )
    _common(draw)
    draw.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="output file: .svg, .png, .pdf or .dot; - for standard output "
                      "(in --format)")
    add_format_option(draw, DRAW_FORMATS)
    draw.add_argument("--expand", action="store_true",
                      help="draw the nodes inside library calls instead of one box per call")
    draw.add_argument("--dpi", type=_dpi, default=DEFAULT_DPI, metavar="N",
                      help=f"resolution of a .png (default {DEFAULT_DPI}; .svg and .pdf "
                      "are vector pictures)")
    add_example_input_option(draw, "label every node with its value on this input "
                             "(selectors as query x key grids)")
    add_exact_option(draw)
    draw.set_defaults(handler=run_draw)


def _dpi(text: str) -> float:
    """--dpi: a resolution from 10 to 1000 dots per inch."""
    try:
        dpi = float(text)
    except ValueError:
        dpi = float("nan")
    if not 10 <= dpi <= 1000:
        raise argparse.ArgumentTypeError(f"expected dots per inch from 10 to 1000, got {text!r}")
    return dpi


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the .rasp program")
    add_name_options(parser)
    add_strict_option(parser)
    add_sandbox_option(parser)


def run_analyse(args: argparse.Namespace) -> int:
    from ..language.analyse import analyse, format_table
    from .program import run_statements

    name = chosen_name(args)
    program = run_statements(args.file, name, strict=args.strict, sandbox=args.sandbox,
                             command="analyse")
    name, node = program.node(name)
    analysis = analyse(node)
    if args.json:
        print(json_text({"name": name, **analysis.to_json()}, indent=2))
    else:
        print(f"{name}:")
        print(format_table(analysis))
    return 0


def run_draw(args: argparse.Namespace) -> int:
    from ..language.analyse import analyse
    from ..pictures.draw import drawing, write_picture
    from ..pictures.draw_collapse import call_names
    from ..core.graph import ancestors
    from .inputs import parse_input
    from .program import run_statements

    name = chosen_name(args)
    check_output(args.output, args.file, stream_ok=True)
    picture_format = output_format(args.output, args.format, DRAW_FORMATS)
    if args.input is None:
        refuse_options(args, {"exact": "only the values on --input depend on it"},
                       "a drawing without --input")
    program = run_statements(args.file, name, exact=args.exact, strict=args.strict,
                             sandbox=args.sandbox, command="draw")
    _, node = program.node(name)
    analysis = analyse(node)
    values, example = None, None
    if args.input is not None:
        nodes = list(ancestors(node))
        example = parse_input(args.input, exact=program.exact)
        (results,) = program.evaluate_nodes(nodes, [example])
        values = dict(zip(nodes, results))
    picture = drawing(analysis, values, example, user_file=args.file,
                      call_names=call_names(args.file, program.values), expand=args.expand)
    with output_file(args.output) as stream:
        renderer = write_picture(picture, stream, picture_format, args.dpi)
    if not is_standard_output(args.output):
        print(f"wrote {args.output} ({renderer})")
    return 0
