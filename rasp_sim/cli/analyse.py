"""`rasp-sim analyse` and `rasp-sim draw`: the layers and heads a program needs."""
from __future__ import annotations

import argparse

from .json_text import json_text
from .options import (
    add_example_input_option, add_exact_option, add_json_option, add_name_options, add_sandbox_option, add_strict_option,
    chosen_name, refuse_options, refuse_overwriting_input,
)


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
        "draw", help="draw an s-op's graph, one band per layer (.png, .svg or .dot)",
        description="Write NAME's computation graph, grouped into layers: "
        "OUT.dot (DOT text), OUT.svg or OUT.png (drawn by Graphviz when its `dot` program "
        "is installed, else by matplotlib).",
    )
    _common(draw)
    draw.add_argument("-o", "--output", required=True, metavar="OUT",
                      help="output file: .dot, .svg or .png")
    add_example_input_option(draw, "label every node with its value on this input")
    add_exact_option(draw)
    draw.set_defaults(handler=run_draw)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the .rasp program")
    add_name_options(parser)
    add_strict_option(parser)
    add_sandbox_option(parser)


def run_analyse(args: argparse.Namespace) -> int:
    from ..analyse import analyse, format_table
    from .program import load_named_node

    name, node = load_named_node(args.file, chosen_name(args), strict=args.strict,
                                 sandbox=args.sandbox)
    analysis = analyse(node)
    if args.json:
        print(json_text({"name": name, **analysis.to_json()}, indent=2))
    else:
        print(f"{name}:")
        print(format_table(analysis))
    return 0


def run_draw(args: argparse.Namespace) -> int:
    from ..analyse import analyse
    from ..draw import drawing, render
    from ..graph import ancestors
    from .inputs import parse_input
    from .program import load_program

    name = chosen_name(args)
    refuse_overwriting_input(args.output, args.file)
    if args.input is None:
        refuse_options(args, {"exact": "only the values on --input depend on it"},
                       "a drawing without --input")
    program = load_program(args.file, exact=args.exact, strict=args.strict,
                           sandbox=args.sandbox)
    _, node = program.node(name)
    analysis = analyse(node)
    values = None
    if args.input is not None:
        nodes = list(ancestors(node))
        example = parse_input(args.input, exact=program.exact)
        (results,) = program.evaluate_nodes(nodes, [example])
        values = dict(zip(nodes, results))
    path, renderer = render(drawing(analysis, values), args.output)
    print(f"wrote {path} ({renderer})")
    return 0
