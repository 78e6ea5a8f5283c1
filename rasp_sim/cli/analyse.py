"""`rasp-sim analyse` and `rasp-sim draw`: the layers and heads a program needs."""
from __future__ import annotations

import argparse
import json

from .inputs import parse_input
from .program import add_sandbox_option, load_named_node, load_program


def register(subparsers: argparse._SubParsersAction) -> None:
    analyse = subparsers.add_parser(
        "analyse", aliases=["analyze"],
        help="layers, heads per layer and head widths of an s-op",
        description="Schedule NAME into transformer layers with the original RASP's rules "
        "and print layers, heads per layer, each head's value width and the maps per layer.",
    )
    _common(analyse)
    analyse.add_argument("--json", action="store_true", help="print the analysis as JSON")
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
    draw.add_argument("--input", metavar="TEXT",
                      help="label every node with its value on this input")
    draw.set_defaults(handler=run_draw)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="the .rasp program")
    parser.add_argument("name", nargs="?", help="the s-op or selector (default: the last "
                        "one assigned)")
    parser.add_argument("--strict", action="store_true", help="disable every extension")
    add_sandbox_option(parser)


def run_analyse(args: argparse.Namespace) -> int:
    from ..analyse import analyse, format_table

    name, node = load_named_node(args.file, args.name, strict=args.strict,
                                 sandbox=args.sandbox)
    analysis = analyse(node)
    if args.json:
        print(json.dumps({"name": name, **analysis.to_json()}, indent=2))
    else:
        print(f"{name}:")
        print(format_table(analysis))
    return 0


def run_draw(args: argparse.Namespace) -> int:
    from ..analyse import analyse
    from ..draw import drawing, render
    from ..graph import ancestors

    program = load_program(args.file, strict=args.strict, sandbox=args.sandbox)
    _, node = program.node(args.name)
    analysis = analyse(node)
    values = None
    if args.input is not None:
        nodes = list(ancestors(node))
        (results,) = program.evaluate_nodes(nodes, [parse_input(args.input)])
        values = dict(zip(nodes, results))
    path, renderer = render(drawing(analysis, values), args.output)
    print(f"wrote {path} ({renderer})")
    return 0
