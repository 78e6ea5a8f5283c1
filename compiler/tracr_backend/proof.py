"""Whole-domain proofs (docs/compiler.md, "Exhaustive proofs"): the weights agree with the
program on every input of the declared domain, whatever its size.

The domain (every sequence over the vocabulary of length min_len..max_len) is split into
chunks: one length and a fixed prefix of tokens, the remaining positions enumerated, at
most `CHUNK_INPUTS` inputs each. Each chunk is compared in bulk (bulk_compare.py: the
interpreter against the weights' NumPy forward), in this process or on a Dask cluster
(rasp_sim/dask_cluster.py). Every finished chunk is recorded in a folder, atomically
(rasp_sim/atomic_write.py), under a manifest naming the model (its computation digest), the
program (a digest of its graph) and the domain, so that an interrupted proof resumes where
it stopped and records of another proof are never reused.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from rasp_sim import graph as g
from rasp_sim.atomic_write import write_text
from rasp_sim.errors import RaspError

from ..weights import Transformer, computation_digest
from .bulk_compare import Encoding, Tally, compare_rows
from .runtime import NUMERIC, NUMERIC_TOLERANCE, compile_info
from .validate import causal_program, describe_size, domain_size

CHUNK_INPUTS = 2**16  # inputs per chunk at most: about half a second of one core
BATCH_ROWS = 8_192  # inputs per bulk comparison inside a chunk
PROOF_FORMAT = 1  # of the records folder's manifest
MANIFEST = "proof.json"
ORACLES = ("the rasp-sim interpreter", "the weights' NumPy forward")
# Below this many estimated CPU seconds the rest runs here: a local cluster takes longer
# to start.
LOCAL_BELOW_SECONDS = 5.0
DASK_HINT = "pip install 'rasp-sim[compile]' (or run with --workers 1)"


class ProofError(RaspError):
    """An exhaustive proof that cannot run as asked (an infinite domain, a records folder
    that cannot be written)."""

    kind = "proof error"


class ProofInterrupted(RaspError):
    """Ctrl-C during a proof; the message says what was recorded and how to resume."""

    kind = "interrupted"


# ------------------------------------------------------------------------------ chunks


@dataclass(frozen=True)
class Chunk:
    """The inputs of one length whose first positions hold `prefix` (vocabulary indices)."""

    length: int
    prefix: tuple[int, ...]

    @property
    def key(self) -> str:
        return f"n{self.length}-" + ".".join(map(str, self.prefix))


def free_positions(vocab_size: int, length: int, chunk_inputs: int = CHUNK_INPUTS) -> int:
    """How many trailing positions a chunk of inputs of `length` enumerates: as many as
    keep it at most `chunk_inputs` inputs (all of them for a one-token vocabulary)."""
    free = 0
    while free < length and vocab_size ** (free + 1) <= chunk_inputs:
        free += 1
    return free


def chunk_plan(vocab_size: int, min_len: int, max_len: int,
               chunk_inputs: int = CHUNK_INPUTS) -> Iterator[Chunk]:
    """Every chunk of the domain, longest inputs first (the first chunk measures the
    throughput, and long inputs are most of the domain), then by prefix: together they
    hold each input exactly once (tests/compiler_tracr/test_proof.py checks it)."""
    for n in range(max_len, min_len - 1, -1):
        fixed = n - free_positions(vocab_size, n, chunk_inputs)
        for prefix in itertools.product(range(vocab_size), repeat=fixed):
            yield Chunk(n, prefix)


def chunk_count(vocab_size: int, min_len: int, max_len: int,
                chunk_inputs: int = CHUNK_INPUTS) -> int:
    return sum(vocab_size ** (n - free_positions(vocab_size, n, chunk_inputs))
               for n in range(min_len, max_len + 1))


def chunk_rows(chunk: Chunk, vocab_size: int) -> np.ndarray:
    """The chunk's inputs as vocabulary-index rows, in lexicographic order."""
    free = chunk.length - len(chunk.prefix)
    count = vocab_size ** free
    powers = vocab_size ** np.arange(free - 1, -1, -1, dtype=np.int64)
    digits = (np.arange(count, dtype=np.int64)[:, None] // powers) % vocab_size
    prefix = np.broadcast_to(np.array(chunk.prefix, dtype=np.int64), (count, len(chunk.prefix)))
    return np.concatenate([prefix, digits], axis=1)


# ----------------------------------------------------------------------- one chunk


@dataclass
class ProofTask:
    """What a worker needs to prove chunks: the program (causal where the model is), the
    weights and how they read tokens. Sent to each worker once."""

    reference: g.SOp
    weights: Transformer
    encoding: Encoding


def prove_chunk(task: ProofTask, chunk: Chunk) -> dict:
    """The chunk's record (JSON): its counts, largest numerical error, the program's
    output types, the first disagreement (None if none) and the CPU seconds it took."""
    start = time.process_time()
    rows = chunk_rows(chunk, len(task.encoding.vocab))
    tally = Tally()
    checked = 0
    for s in range(0, len(rows), BATCH_ROWS):
        compare_rows(task.reference, task.weights, task.encoding, rows[s:s + BATCH_ROWS], tally)
        checked += len(rows[s:s + BATCH_ROWS])
        if tally.disagreement is not None:
            break
    disagreement = None
    if tally.disagreement is not None:
        tokens, position, expected, actual = tally.disagreement
        disagreement = {"input": [_json_value(t) for t in tokens], "position": position,
                        "expected": _json_value(expected), "actual": _json_value(actual)}
    return {"key": chunk.key, "inputs": checked, "compared": tally.compared,
            "undefined": tally.undefined, "max_numeric_error": _json_value(tally.max_numeric_error),
            "output_types": sorted(t.__name__ for t in tally.output_types or ()),
            "disagreement": disagreement,
            "cpu_seconds": round(time.process_time() - start, 4)}


def _json_value(value: Any) -> Any:
    """A value as JSON holds it: a non-finite float as its repr (JSON has no inf, nan)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


# --------------------------------------------------------------------------- records


def program_digest(root: g.SOp) -> str:
    """SHA-256 of what the program computes: every node of its graph in dependency order,
    its type and fields, children by position (names and source spans left out: they do
    not change values)."""
    order = list(g.ancestors(root))
    position = {id(node): i for i, node in enumerate(order)}
    described = []
    for node in order:
        fields = {}
        for f in dataclasses.fields(node):
            if f.name in ("span", "name"):
                continue
            value = getattr(node, f.name)
            if isinstance(value, g.Node):
                value = position[id(value)]
            elif isinstance(value, tuple) and any(isinstance(v, g.Node) for v in value):
                value = [position[id(v)] for v in value]
            else:
                value = repr(value)
            fields[f.name] = value
        described.append([type(node).__name__, fields])
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode("utf-8")).hexdigest()


class Records:
    """The finished chunks of one proof, in `folder`: a manifest (which proof) and one
    JSON file per chunk, each written atomically. Records of another proof (another model,
    program or domain) are removed, not reused; only the files this class writes are
    touched."""

    def __init__(self, folder: Path, identity: dict):
        self.folder = folder
        self.identity = identity
        try:
            folder.mkdir(parents=True, exist_ok=True)
            manifest = folder / MANIFEST
            if self._stale(manifest):
                for path in folder.glob("chunk-*.json"):
                    path.unlink()
            write_text(manifest, json.dumps(identity, indent=1))
        except OSError as error:
            raise ProofError(f"cannot write the proof records in {folder}: "
                             f"{error.strerror or error} (choose another folder with "
                             "--proof-dir, or proof_dir= in the Python API)") from None

    def _stale(self, manifest: Path) -> bool:
        """Whether the folder's records are not this proof's (none, unreadable, another's)."""
        try:
            return json.loads(manifest.read_text()) != self.identity
        except (OSError, ValueError):
            return True

    def finished(self) -> dict[str, dict]:
        """The records of the finished chunks, by chunk key (an unreadable one is redone)."""
        done = {}
        for path in self.folder.glob("chunk-*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(record, dict) and path.name == f"chunk-{record.get('key')}.json":
                done[record["key"]] = record
        return done

    def add(self, record: dict) -> None:
        try:
            write_text(self.folder / f"chunk-{record['key']}.json", json.dumps(record))
        except OSError as error:
            raise ProofError(f"cannot record a finished chunk in {self.folder}: "
                             f"{error.strerror or error}") from None

    def remove(self) -> None:
        """The records, once the proof's result is in the model (the folder too if empty)."""
        for path in [*self.folder.glob("chunk-*.json"), self.folder / MANIFEST]:
            path.unlink(missing_ok=True)
        try:
            self.folder.rmdir()
        except OSError:
            pass  # not empty: the user's own files are left alone


# ---------------------------------------------------------------------------- a proof


@dataclass
class Proof:
    """A whole-domain proof's result (`as_metadata` is what the model file records)."""

    domain: dict
    total: int  # inputs in the domain
    chunks: int
    inputs: int = 0  # inputs checked (all of them unless a disagreement stopped it)
    compared: int = 0
    undefined: int = 0
    max_numeric_error: float = 0.0
    output_types: set[str] = field(default_factory=set)
    disagreement: dict | None = None
    cpu_seconds: float = 0.0  # summed over the chunks, resumed ones included
    seconds: float = 0.0  # wall time of this run
    resumed: int = 0  # chunks recorded by an earlier, interrupted run
    reported_at: float = 0.0  # when the last progress line was reported (perf_counter)

    @property
    def ok(self) -> bool:
        return self.disagreement is None and self.compared > 0 and self.inputs == self.total

    def add(self, record: dict) -> None:
        self.inputs += record["inputs"]
        self.compared += record["compared"]
        self.undefined += record["undefined"]
        error = record["max_numeric_error"]
        if isinstance(error, (int, float)):
            self.max_numeric_error = max(self.max_numeric_error, error)
        self.output_types.update(record["output_types"])
        self.cpu_seconds += record["cpu_seconds"]
        if record["disagreement"] is not None and self.disagreement is None:
            self.disagreement = record["disagreement"]

    def describe_disagreement(self) -> str:
        assert self.disagreement is not None
        d = self.disagreement
        return (f"on input {d['input']!r} at position {d['position']}: the interpreter "
                f"gives {d['expected']!r}, the weights' NumPy forward gives {d['actual']!r}")

    def as_metadata(self) -> dict:
        return {"domain": self.domain, "inputs": self.total, "checked": self.inputs,
                "compared": self.compared, "undefined": self.undefined,
                "oracles": list(ORACLES), "max_numeric_error": _json_value(self.max_numeric_error),
                "tolerance": NUMERIC_TOLERANCE, "ok": self.ok,
                "disagreement": self.disagreement, "chunks": self.chunks,
                "cpu_seconds": round(self.cpu_seconds, 3)}


def proof_task(weights: Transformer, root: g.SOp) -> tuple[ProofTask, dict]:
    """The task and the domain (vocab, min_len, max_len) of a compiled token model; a
    ProofError for a numeric-input model, whose domain is infinite."""
    info = compile_info(weights)
    if info["tokens_kind"] == NUMERIC:
        raise ProofError("--exhaustive: this model reads real-valued tokens, so its domain "
                         "is infinite and cannot be enumerated; its validation is sampled "
                         "(--samples)")
    reference = causal_program(root) if weights.causal else root
    domain = {"vocab": list(info["vocab"]), "min_len": info["min_len"],
              "max_len": info["max_len"]}
    return ProofTask(reference, weights, Encoding.of(weights, info["vocab"])), domain


def prove(weights: Transformer, root: g.SOp, folder: Path, *, workers: int | None = None,
          scheduler: str | None = None, report: Callable[[str], None] = lambda line: None,
          local_below_seconds: float = LOCAL_BELOW_SECONDS,
          resume_hint: str = "run the same command again to resume from there"
          ) -> tuple[Proof, Records]:
    """Prove `weights` against the program `root` on every input of the model's domain,
    recording finished chunks in `folder` and skipping those recorded there already.

    The first pending chunk runs here and measures the throughput; `report` gets the
    domain's size and the time estimate, then progress lines. The rest runs here when it
    is estimated under `local_below_seconds` of CPU or `workers` is 1, else on Dask: a
    local cluster of `workers` processes (default: this machine's cores) or `scheduler`.
    Ctrl-C raises ProofInterrupted, saying what is recorded and, in `resume_hint`, how to
    resume. Returns the
    proof and its records (for the caller to remove once the result is in the model)."""
    start = time.perf_counter()
    task, domain = proof_task(weights, root)
    vocab_size = len(domain["vocab"])
    total = domain_size(vocab_size, domain["max_len"], domain["min_len"])
    if total == 0:
        raise ProofError("--exhaustive: the domain is empty (no vocabulary)")
    chunks = chunk_count(vocab_size, domain["min_len"], domain["max_len"])
    identity = {"format": PROOF_FORMAT, "model": computation_digest(weights),
                "program": program_digest(task.reference), "domain": domain,
                "chunk_inputs": CHUNK_INPUTS}
    records = Records(folder, identity)
    proof = Proof(domain, total, chunks)
    for record in records.finished().values():
        proof.add(record)
        proof.resumed += 1
    report(f"proving on every input: {describe_size(total)} inputs (lengths "
           f"{domain['min_len']}..{domain['max_len']} over {vocab_size} tokens) in "
           f"{chunks:,} chunks" + (f", {proof.resumed:,} of them recorded in {folder} "
                                   "by an earlier run" if proof.resumed else ""))
    pending = _pending(records, vocab_size, domain)
    try:
        if proof.disagreement is None:
            _run(task, pending, proof, records, workers, scheduler, report,
                 local_below_seconds)
    except KeyboardInterrupt:
        raise ProofInterrupted(
            f"the proof stopped: {proof.inputs:,} of {describe_size(total)} inputs "
            f"({len(records.finished()):,} of {chunks:,} chunks) are proven and recorded in "
            f"{folder}; {resume_hint}") from None
    proof.seconds = time.perf_counter() - start
    return proof, records


def _pending(records: Records, vocab_size: int, domain: dict) -> Iterator[Chunk]:
    done = set(records.finished())
    return (c for c in chunk_plan(vocab_size, domain["min_len"], domain["max_len"])
            if c.key not in done)


def _run(task: ProofTask, pending: Iterator[Chunk], proof: Proof, records: Records,
         workers: int | None, scheduler: str | None, report: Callable[[str], None],
         local_below_seconds: float) -> None:
    first = next(pending, None)
    if first is None:
        return
    record = prove_chunk(task, first)  # here: it measures the throughput
    records.add(record)
    proof.add(record)
    if record["disagreement"] is not None:
        return
    rate = record["inputs"] / max(record["cpu_seconds"], 1e-6)
    left = (proof.total - proof.inputs) / rate
    workers = workers or os.cpu_count() or 1
    parallel = left >= local_below_seconds and (workers > 1 or scheduler is not None)
    where = (f"on the scheduler {scheduler}" if scheduler else
             f"on {workers} local workers, about {_duration(left / workers)} of wall time"
             ) if parallel else "here"
    report(f"{rate:,.0f} inputs/s per core measured on the first chunk: about "
           f"{_duration(left)} of CPU time left, run {where}")
    if parallel:
        _run_dask(task, pending, proof, records, workers, scheduler, report)
        return
    for chunk in pending:
        record = prove_chunk(task, chunk)
        records.add(record)
        proof.add(record)
        _progress(proof, report)
        if record["disagreement"] is not None:
            return


def _run_dask(task: ProofTask, pending: Iterator[Chunk], proof: Proof, records: Records,
              workers: int, scheduler: str | None, report: Callable[[str], None]) -> None:
    from rasp_sim.dask_cluster import dask_client

    with dask_client(workers, scheduler, DASK_HINT) as client:
        from dask.distributed import as_completed

        shared = client.scatter(task, broadcast=True)  # sent once, not with every chunk
        # a bounded window of chunks in flight: the plan of a huge domain is never listed
        window = 4 * max(1, sum(client.nthreads().values()))
        running = as_completed([client.submit(prove_chunk, shared, chunk, pure=False)
                                for chunk in itertools.islice(pending, window)])
        for future in running:
            record = future.result()
            records.add(record)
            proof.add(record)
            _progress(proof, report)
            if record["disagreement"] is not None:
                return
            chunk = next(pending, None)
            if chunk is not None:
                running.add(client.submit(prove_chunk, shared, chunk, pure=False))


_REPORT_EVERY = 10.0  # seconds between progress lines


def _progress(proof: Proof, report: Callable[[str], None]) -> None:
    now = time.perf_counter()
    if now - proof.reported_at >= _REPORT_EVERY or proof.inputs == proof.total:
        proof.reported_at = now
        report(f"proven {proof.inputs:,} of {describe_size(proof.total)} inputs "
               f"({100 * proof.inputs / proof.total:.1f}%)")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.0f} days"
