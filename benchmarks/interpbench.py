"""InterpBench's tracr programs through tracr and through rasp-sim, side by side, in one run.

For every case of an InterpBench checkout (or of a folder laid out like one: the package
`circuits_benchmark`, with `benchmark/cases/case_N.py` defining `CaseN` with
`get_program()`, `get_vocab()`, `get_max_seq_len()`, `get_min_seq_len()` and
`supports_causal_masking()`), as InterpBench compiles it: lengths min-1..max-1 tokens
(its lengths count BOS), BOS "BOS", PAD "PAD", causal unless the case says otherwise.

- tracr: `compile_rasp_to_model`, its layers, residual width, parameters (every array of
  the model, embeddings and unembedding included) and compile CPU time; then its model
  against tracr's own `rasp.evaluate`, input by input, on the whole domain where it has
  at most --whole inputs, else on --samples seeded random inputs plus structured ones
  (each token repeated; the vocabulary in order and reversed, at every length).
  Positions where rasp.evaluate gives None, and inputs where it raises, are not compared;
  a number must be within 1e-2 of it (InterpBench's own tolerance; relative above 1),
  anything else equal, so "wrong" means wrong by InterpBench's own standard.
- rasp-sim: `rasp_sim.from_tracr` and `rasp_sim.compile` over the same domain (the model
  validated against the program: whole domain up to 100,000 inputs, else sampled), its
  size and compile CPU time, then the model against rasp.evaluate on the same inputs as
  tracr's (numbers within 1e-9, the tolerance its validation holds every model to; the
  rest exactly); and a whole-domain proof
  (`exhaustive=True`) at the largest length whose domain has at most --proof-limit inputs.

    python benchmarks/interpbench.py --cases PATH [--only N ...] [--samples 2000]
                                     [--proof-limit 1000000] [--json OUT.json]

prints one Markdown table row per case and a summary (docs/benchmarks.md's InterpBench table).
"""
from __future__ import annotations

import argparse
import importlib
import json
import random
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

# A number agrees within `tolerance * max(1, |rasp.evaluate's value|)`: tracr's models get
# InterpBench's own atol (its tests compare numbers with atol 1e-2, and tracr's numerical
# MLPs are approximations by design), rasp-sim's the tolerance its validation holds every
# model to (docs/compiler.md: attention averages in float64, 1e-9).
TRACR_TOLERANCE = 1e-2
RASP_SIM_TOLERANCE = 1e-9
BOS, PAD = "BOS", "PAD"


@dataclass
class Case:
    """A tracr program with the domain and compile settings InterpBench gives it."""

    name: str
    program: Any
    vocab: list
    min_len: int  # tokens, BOS not counted
    max_len: int
    causal: bool


@dataclass
class Side:
    """One compiler's result on a case."""

    compiled: bool = False
    error: str = ""
    layers: int = 0
    width: int = 0
    parameters: int = 0
    cpu_seconds: float = 0.0
    checked: int = 0  # inputs compared with rasp.evaluate
    wrong: int = 0
    example: str = ""
    max_numeric_error: float = 0.0
    validation: str = ""
    proof: str = ""


@dataclass
class Row:
    case: str
    vocab: int
    lengths: str
    causal: bool
    domain: str  # "whole" or the number sampled
    tracr: Side = field(default_factory=Side)
    rasp_sim: Side = field(default_factory=Side)


# ----------------------------------------------------------------------------- inputs


def domain_inputs(case: Case, whole: int, samples: int, seed: int) -> tuple[list[list], str]:
    from rasp_sim.tracr_frontend.agreement import domain

    inputs, enumerated = domain(case.vocab, case.min_len, case.max_len, limit=whole,
                                samples=samples, seed=seed)
    return inputs, "whole" if enumerated else f"{len(inputs):,} sampled"


def reference(case: Case, inputs: Sequence[list]) -> list[list | None]:
    """rasp.evaluate on each input (None where it raises)."""
    from tracr.rasp import rasp

    out: list[list | None] = []
    for tokens in inputs:
        try:
            out.append(list(rasp.evaluate(case.program, list(tokens))))
        except Exception:  # noqa: BLE001: tracr's evaluate raises what the program raises
            out.append(None)
    return out


def score(side: Side, inputs: Sequence[list], expected: Sequence[list | None],
          outputs: Sequence[Any], tolerance: float) -> None:
    """Count the inputs whose outputs differ from rasp.evaluate's defined values: numbers
    within `tolerance` (relative to max(1, |value|)), anything else exactly."""
    for tokens, want, got in zip(inputs, expected, outputs):
        if want is None:
            continue
        side.checked += 1
        bad = isinstance(got, Exception) or len(got) != len(want)
        if not bad:
            for w, g in zip(want, got):
                if w is None:
                    continue
                if isinstance(w, (int, float)) and isinstance(g, (int, float)):
                    error = abs(float(g) - float(w)) / max(1.0, abs(float(w)))
                    side.max_numeric_error = max(side.max_numeric_error, error)
                    bad = bad or not error <= tolerance
                else:
                    bad = bad or not g == w
        if bad:
            side.wrong += 1
            if not side.example:
                side.example = f"{tokens}: rasp.evaluate {want}, model {got}"


# ------------------------------------------------------------------------------ tracr


def tracr_side(case: Case, inputs: Sequence[list], expected: Sequence[list | None]) -> Side:
    from tracr.compiler import compiling
    from tracr.rasp import rasp

    side = Side()
    start = time.process_time()
    try:
        model = compiling.compile_rasp_to_model(case.program, vocab=set(case.vocab),
                                                max_seq_len=case.max_len, compiler_bos=BOS,
                                                compiler_pad=PAD, causal=case.causal)
    except Exception as error:  # noqa: BLE001: report what tracr raises, whatever it is
        side.error = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
        return side
    side.cpu_seconds = time.process_time() - start
    side.compiled = True
    side.layers = model.model_config.num_layers
    side.parameters = int(sum(np.size(array) for module in model.params.values()
                              for array in module.values()))
    side.width = int(model.params["token_embed"]["embeddings"].shape[1])
    numeric = rasp.is_numerical(case.program)
    outputs = tracr_outputs(model, inputs, case.max_len, numeric)
    score(side, inputs, expected, outputs, TRACR_TOLERANCE)
    return side


def tracr_outputs(model: Any, inputs: Sequence[list], max_len: int, numeric: bool) -> list:
    """tracr's model on each input (BOS first, PAD after), jitted in batches of one
    length (rasp-sim's own driver runs tracr's model the same way)."""
    from rasp_sim.compiler.tracr_backend.driver import tracr_forward

    run = tracr_forward(model, not numeric, max_len)
    outputs: list[Any] = [None] * len(inputs)
    by_length: dict[int, list[int]] = {}
    for i, tokens in enumerate(inputs):
        by_length.setdefault(len(tokens), []).append(i)
    for ids in by_length.values():
        rows = np.array([model.input_encoder.encode([BOS, *inputs[i]]) for i in ids])
        for i, out in zip(ids, run(rows)):
            outputs[i] = out
    return outputs


# ---------------------------------------------------------------------------- rasp-sim


def rasp_sim_side(case: Case, inputs: Sequence[list], expected: Sequence[list | None],
                  proof_limit: int, workers: int) -> Side:
    import rasp_sim
    from rasp_sim.compiler.tracr_backend.validate import domain_size

    side = Side()
    start = time.process_time()
    try:
        program = rasp_sim.from_tracr(case.program, case.vocab, case.max_len)
        model = rasp_sim.compile(program, vocab=case.vocab, max_len=case.max_len,
                                 min_len=case.min_len, causal=case.causal)
    except rasp_sim.RaspError as error:
        side.error = error.headline()[:200]
        return side
    side.cpu_seconds = time.process_time() - start
    info = model.info
    side.compiled = True
    side.layers, side.width, side.parameters = (info["layers"], info["residual_width"],
                                                info["parameters"])
    report = info["validation"]
    side.validation = (f"{report['mode']} {report['compared']:,}"
                       + ("" if report["ok"] else " FAILED"))
    outputs = model_outputs(model, inputs)
    score(side, inputs, expected, outputs, RASP_SIM_TOLERANCE)
    length = case.max_len
    while length >= case.min_len and domain_size(len(case.vocab), length,
                                                 case.min_len) > proof_limit:
        length -= 1
    if length < case.min_len:
        side.proof = "domain too large"
        return side
    try:
        proven = rasp_sim.compile(program, vocab=case.vocab, max_len=length,
                                  min_len=case.min_len, causal=case.causal,
                                  exhaustive=True, workers=workers)
        proof = proven.proof or {}
        side.proof = (f"{proof.get('inputs', 0):,} inputs, lengths {case.min_len}-{length}"
                      if proven.validated else "FAILED")
    except rasp_sim.RaspError as error:
        side.proof = f"refused: {error.headline()[:120]}"
    return side


def model_outputs(model: Any, inputs: Sequence[list]) -> list:
    """The model's outputs, input by input where a batch fails (an input outside the
    program's domain fails alone)."""
    from rasp_sim import RaspError

    try:
        return model.run(inputs)
    except RaspError:
        out: list[Any] = []
        for tokens in inputs:
            try:
                out += model.run([tokens])
            except RaspError as error:
                out.append(error)
        return out


# ------------------------------------------------------------------------------- cases


def load_cases(path: Path, only: Sequence[int] = ()) -> list[Case]:
    sys.path.insert(0, str(path))
    files = sorted(path.glob("circuits_benchmark/benchmark/cases/case_*.py"),
                   key=lambda f: int(re.findall(r"\d+", f.stem)[0]))
    cases = []
    for file in files:
        number = int(re.findall(r"\d+", file.stem)[0])
        if only and number not in only:
            continue
        module = importlib.import_module(f"circuits_benchmark.benchmark.cases.{file.stem}")
        instance = getattr(module, f"Case{number}")()
        cases.append(Case(f"case_{number}", instance.get_program(),
                          sorted(instance.get_vocab(), key=repr),
                          instance.get_min_seq_len() - 1, instance.get_max_seq_len() - 1,
                          bool(instance.supports_causal_masking())))
    return cases


def measure(case: Case, *, whole: int, samples: int, seed: int, proof_limit: int,
            workers: int) -> Row:
    inputs, described = domain_inputs(case, whole, samples, seed)
    expected = reference(case, inputs)
    row = Row(case.name, len(case.vocab), f"{case.min_len}-{case.max_len}", case.causal,
              described)
    row.tracr = tracr_side(case, inputs, expected)
    row.rasp_sim = rasp_sim_side(case, inputs, expected, proof_limit, workers)
    return row


def warm_up() -> None:
    """Compile one small program with each compiler before any is timed, so that neither
    case's CPU time holds the imports and JAX's first compilations."""
    from tracr.compiler import compiling, lib

    import rasp_sim

    program = lib.make_length()
    compiling.compile_rasp_to_model(program, vocab={"a"}, max_seq_len=2, compiler_bos=BOS)
    rasp_sim.compile_tracr(program, {"a"}, 2)


# ------------------------------------------------------------------------------ report

HEADER = ("| case | vocab | lengths | causal | checked on | tracr: layers / width / params "
          "| tracr CPU s | tracr wrong | rasp-sim: layers / width / params | rasp-sim CPU s "
          "| rasp-sim wrong | rasp-sim validation | rasp-sim proof |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def _size(side: Side) -> str:
    return (f"{side.layers} / {side.width} / {side.parameters:,}" if side.compiled
            else f"not compiled: {side.error}")


def _wrong(side: Side) -> str:
    if not side.compiled:
        return "-"
    return f"{side.wrong:,} of {side.checked:,}" if side.wrong else f"0 of {side.checked:,}"


def markdown_row(row: Row) -> str:
    t, r = row.tracr, row.rasp_sim
    return (f"| {row.case} | {row.vocab} | {row.lengths} | {'yes' if row.causal else 'no'} "
            f"| {row.domain} | {_size(t)} | {t.cpu_seconds:.2f} | {_wrong(t)} | {_size(r)} "
            f"| {r.cpu_seconds:.2f} | {_wrong(r)} | {r.validation or '-'} | {r.proof or '-'} |")


def summary(rows: Sequence[Row]) -> list[str]:
    both = [r for r in rows if r.tracr.compiled and r.rasp_sim.compiled]
    ratios = sorted(r.tracr.parameters / r.rasp_sim.parameters for r in both)
    lines = [
        f"cases: {len(rows)}; tracr compiles {sum(r.tracr.compiled for r in rows)}, "
        f"rasp-sim {sum(r.rasp_sim.compiled for r in rows)}; both {len(both)}",
        f"tracr's model wrong on some checked input: "
        f"{sum(1 for r in rows if r.tracr.compiled and r.tracr.wrong)} cases",
        f"rasp-sim's model wrong on some checked input: "
        f"{sum(1 for r in rows if r.rasp_sim.compiled and r.rasp_sim.wrong)} cases",
        f"tracr compiles, rasp-sim does not: "
        f"{[r.case for r in rows if r.tracr.compiled and not r.rasp_sim.compiled]}",
        f"rasp-sim deeper than tracr: "
        f"{[r.case for r in both if r.rasp_sim.layers > r.tracr.layers]}",
    ]
    if ratios:
        lines.append(f"parameters, tracr / rasp-sim: median {ratios[len(ratios) // 2]:.2f}x "
                     f"(min {ratios[0]:.2f}x, max {ratios[-1]:.2f}x)")
    tracr_errors = sorted(r.tracr.max_numeric_error for r in rows if r.tracr.compiled)
    if tracr_errors:
        lines.append(f"tracr's largest numerical error (relative, on a checked input): "
                     f"{tracr_errors[-1]:.1e}; cases above 1e-6: "
                     f"{sum(e > 1e-6 for e in tracr_errors)}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", required=True, type=Path,
                        help="an InterpBench checkout (the folder holding circuits_benchmark)")
    parser.add_argument("--only", type=int, nargs="*", default=[], metavar="N")
    parser.add_argument("--whole", type=int, default=100_000,
                        help="enumerate domains up to this many inputs (default 100,000)")
    parser.add_argument("--samples", type=int, default=2_000,
                        help="random inputs above that (default 2,000), plus structured ones")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--proof-limit", type=int, default=1_000_000,
                        help="prove each rasp-sim model at the largest length whose domain "
                        "has at most this many inputs (default 1,000,000)")
    parser.add_argument("--workers", type=int, default=2, help="proof workers")
    parser.add_argument("--json", type=Path, help="also write every row as JSON here")
    args = parser.parse_args(argv)
    random.seed(args.seed)
    warm_up()
    rows = []
    print(HEADER, flush=True)
    for case in load_cases(args.cases, args.only):
        row = measure(case, whole=args.whole, samples=args.samples, seed=args.seed,
                      proof_limit=args.proof_limit, workers=args.workers)
        rows.append(row)
        print(markdown_row(row), flush=True)
    print()
    for line in summary(rows):
        print(line)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
