"""`rasp-sim circuit`: a compiled model's ground-truth circuit (docs/transformer_lens.md,
"Ground-truth circuits"), written as JSON or a picture, and with --check proved by
ablation on the model's domain."""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from . import UsageError
from .options import add_memory_limit_option, add_unvalidated_option
from .output_file import add_format_option, is_standard_output, output_file, written
from .trace import output_and_model

if TYPE_CHECKING:
    import networkx as nx

FORMATS = ("json", "svg", "png", "pdf", "dot")
CHECKS = ("zero", "mean", "resample", "all")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "circuit", help="a compiled model's ground-truth circuit, proved by ablation",
        description="The computational graph of the compiled MODEL read from its weights: "
        "the embeddings, every attention head, every MLP and the unembedding, each with its "
        "RASP operations and source line; an edge where a node reads residual directions an "
        "earlier one writes. Without -o a summary is printed; -o writes it as JSON, a "
        "picture or DOT text. --check runs the TransformerLens model with every edge "
        "outside the circuit ablated on the whole domain, and each circuit edge removed "
        "alone (needs the interp extra); exit status 1 if the circuit is not faithful.")
    parser.add_argument("model", metavar="MODEL", help="a compiled model (.npz or .safetensors)")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="write the graph: OUT.json, OUT.svg, OUT.png, OUT.pdf or OUT.dot; "
                        "- for standard output (in --format, default json)")
    add_format_option(parser, FORMATS)
    parser.add_argument("--names", choices=("rasp", "transformer_lens"), default="rasp",
                        help="node names: short ones (block3.head0, the default) or "
                        "TransformerLens hook names as ACDC and InterpBench write them")
    parser.add_argument("--check", choices=CHECKS, metavar="ABLATION",
                        help="prove the circuit under zero, mean or resample ablation, or all "
                        "three (needs torch and transformer-lens: pip install "
                        "'rasp-sim[interp]')")
    parser.add_argument("--drop", action="append", default=[], metavar="SENDER->RECEIVER",
                        help="with --check: check the circuit without this edge (repeat it "
                        "for several), e.g. --drop 'block2.mlp->block3.head0'")
    parser.add_argument("--inputs", metavar="FILE",
                        help="with --check: check on these inputs, one per line as `run "
                        "--inputs` reads them, instead of the whole domain (a numeric-input "
                        "model has no finite domain and needs them)")
    add_unvalidated_option(parser)
    add_memory_limit_option(parser, "size of the model's arrays to read")
    parser.set_defaults(handler=run_circuit)


def run_circuit(args: argparse.Namespace) -> int:
    from ..compiled.circuit import circuit_json

    if args.check is None and (args.inputs is not None or args.drop):
        raise UsageError(f"{'--inputs' if args.inputs is not None else '--drop'} is for "
                         "--check (what the circuit is checked on, and without)")
    chosen, model = output_and_model(args, FORMATS)
    graph = model.circuit(names=args.names)
    check = None
    if args.check is not None:
        ablations = ("zero", "mean", "resample") if args.check == "all" else (args.check,)
        check = model.check_circuit(_without(graph, args.drop), ablations=ablations,
                                    names=args.names,
                                    inputs=None if args.inputs is None else _inputs(args))
    # the summaries go to stderr when the graph itself goes to standard output
    messages = sys.stderr if args.output is not None and is_standard_output(args.output) \
        else sys.stdout
    if args.output is None:
        print("\n".join(summary(graph)), file=messages)
    else:
        with output_file(args.output) as stream:
            if chosen == "json":
                data: dict[str, Any] = circuit_json(graph)
                if check is not None:
                    data["check"] = check.to_json()
                stream.write((json.dumps(data, indent=1) + "\n").encode("utf-8"))
            else:
                from ..pictures.circuit_picture import circuit_drawing
                from ..pictures.draw import write_picture

                write_picture(circuit_drawing(graph), stream, chosen or "svg")
        if not is_standard_output(args.output):
            print(f"wrote {written(args.output)}", file=messages)
    if check is not None:
        print(check.summary(), file=messages)
        return 0 if check.ok else 1
    return 0


def _without(graph: "nx.DiGraph", dropped: list[str]) -> list[tuple[Any, Any]] | None:
    """The ground-truth circuit (every live edge) less the --drop edges, each checked to
    be one of its edges; None (the ground truth) when nothing is dropped."""
    from ..base.errors import RaspError

    if not dropped:
        return None
    live = [(a, b) for a, b, dead in graph.edges(data="dead") if not dead]
    removed = set()
    for text in dropped:
        sender, arrow, receiver = text.partition("->")
        edge = (sender.strip(), receiver.strip())
        if not arrow or edge not in live:
            raise RaspError(f"--drop {text}: not an edge SENDER->RECEIVER of the ground-truth "
                            "circuit (rasp-sim circuit MODEL lists them)")
        removed.add(edge)
    return [edge for edge in live if edge not in removed]


def _inputs(args: argparse.Namespace) -> list[Any]:
    """The inputs of --inputs FILE, read as `run --inputs` reads them; the first line that
    is not an input is its located error."""
    from .inputs import BadInput, atoms, read_inputs_file
    from .run import INPUTS_FILE_SHARE

    entries = read_inputs_file(args.inputs, max_bytes=args.memory_limit // INPUTS_FILE_SHARE)
    if not isinstance(entries, list):  # a matrix of numbers read in bulk
        return [list(row) for row in entries]
    inputs = []
    for entry in entries:
        if isinstance(entry, BadInput):
            raise entry.error
        inputs.append(atoms(entry))
    return inputs


def summary(graph: "nx.DiGraph") -> list[str]:
    """One line per node (its operations and source, dead or not, its TransformerLens
    hook) and per edge (the roles reading it and the directions it carries)."""
    from ..pictures.trace_plot import short_at

    nodes = sorted(graph.nodes, key=lambda n: graph.nodes[n]["order"])
    dead = sum(graph.nodes[n]["dead"] for n in nodes)
    lines = [f"{len(nodes)} nodes ({dead} dead), {graph.number_of_edges()} edges"]
    for node in nodes:
        data = graph.nodes[node]
        ops = "; ".join(entry["op"] + (f" @ {short_at(entry['at'])}"
                                       if entry.get("at") else "")
                        for entry in data["operations"])
        hook = data["hook"] + ("" if data["hook_index"] == "[:]" else data["hook_index"])
        lines.append(f"{node}: {ops or data['kind']} [{hook}]"
                     + (" (dead)" if data["dead"] else ""))
    for a, b, data in sorted(graph.edges(data=True), key=lambda e: (
            graph.nodes[e[1]]["order"], graph.nodes[e[0]]["order"])):
        roles = ", ".join(f"{role}: {' '.join(d)}" for role, d in data["reads"].items())
        lines.append(f"  {a} -> {b} ({roles})" + (" (dead)" if data["dead"] else ""))
    return lines
