"""Whole-domain proofs (docs/compiler.md, "Exhaustive proofs"): the weights agree with the
program on every input of the declared domain, whatever its size.

The domain (every sequence over the vocabulary of length min_len..max_len) is split into
chunks: one length and a fixed prefix of tokens, the remaining positions enumerated, at
most `CHUNK_INPUTS` inputs each. Each chunk is compared in bulk (bulk_compare.py: the
interpreter against the weights' NumPy forward), in this process or on a Dask cluster
(rasp_sim/base/dask_cluster.py). Every finished chunk is recorded in a folder, atomically
(rasp_sim/base/atomic_write.py), under a manifest naming the model (its computation digest), the
program (a digest of its graph) and the domain, so that an interrupted proof resumes where
it stopped. A record is used only if it checks out: sealed with that proof's digest and a
checksum of its content, one of the domain's chunks, its counts that chunk's size; any
other is proven again (docs/compiler.md says what a proof folder is trusted for).
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from rasp_sim.core import graph as g
from rasp_sim.base.atomic_write import write_text
from rasp_sim.base.bounded_read import UnreadableFile, read_json
from rasp_sim.base.errors import RaspError

from ..weights import Transformer, computation_digest
from .bulk_compare import Encoding, Tally, compare_rows
from .runtime import NUMERIC, NUMERIC_TOLERANCE, compile_info
from .validate import causal_program, describe_size, domain_size

CHUNK_INPUTS = 2**16  # inputs per chunk at most: about half a second of one core
BATCH_ROWS = 8_192  # inputs per bulk comparison inside a chunk
PROOF_FORMAT = 2  # of the records folder (2: records sealed with a digest and checksum)
MANIFEST = "proof.json"
# A record holds counts and one disagreement (an input of at most max_len tokens): far
# below this; anything larger is not a record rasp-sim wrote.
MAX_RECORD_BYTES = 2**20
# The manifest lists the vocabulary, which a domain of short inputs may make large.
MAX_MANIFEST_BYTES = 2**26
MAX_EXAMPLES = 10  # disagreements a counting proof keeps (one per chunk)
ORACLES = ("the rasp-sim interpreter", "the weights' NumPy forward")
# Inputs of the resumed chunks proven again before their records are believed (spot_check):
# 15-25 ms of CPU (docs/compiler.md).
SPOT_CHECK_INPUTS = 1_024
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
    # go on past a disagreement, counting the inputs the weights get wrong (compression
    # certificates: docs/compiler.md, "Compression with a certificate")
    count_all: bool = False


def prove_chunk(task: ProofTask, chunk: Chunk) -> dict:
    """The chunk's record (JSON): its counts, largest numerical error, the program's
    output types, the first disagreement (None if none) and the CPU seconds it took. The
    chunk stops at its first disagreement unless the task counts them all (then the
    record has `wrong`, the inputs with a disagreement)."""
    start = time.process_time()
    rows = chunk_rows(chunk, len(task.encoding.vocab))
    tally = Tally()
    checked = 0
    for s in range(0, len(rows), BATCH_ROWS):
        compare_rows(task.reference, task.weights, task.encoding, rows[s:s + BATCH_ROWS], tally)
        checked += len(rows[s:s + BATCH_ROWS])
        if tally.disagreement is not None and not task.count_all:
            break
    counted = {"wrong": tally.wrong} if task.count_all else {}
    return {**counted, "key": chunk.key, "inputs": checked, "compared": tally.compared,
            "undefined": tally.undefined, "max_numeric_error": _json_value(tally.max_numeric_error),
            "output_types": sorted(t.__name__ for t in tally.output_types or ()),
            "disagreement": _disagreement(tally),
            "cpu_seconds": round(time.process_time() - start, 4)}


def _disagreement(tally: Tally) -> dict | None:
    """The tally's first disagreement as JSON (None if none)."""
    if tally.disagreement is None:
        return None
    tokens, position, expected, actual = tally.disagreement
    return {"input": [_json_value(t) for t in tokens], "position": position,
            "expected": _json_value(expected), "actual": _json_value(actual)}


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
    """The finished chunks of one proof, in `folder`: a manifest (which proof, and
    whether rasp-sim created the folder) and one JSON file per chunk, each written
    atomically and sealed (`sealed`). A folder holding a `proof.json` that is not a
    rasp-sim manifest, or chunk records without one, is refused and left as it is; the
    records of another proof (another model, program or domain), or all of them when
    `resume` is False, are removed; nothing else in the folder is touched."""

    def __init__(self, folder: Path, identity: dict, resume: bool = True):
        self.folder = folder
        self.identity = identity
        self.digest = _digest(identity)
        self.recorded = 0  # chunks recorded: by this run, or resumed (set by prove)
        try:
            created = not folder.exists()
            folder.mkdir(parents=True, exist_ok=True)
            manifest = self._manifest()
            self.created_folder = created or bool(manifest and manifest.get("created_folder"))
            if manifest is not None and (not resume or not self._matches(manifest)):
                self.remove_chunks()
            write_text(folder / MANIFEST,
                       json.dumps({**identity, "created_folder": self.created_folder},
                                  indent=1))
        except OSError as error:
            raise ProofError(f"cannot write the proof records in {folder}: "
                             f"{error.strerror or error} ({_ELSEWHERE})") from None

    def _manifest(self) -> dict | None:
        """The folder's rasp-sim manifest (None: an empty or new folder); a ProofError for
        a folder that holds what rasp-sim did not write."""
        path = self.folder / MANIFEST
        if not os.path.lexists(path):
            if next(self.folder.glob("chunk-*.json"), None) is not None:
                raise ProofError(f"{self.folder} holds chunk-*.json files but no {MANIFEST}: "
                                 "not a rasp-sim proof folder, so its files are left alone "
                                 f"({_ELSEWHERE})")
            return None
        try:
            manifest = read_json(path, "proof manifest", MAX_MANIFEST_BYTES)
        except UnreadableFile as error:
            manifest = error
        if not isinstance(manifest, dict) or not _MANIFEST_FIELDS <= manifest.keys():
            why = f": {manifest}" if isinstance(manifest, UnreadableFile) else ""
            raise ProofError(f"{path} is not a rasp-sim proof manifest{why}; the folder's "
                             f"files are left alone ({_ELSEWHERE})")
        return manifest

    def _matches(self, manifest: dict) -> bool:
        return {k: manifest.get(k) for k in self.identity} == self.identity

    def finished(self, warn: Callable[[str], None]) -> dict[str, dict]:
        """The records of the finished chunks that check out, by chunk key; `warn` gets a
        line for each one that does not (it is proven again)."""
        done = {}
        for path in self.folder.glob("chunk-*.json"):
            try:
                record = read_json(path, "proof record", MAX_RECORD_BYTES)
                problem = record_problem(record, self.digest, self.identity)
            except UnreadableFile as error:
                problem = str(error)
            if problem is None and path.name != f"chunk-{record['key']}.json":
                problem = f"it is the record of chunk {record['key']}"
            if problem is not None:
                warn(f"warning: proof record {path}: {problem}; its chunk is proven again")
                _unlink(path)  # its name is the new record's
                continue
            done[record["key"]] = record
        return done

    def add(self, record: dict) -> None:
        try:
            write_text(self.folder / f"chunk-{record['key']}.json",
                       json.dumps(sealed(record, self.digest)))
        except OSError as error:
            raise ProofError(f"cannot record a finished chunk in {self.folder}: "
                             f"{error.strerror or error}") from None
        self.recorded += 1

    def remove(self) -> None:
        """The records, once the proof's result is in the model, and the folder if rasp-sim
        created it and nothing else is in it."""
        self.remove_chunks()
        (self.folder / MANIFEST).unlink(missing_ok=True)
        if self.created_folder:
            try:
                self.folder.rmdir()
            except OSError:
                pass  # not empty: files someone put there since are left alone

    def remove_chunks(self) -> None:
        for path in self.folder.glob("chunk-*.json"):
            _unlink(path)


def _unlink(path: Path) -> None:
    """Remove a record; what cannot be removed (a folder of that name) is left, and a
    record written there later is refused by name (rasp_sim.base.atomic_write)."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


_ELSEWHERE = "choose another folder with --proof-dir, or proof_dir= in the Python API"
_MANIFEST_FIELDS = {"format", "model", "program", "domain", "chunk_inputs"}
_RECORD_FIELDS = {"key", "inputs", "compared", "undefined", "max_numeric_error",
                  "output_types", "disagreement", "cpu_seconds", "proof", "checksum"}
_DISAGREEMENT_FIELDS = {"input", "position", "expected", "actual"}
_KEY = re.compile(r"n(\d{1,9})-((?:\d{1,9}(?:\.\d{1,9})*)?)")


def _digest(value: Any) -> str:
    """SHA-256 of a JSON value, written canonically (sorted keys, no spaces)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sealed(record: dict, digest: str) -> dict:
    """`record` bound to its proof (`digest` of the manifest's identity: model, program,
    domain) and carrying a checksum of all that content."""
    bound = {**record, "proof": digest}
    return {**bound, "checksum": _digest(bound)}


def record_problem(record: Any, digest: str, identity: dict) -> str | None:
    """Why `record` is not a sealed, consistent record of one chunk of the proof
    `identity` (whose digest is `digest`), or None when it is one."""
    if not isinstance(record, dict) or record.keys() - {"wrong"} != _RECORD_FIELDS:
        return "it is not a proof record (its fields are not a record's)"
    content = {k: v for k, v in record.items() if k != "checksum"}
    if record["checksum"] != _digest(content):
        return "its checksum does not match its content"
    if record["proof"] != digest:
        return "it belongs to another proof (another model, program or domain)"
    size = chunk_size(record["key"], identity)
    if size is None:
        return f"its key {record['key']!r} is not a chunk of this domain"
    return _counts_problem(record, size) or _fields_problem(record)


def chunk_size(key: Any, identity: dict) -> int | None:
    """The number of inputs of the chunk `key` of the proof `identity`'s plan (None when
    no chunk of that plan has that key)."""
    chunk = chunk_of(key)
    if chunk is None:
        return None
    domain, vocab_size = identity["domain"], len(identity["domain"]["vocab"])
    if not domain["min_len"] <= chunk.length <= domain["max_len"]:
        return None
    free = free_positions(vocab_size, chunk.length, identity["chunk_inputs"])
    if len(chunk.prefix) != chunk.length - free or any(i >= vocab_size for i in chunk.prefix):
        return None
    return int(vocab_size ** free)


def chunk_of(key: Any) -> Chunk | None:
    """The chunk whose key is `key` (None when `key` is not one as Chunk.key writes it)."""
    match = _KEY.fullmatch(key) if isinstance(key, str) else None
    if match is None:
        return None
    prefix = tuple(int(i) for i in match[2].split(".")) if match[2] else ()
    chunk = Chunk(int(match[1]), prefix)
    return chunk if chunk.key == key else None  # not with leading zeros, say


def _counts_problem(record: dict, size: int) -> str | None:
    """The counts of a chunk of `size` inputs: whole numbers, compared and undefined
    adding up to the inputs checked, all of the chunk unless a disagreement stopped it."""
    counts = [record[k] for k in ("inputs", "compared", "undefined")]
    if not all(type(c) is int and c >= 0 for c in counts):
        return "its counts are not whole numbers >= 0"
    inputs, compared, undefined = counts
    if compared + undefined != inputs:
        return f"it counts {compared:,} compared and {undefined:,} undefined of {inputs:,} inputs"
    if record["disagreement"] is None and inputs != size:
        return f"it counts {inputs:,} inputs in a chunk of {size:,}"
    if record["disagreement"] is not None and not (0 < compared and inputs <= size):
        return f"it counts {inputs:,} inputs, {compared:,} compared, in a chunk of {size:,}"
    return None


def _fields_problem(record: dict) -> str | None:
    """The other fields' types: what Proof.add and the model's record expect."""
    error, cpu = record["max_numeric_error"], record["cpu_seconds"]
    if not (_is_real(error) and error >= 0 or error in ("inf", "nan")):
        return "its max_numeric_error is not a number >= 0"
    if not (_is_real(cpu) and 0 <= cpu < math.inf):
        return "its cpu_seconds is not a number >= 0"
    types = record["output_types"]
    if not (isinstance(types, list) and all(isinstance(t, str) for t in types)):
        return "its output_types is not a list of type names"
    d = record["disagreement"]
    wrong = record.get("wrong", d is not None)
    if not (type(wrong) in (int, bool) and 0 <= wrong <= record["compared"]
            and (wrong > 0) == (d is not None)):
        return "its count of wrong inputs does not fit its disagreement"
    if d is not None and not (isinstance(d, dict) and d.keys() == _DISAGREEMENT_FIELDS
                              and isinstance(d["input"], list) and type(d["position"]) is int
                              and 0 <= d["position"] < len(d["input"])):
        return "its disagreement is not an input, a position and two values"
    return None


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def spot_check(task: ProofTask, done: dict[str, dict],
               inputs: int = SPOT_CHECK_INPUTS) -> dict | None:
    """A disagreement among `inputs` inputs drawn at random from the chunks that the
    records `done` (at least one) say are all correct (None if none is found). A checksum
    is no signature: anyone who can write the folder can seal a record, and this catches
    a forged "all correct" over a model that is wrong on a fair share of those chunks."""
    claimed = [chunk_of(key) for key in done]
    vocab_size = len(task.encoding.vocab)
    rng = np.random.default_rng()  # unseeded: a forger cannot tell which inputs
    by_length: dict[int, list[np.ndarray]] = {}
    for pick in rng.integers(len(claimed), size=inputs):
        chunk = claimed[pick]
        assert chunk is not None  # a record's key checked out (record_problem)
        by_length.setdefault(chunk.length, []).append(_random_row(chunk, vocab_size, rng))
    tally = Tally()
    for rows in by_length.values():
        compare_rows(task.reference, task.weights, task.encoding, np.array(rows), tally)
        if tally.disagreement is not None:
            break
    return _disagreement(tally)


def _random_row(chunk: Chunk, vocab_size: int, rng: np.random.Generator) -> np.ndarray:
    free = rng.integers(vocab_size, size=chunk.length - len(chunk.prefix))
    return np.concatenate([np.array(chunk.prefix, dtype=np.int64), free])


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
    counted: bool = False  # every chunk checked to its end (ProofTask.count_all)
    wrong: int = 0  # inputs with a disagreement (all of them when `counted`)
    examples: list[dict] = field(default_factory=list)  # the first disagreement per chunk
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
        # a record that does not count stops at its disagreement: one wrong input
        self.wrong += record.get("wrong", record["disagreement"] is not None)
        if record["disagreement"] is not None:
            self.disagreement = self.disagreement or record["disagreement"]
            if len(self.examples) < MAX_EXAMPLES:
                self.examples.append(record["disagreement"])

    def describe_disagreement(self) -> str:
        assert self.disagreement is not None
        d = self.disagreement
        return (f"on input {d['input']!r} at position {d['position']}: the interpreter "
                f"gives {d['expected']!r}, the weights' NumPy forward gives {d['actual']!r}")

    def as_metadata(self) -> dict:
        counts = {"wrong": self.wrong, "examples": self.examples} if self.counted else {}
        return {**counts, "domain": self.domain, "inputs": self.total, "checked": self.inputs,
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
          resume_hint: str = "run the same command again to resume from there",
          resume: bool = True, count_all: bool = False) -> tuple[Proof, Records]:
    """Prove `weights` against the program `root` on every input of the model's domain,
    recording finished chunks in `folder` and skipping those recorded there already
    whose records check out (none with `resume` False: every chunk is proven again).
    A `scheduler` is probed first, whatever the domain's size (ClusterError if it is not
    a Dask scheduler answering in time: rasp_sim.base.dask_cluster.probe_scheduler).

    The first pending chunk runs here and measures the throughput; `report` gets the
    domain's size and the time estimate, then progress lines. The rest runs here when it
    is estimated under `local_below_seconds` of CPU or `workers` is 1, else on Dask: a
    local cluster of `workers` processes (default: this machine's cores) or `scheduler`.
    Ctrl-C raises ProofInterrupted, saying what is recorded and, in `resume_hint`, how to
    resume. With `count_all` the proof does not stop at a disagreement: it checks every
    input and counts those the weights get wrong (`Proof.wrong`, `Proof.examples`). Returns the proof and its records (for the caller to remove once the result
    is in the model)."""
    start = time.perf_counter()
    if scheduler is not None:
        from rasp_sim.base.dask_cluster import probe_scheduler

        probe_scheduler(scheduler, DASK_HINT)
    task, domain = proof_task(weights, root)
    task.count_all = count_all
    vocab_size = len(domain["vocab"])
    total = domain_size(vocab_size, domain["max_len"], domain["min_len"])
    if total == 0:
        raise ProofError("--exhaustive: the domain is empty (no vocabulary)")
    chunks = chunk_count(vocab_size, domain["min_len"], domain["max_len"])
    identity = {"format": PROOF_FORMAT, "model": computation_digest(weights),
                "program": program_digest(task.reference), "domain": domain,
                "chunk_inputs": CHUNK_INPUTS, **({"count_all": True} if count_all else {})}
    records = Records(folder, identity, resume)
    proof = Proof(domain, total, chunks, counted=count_all)
    # a recorded disagreement is proven again (one chunk): a forged one would name an
    # input where the model is right
    done = {key: record for key, record in records.finished(report).items()
            if record["disagreement"] is None}
    contradicted = spot_check(task, done) if done else None
    if contradicted is not None:
        report(f"warning: the records in {folder} say the model is right where it is "
               f"not (on input {contradicted['input']!r}): none of them is trusted, every "
               "chunk is proven again")
        records.remove_chunks()
        done = {}
    records.recorded = len(done)
    for record in done.values():
        proof.add(record)
        proof.resumed += 1
    report(f"proving on every input: {describe_size(total)} inputs (lengths "
           f"{domain['min_len']}..{domain['max_len']} over {vocab_size} tokens) in "
           f"{chunks:,} chunks" + (f", {proof.resumed:,} of them recorded in {folder} "
                                   "by an earlier run" if proof.resumed else ""))
    pending = (c for c in chunk_plan(vocab_size, domain["min_len"], domain["max_len"])
               if c.key not in done)
    try:
        _run(task, pending, proof, records, workers, scheduler, report, local_below_seconds)
    except KeyboardInterrupt:
        raise ProofInterrupted(
            f"the proof stopped: {proof.inputs:,} of {describe_size(total)} inputs "
            f"({records.recorded:,} of {chunks:,} chunks) are proven and recorded in "
            f"{folder}; {resume_hint}") from None
    proof.seconds = time.perf_counter() - start
    return proof, records


def _run(task: ProofTask, pending: Iterator[Chunk], proof: Proof, records: Records,
         workers: int | None, scheduler: str | None, report: Callable[[str], None],
         local_below_seconds: float) -> None:
    first = next(pending, None)
    if first is None:
        return
    record = prove_chunk(task, first)  # here: it measures the throughput
    records.add(record)
    proof.add(record)
    if record["disagreement"] is not None and not task.count_all:
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
        if record["disagreement"] is not None and not task.count_all:
            return


def _run_dask(task: ProofTask, pending: Iterator[Chunk], proof: Proof, records: Records,
              workers: int, scheduler: str | None, report: Callable[[str], None]) -> None:
    from rasp_sim.base.dask_cluster import dask_client

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
            if record["disagreement"] is not None and not task.count_all:
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
