"""`rasp-sim from-tracr`: a tracr program (Python) as a `.rasp` file (docs/tracr.md).

MODULE:NAME names the program: MODULE a Python file (`path/to/prog.py`) or a module
importable from the current folder (`package.module`), NAME an attribute in it (dots
allowed): a tracr s-op, a function of no arguments that returns one, or an InterpBench
case (a class or object with `get_program()`, whose `get_vocab()` and
`get_max_seq_len()` then give the defaults of --vocab and --max-len; InterpBench's
length counts BOS, so --max-len defaults to one less). Importing MODULE runs its code.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from ..base.errors import RaspError
from . import UsageError
from ..base.counts import positive
from .options import check_output
from .output_file import is_standard_output


class ImportFailed(RaspError):
    kind = "cannot import"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "from-tracr", help="write a tracr program (Python) as a .rasp file",
        description="Import the tracr RASP program MODULE:NAME and write it as RASP text "
        "that `rasp-sim run` runs with tracr's values (rasp.evaluate's) on every input over "
        "the vocabulary up to --max-len: opaque Python functions become lookup tables over "
        "the values that can reach them, and tracr's None a stand-in value (docs/tracr.md).")
    parser.add_argument("program", metavar="MODULE:NAME",
                        help="a Python file or importable module, and the attribute that is "
                        "(or returns) the tracr s-op; e.g. prog.py:make_program")
    parser.add_argument("--vocab", metavar="V1,V2,...",
                        help="the tokens, comma-separated; each read as JSON where it parses "
                        "(1 is an int, a is the string 'a'), as `compile --vocab` reads "
                        "tokens_asis")
    parser.add_argument("--max-len", type=positive, metavar="N",
                        help="the longest input (tracr's max_seq_len)")
    parser.add_argument("-o", "--output", metavar="FILE.rasp",
                        help="write the program here (default, or -: standard output)")
    parser.add_argument("--check", action="store_true",
                        help="then compare the program with tracr's rasp.evaluate on every "
                        "input up to 100,000 (else 10,000 sampled ones and structured ones) "
                        "and exit 1 on any disagreement")
    parser.set_defaults(handler=run_from_tracr)


def run_from_tracr(args: argparse.Namespace) -> int:
    from ..base.atomic_write import write_text
    from ..tracr_frontend import to_rasp

    module_path, sop, vocab, max_len = _load(args.program)
    if args.output is not None:
        check_output(args.output, module_path, stream_ok=True)
        if is_standard_output(args.output):
            args.output = None  # the default: standard output
    if args.vocab is not None:
        from ..compiler import tracr_driver

        vocab = tracr_driver.parse_vocab(args.vocab.split(","), "asis")
    if args.max_len is not None:
        max_len = args.max_len
    if vocab is None or max_len is None:
        raise UsageError(f"{args.program}: give --vocab and --max-len (the program does not "
                         "say them)")
    translation = to_rasp(sop, vocab, max_len)
    for note in translation.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(translation.text)
    else:
        write_text(args.output, translation.text)
        print(f"wrote {args.output}: {translation.output} and {len(translation.names) - 1} "
              "more s-ops and selectors", file=sys.stderr)
    if args.check:
        return _check(sop, translation, vocab, max_len, args.output or "<stdout>")
    return 0


def _check(sop: Any, translation: Any, vocab: list, max_len: int, where: str) -> int:
    from tracr.rasp import rasp

    from ..api import parse
    from ..tracr_frontend.agreement import compare, domain

    program = parse(translation.text, file=where)
    inputs, whole = domain(vocab, 1, max_len)
    result = compare(lambda x: rasp.evaluate(sop, x), program, inputs)
    scope = "every input" if whole else "a sample"
    print(f"checked against rasp.evaluate on {scope}: {result.checked:,} inputs "
          f"({result.positions:,} positions; {result.none_positions:,} where tracr gives "
          f"None and {result.tracr_failed:,} inputs where it raises, not compared): "
          f"{result.wrong:,} disagree", file=sys.stderr)
    for tokens, theirs, mine in result.disagreements:
        print(f"  on {tokens}: tracr {theirs}, rasp-sim {mine}", file=sys.stderr)
    return 0 if result.ok else 1


def _load(spec: str) -> tuple[str | None, Any, list | None, int | None]:
    """The module's path (if a file), the tracr s-op, and the vocabulary and maximum
    length the program says (InterpBench cases), else None."""
    from tracr.rasp import rasp

    module_name, colon, attribute = spec.rpartition(":")
    if not colon or not module_name or not attribute:
        raise UsageError(f"{spec!r}: expected MODULE:NAME, e.g. prog.py:make_program")
    path = Path(module_name)
    try:
        if module_name.endswith(".py"):
            if not path.is_file():
                raise ImportFailed(f"{module_name}: " + ("not a regular file" if path.exists()
                                                         else "no such Python file"))
            sys.path.insert(0, str(path.resolve().parent))  # its own imports
            # a private module name: a file called json.py must not replace the json module
            name = f"rasp_sim_from_tracr_{path.stem}"
            loader = importlib.util.spec_from_file_location(name, path)
            assert loader is not None and loader.loader is not None
            module = importlib.util.module_from_spec(loader)
            sys.modules[name] = module  # dataclasses and pickling look modules up by name
            loader.loader.exec_module(module)
        else:
            sys.path.insert(0, os.getcwd())  # as `python -m` finds modules
            module = importlib.import_module(module_name)
    except RaspError:
        raise
    except BaseException as error:  # noqa: BLE001: the user's module may raise anything
        if isinstance(error, KeyboardInterrupt):
            raise
        raise ImportFailed(f"{module_name}: importing it raised {type(error).__name__}: "
                           f"{error}") from error
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise ImportFailed(f"{module_name} has no attribute {attribute!r}")
        target = getattr(target, part)
    vocab = max_len = None
    try:
        if isinstance(target, type) and hasattr(target, "get_program"):
            target = target()  # an InterpBench case class
        if hasattr(target, "get_program"):
            vocab, max_len = list(target.get_vocab()), int(target.get_max_seq_len()) - 1
            target = target.get_program()
        elif callable(target) and not isinstance(target, rasp.RASPExpr):
            target = target()
    except Exception as error:  # noqa: BLE001: the user's code may raise anything
        raise ImportFailed(f"{spec}: calling it raised {type(error).__name__}: {error}") \
            from error
    if not isinstance(target, rasp.SOp):
        raise ImportFailed(f"{spec} is a {type(target).__name__}, not a tracr s-op "
                           "(rasp.SOp) or a function of no arguments returning one")
    return (str(path) if module_name.endswith(".py") else None), target, vocab, max_len
