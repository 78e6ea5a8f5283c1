"""The Python API's entry points (docs/python.md): RASP source -> `Program` -> `Model`.

`parse` and `load` run a program as `rasp-sim run` does, except that a failing statement
raises its error; `compile` lowers one of its s-ops
to validated transformer weights as `rasp-sim compile` does (tracr, without JAX: the
weights are validated against the interpreter by the NumPy forward pass). Every error is a
`RaspError` with its file:line:col; a program the compiler cannot lower, or weights that
disagree with their program, raise a `CompileError`.
"""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any, Sequence

from .base import api_arguments as arguments
from .base.counts import positive, sample_count, seed_number
from .base.errors import CompileError, RaspError, RaspTypeError
from .core.graph import SOp
from .compiled.model import Model
from .language.program import Program
from .base.program_files import read_program
from .language.repl_session import Session


def parse(text: str, *, file: str | None = None, exact: bool = False,
          strict: bool = False, sandbox: str | os.PathLike | None = None) -> Program:
    """Run the RASP program `text` (named `file` in messages, default `"<string>"`).

    `exact` computes with Fractions (float literals are the decimals they spell);
    `strict` disables every extension (docs/language.md); `sandbox`, a folder, confines
    `load` to the `.rasp` files in it and the bundled library. What the program's
    statements display (`draw` and `show example`; a bare expression displays nothing
    outside the REPL) is printed, as `rasp-sim run` prints it."""
    text = arguments.text("parse", text, "text")
    file = arguments.optional_text("parse", file, "file")
    session = Session(exact=arguments.flag("parse", exact, "exact"),
                      strict=arguments.flag("parse", strict, "strict"),
                      sandbox=arguments.optional_path("parse", sandbox, "sandbox"))
    return session.run_source(text, file or "<string>")


def load(path: str | os.PathLike, *, exact: bool = False, strict: bool = False,
         sandbox: bool = False) -> Program:
    """Run the program file `path` (UTF-8, at most rasp_sim.base.program_files.MAX_PROGRAM_BYTES);
    `sandbox=True` confines `load` to the file's folder, as `--sandbox` does."""
    path = arguments.path("load", path, "path")
    session = Session(exact=arguments.flag("load", exact, "exact"),
                      strict=arguments.flag("load", strict, "strict"),
                      sandbox=Path(path).parent if arguments.flag("load", sandbox, "sandbox")
                      else None)
    return session.run_source(read_program(path), path)


def compile(program: Program, name: str | None = None, *,  # noqa: A001 (the API's verb)
            vocab: Sequence[Any] | None = None, max_len: int, min_len: int | None = None,
            numeric_tokens: bool = False, token_range: tuple[float, float] = (-1000.0, 1000.0),
            causal: bool = False, samples: int | None = None, seed: int = 0,
            force: bool = False, exhaustive: bool = False,
            proof_dir: str | os.PathLike | None = None, workers: int | None = None,
            scheduler: str | None = None) -> Model:
    """The s-op `name` of `program` (default: the last name assigned) as validated
    transformer weights, as `rasp-sim compile` builds them.

    The domain is every sequence over `vocab` (values as the program's tokens read them,
    e.g. [1, 2, 3] for tokens_int) of length min_len..max_len, or with `numeric_tokens`
    real tokens in `token_range`. The weights are validated against the interpreter on
    the whole domain up to 100,000 inputs, else on `samples` seeded random inputs plus
    structured ones (docs/compiler.md says what that proves). A model that disagrees
    raises a CompileError naming the input, unless `force` (the model is then marked
    unvalidated). `causal` builds a decoder-style model (validated against the causal
    program).

    `exhaustive=True` then proves the model on every input of the domain, whatever its
    size, as `rasp-sim compile --exhaustive` does: progress lines on stderr, the chunks on
    a local Dask cluster of `workers` processes (default: the machine's cores) or on the
    Dask `scheduler` address, the proof recorded in `Model.proof`. Finished chunks are
    recorded in `proof_dir` (default: a temporary folder, removed afterwards), so an
    interrupted proof resumes when compile is called again with the same `proof_dir`."""
    if not isinstance(program, Program):
        raise RaspTypeError("compile takes a Program (from rasp_sim.parse or rasp_sim.load), "
                            f"not a {type(program).__name__}")
    name = arguments.optional_text("compile", name, "name")
    max_len = arguments.integer("compile", max_len, "max_len", 1)
    min_len = None if min_len is None else arguments.integer("compile", min_len, "min_len", 1)
    samples = (None if samples is None else
               arguments.option_integer("compile", samples, "samples", 1, sample_count))
    seed = arguments.option_integer("compile", seed, "seed", 0, seed_number)
    workers = (None if workers is None else
               arguments.option_integer("compile", workers, "workers", 1, positive))
    token_range = arguments.number_range("compile", token_range, "token_range")
    vocab = None if vocab is None else arguments.vocabulary("compile", vocab)
    numeric_tokens, causal, force, exhaustive = (
        arguments.flag("compile", value, flag) for value, flag in (
            (numeric_tokens, "numeric_tokens"), (causal, "causal"), (force, "force"),
            (exhaustive, "exhaustive")))
    proof_dir = arguments.optional_path("compile", proof_dir, "proof_dir")
    scheduler = arguments.scheduler("compile", scheduler)
    driver = _driver()
    node_name, root = program.node(name)
    if not isinstance(root, SOp):
        raise CompileError(f"'{node_name}' is a selector; only s-ops can be compiled", root.span)
    if numeric_tokens == (vocab is not None):
        raise CompileError("give exactly one of vocab (the token values) and "
                           "numeric_tokens=True (real-valued tokens)")
    if exhaustive and numeric_tokens:
        raise CompileError("exhaustive=True: a numeric_tokens model reads real numbers, so "
                           "its domain is infinite and cannot be enumerated (its validation "
                           "is sampled: samples=)")
    if not exhaustive and (proof_dir, workers, scheduler) != (None, None, None):
        raise CompileError("proof_dir, workers and scheduler are for an exhaustive proof: "
                           "add exhaustive=True")
    numeric = None
    if numeric_tokens:
        numeric = driver.NumericDomain(max_len if min_len is None else min_len, max_len,
                                       *token_range)
        values: list = []
    else:
        kind = driver.tokens_kind(root)
        values = list(vocab or []) if kind == "asis" else driver.parse_vocab(list(vocab or []), kind)
    try:
        result = driver.compile_program(
            root, values, max_len, causal=causal,
            samples=samples or (driver.NUMERIC_SAMPLES if numeric else driver.DEFAULT_SAMPLES),
            seed=seed, program=program.source, name=node_name, tracr_oracle=False,
            min_len=min_len or 1, numeric=numeric, whole_domain=exhaustive)
    except driver.Unsupported as refusal:
        raise _at_binding(refusal, program, node_name) from None
    if exhaustive and result.report.ok:  # a failed validation needs no proof
        result = _proven(driver, result, root, proof_dir, workers, scheduler)
    return Model(driver.final_weights(result, force=force, remedy=driver.API_REMEDY))


def _proven(driver: Any, result: Any, root: SOp, proof_dir: str | os.PathLike | None,
            workers: int | None, scheduler: str | None) -> Any:
    """`result` with its whole-domain proof (driver.prove), its chunks recorded in
    `proof_dir` or in a temporary folder."""
    def report(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    hint = ("call compile again with the same proof_dir to resume from there"
            if proof_dir is not None else
            "that temporary folder is removed now; pass proof_dir= to keep finished chunks "
            "and resume from them")
    with (nullcontext(proof_dir) if proof_dir is not None
          else tempfile.TemporaryDirectory(prefix="rasp-sim-proof-")) as folder:
        proof, records = driver.prove(result.weights, root, Path(folder), workers=workers,
                                      scheduler=scheduler, report=report, resume_hint=hint)
        if proof_dir is not None:  # a temporary folder goes with its context
            records.remove()  # the result is in the model from here on
    return driver.proven(result, proof)


def _driver() -> Any:
    try:
        from .compiler import tracr_driver
    except ImportError as error:
        raise CompileError(f"compiling needs the 'compile' extra (tracr, dm-haiku): "
                           f"pip install 'rasp-sim[compile]' ({error})") from None
    return tracr_driver


def _at_binding(error: RaspError, program: Program, name: str) -> RaspError:
    """A refusal inside a library function, reported at the program's statement that
    binds `name` when the program is a file (as the CLI reports it)."""
    from .language.call_sites import at_call_site, binding_span

    if not Path(program.source).is_file():
        return error
    return at_call_site(error, binding_span(program.source, name))
