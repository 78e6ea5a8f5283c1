"""The transformer weight format shared by the compiler and the universal transformers.

A model is a frozen `Transformer` of float64 NumPy arrays:

- input: `input_proj` (d_in x D) for real-valued input features X (the fixed universal
  transformer's embedding E lives here), and/or `token_embed` (vocab x D) plus
  `pos_embed` (max_len x D) for token ids (tracr's token_embed and pos_embed);
- `layers`: a tuple mixing `AttentionBlock` and `MLPBlock`. Each block has its own
  `residual` flag (x + f(x) or f(x)) and an optional pre-`LayerNorm` (`norm`), of the
  whole residual stream or of some of its columns;
- an `AttentionBlock` holds heads (W_Q, W_K: D x k; W_V: D x dv; W_O: dv x D, or None when
  the output projection is folded into W_V, dv = D) and its logit `scale`
  (scores = scale * (x W_Q)(x W_K)^T, softmax over keys);
- an `MLPBlock` is act(x W1 + b1) W2 + b2 (act: relu, gelu or linear), or, with a gate
  (w_gate, b_gate: the GLU family, Shazeer 2020), (act(x W1 + b1) * (x W_gate + b_gate)) W2
  + b2; a bilinear block is activation "linear" with a gate;
- `final_norm` (optional), then `unembed` (D x c);
- `causal`: the mask of every attention block (keys j > i hidden);
- `residual_labels`: one name per residual dimension (tracr's residual space), optional;
- `input_encoder` (token values in id order, BOS and pad token) and `output_encoder`
  (values in id order, or None for a numeric output), optional;
- `metadata`: a JSON-able dict (e.g. {"validated": True, "universal": {...}}).

Any weight matrix may be a `SparseMatrix` (COO: rows, cols, values, shape) instead of a
dense array, so fixed universal transformers with m ~ 1e5 fit in memory.

On disk (`save`/`load`, chosen by suffix): a .safetensors file or an .npz archive holding
the arrays under dotted names ("layers.0.heads.1.w_q", sparse ones as
".rows/.cols/.values") and a JSON header with the format name, `FORMAT_VERSION`, the block
structure, shapes, metadata and the SHA-256 of it all (`weights_digest`). The .npz keeps
the header as a uint8 array "__header__", the .safetensors as the string
`__metadata__["rasp_sim"]`. Arrays are stored as float64/int64 as they are, so a round
trip is lossless. Version-1 files (no gates, no hash) are still read.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Union

import numpy as np

from rasp_sim.base.errors import RaspError

from . import weights_files
from .weights_format import (FORMAT_NAME, FORMAT_VERSION, HASH_KEY, READABLE_VERSIONS,
                             WeightsError, in_file, parse_header, stored_arrays, to_json_safe)

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "READABLE_VERSIONS", "WeightsError",
           "DEFAULT_MEMORY_LIMIT", "SparseMatrix", "LayerNorm", "AttentionHead",
           "AttentionBlock", "MLPBlock", "InputEncoder", "OutputEncoder", "Transformer",
           "as_dense", "save", "load", "weights_digest", "weights_equal"]

DEFAULT_MEMORY_LIMIT = 4 * 2**30  # bytes `load` may read (the CLI's --memory-limit default)


@dataclass(frozen=True, eq=False)
class SparseMatrix:
    """A sparse matrix in coordinate form; duplicate (row, col) entries add up."""

    shape: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", (int(self.shape[0]), int(self.shape[1])))
        for name in ("rows", "cols"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        object.__setattr__(self, "values", np.asarray(self.values, dtype=np.float64))
        if not (self.rows.ndim == self.cols.ndim == self.values.ndim == 1) or not (
            self.rows.size == self.cols.size == self.values.size
        ):
            raise WeightsError("sparse matrix: rows, cols and values must be 1-d of equal length")
        for name, bound in (("rows", self.shape[0]), ("cols", self.shape[1])):
            index = getattr(self, name)
            if index.size and (index.min() < 0 or index.max() >= bound):
                raise WeightsError(f"sparse matrix: {name} out of range for shape {self.shape}")

    @classmethod
    def ones(cls, shape: tuple[int, int], rows: Any, cols: Any) -> "SparseMatrix":
        """A 0/1 matrix with ones at (rows[i], cols[i])."""
        rows = np.asarray(rows, dtype=np.int64)
        return cls(shape, rows, cols, np.ones(rows.size))

    @property
    def nnz(self) -> int:
        return int(self.values.size)

    @cached_property
    def column_runs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(order, columns, starts): entries sorted by column, and where each column's run
        of entries starts, so x @ self is one gather and one np.add.reduceat."""
        order = np.argsort(self.cols, kind="stable")
        cols = self.cols[order]
        starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]]) if cols.size else cols
        return order, cols[starts], starts

    def toarray(self) -> np.ndarray:
        dense = np.zeros(self.shape)
        np.add.at(dense, (self.rows, self.cols), self.values)
        return dense


Matrix = Union[np.ndarray, SparseMatrix]


def as_dense(matrix: Matrix) -> np.ndarray:
    return matrix.toarray() if isinstance(matrix, SparseMatrix) else matrix


def _shape(matrix: Matrix) -> tuple[int, ...]:
    return matrix.shape if isinstance(matrix, SparseMatrix) else tuple(matrix.shape)


def _coerce(owner: Any, *names: str) -> None:
    """Make owner's dense arrays float64 at construction; a value that does not convert is
    left as it is, for `check` to report under its full label."""
    for name in names:
        value = getattr(owner, name)
        if value is not None and not isinstance(value, SparseMatrix):
            try:
                object.__setattr__(owner, name, np.asarray(value, dtype=np.float64))
            except (TypeError, ValueError):
                pass


def _array(value: Matrix | None, label: str, ndim: int) -> None:
    """Check a (coerced) array's type, rank and finiteness."""
    if value is None:
        return
    if not isinstance(value, SparseMatrix) and not (isinstance(value, np.ndarray)
                                                    and value.dtype == np.float64):
        raise WeightsError(f"{label}: not a numeric array ({type(value).__name__})")
    if len(_shape(value)) != ndim:
        raise WeightsError(f"{label}: expected a {ndim}-d array, got shape {_shape(value)}")
    data = value.values if isinstance(value, SparseMatrix) else value
    if not np.all(np.isfinite(data)):
        raise WeightsError(f"{label}: contains non-finite values (nan or inf)")


def _expect(label: str, shape: tuple[int, ...], axis: int, size: int, what: str) -> None:
    if shape[axis] != size:
        raise WeightsError(f"{label}: shape {shape} does not match {what} = {size}")


@dataclass(frozen=True, eq=False)
class LayerNorm:
    """(x - mean) / sqrt(var + eps) * gain + bias over the residual stream's last axis; with
    `columns`, over those residual columns only, the others passing through unchanged (a
    LayerNorm of a subspace: a compiled RASP layer_norm normalises the few directions that
    hold a gathered row)."""

    gain: np.ndarray
    bias: np.ndarray
    eps: float = 1e-5
    columns: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        _coerce(self, "gain", "bias")

    def check(self, label: str, width: int) -> None:
        size, what = width, "model width D"
        if self.columns is not None:
            columns = self.columns
            if not columns or any(isinstance(c, bool) or not isinstance(c, int) for c in columns) \
                    or list(columns) != sorted(set(columns)) or columns[0] < 0 \
                    or columns[-1] >= width:
                raise WeightsError(f"{label}.columns: expected increasing residual columns "
                                   f"in 0..{width - 1}, got {list(columns)[:8]}")
            size, what = len(columns), "the number of columns"
        for name in ("gain", "bias"):
            _array(getattr(self, name), f"{label}.{name}", 1)
            _expect(f"{label}.{name}", getattr(self, name).shape, 0, size, what)


@dataclass(frozen=True, eq=False)
class AttentionHead:
    """One head: out = softmax(scale * x W_Q (x W_K)^T) x W_V W_O (W_O None: identity)."""

    w_q: Matrix
    w_k: Matrix
    w_v: Matrix
    w_o: Matrix | None = None

    def __post_init__(self) -> None:
        _coerce(self, "w_q", "w_k", "w_v", "w_o")

    def check(self, label: str, width: int) -> None:
        for name in ("w_q", "w_k", "w_v", "w_o"):
            _array(getattr(self, name), f"{label}.{name}", 2)
        q, k, v = _shape(self.w_q), _shape(self.w_k), _shape(self.w_v)
        for name, shape in (("w_q", q), ("w_k", k), ("w_v", v)):
            _expect(f"{label}.{name}", shape, 0, width, "model width D")
        _expect(f"{label}.w_k", k, 1, q[1], "head dimension of w_q")
        if self.w_o is None:
            _expect(f"{label}.w_v", v, 1, width, "model width D (w_o is None)")
        else:
            o = _shape(self.w_o)
            _expect(f"{label}.w_o", o, 0, v[1], "value dimension of w_v")
            _expect(f"{label}.w_o", o, 1, width, "model width D")


@dataclass(frozen=True, eq=False)
class AttentionBlock:
    heads: tuple[AttentionHead, ...]
    scale: float = 1.0
    residual: bool = True
    norm: LayerNorm | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(self.heads))

    def check(self, label: str, width: int) -> None:
        if not self.heads:
            raise WeightsError(f"{label}.heads: an attention block needs at least one head")
        if not np.isfinite(self.scale):
            raise WeightsError(f"{label}.scale: non-finite logit scale {self.scale}")
        for index, head in enumerate(self.heads):
            head.check(f"{label}.heads.{index}", width)
        if self.norm is not None:
            self.norm.check(f"{label}.norm", width)


MLP_ARRAYS = ("w1", "b1", "w2", "b2", "w_gate", "b_gate")


@dataclass(frozen=True, eq=False)
class MLPBlock:
    """out = act(x W1 + b1) W2 + b2, or with a gate (act(x W1 + b1) * (x W_gate + b_gate))
    W2 + b2."""

    w1: Matrix
    b1: np.ndarray
    w2: Matrix
    b2: np.ndarray
    activation: str = "relu"
    residual: bool = True
    norm: LayerNorm | None = None
    w_gate: Matrix | None = None
    b_gate: np.ndarray | None = None

    def __post_init__(self) -> None:
        _coerce(self, *MLP_ARRAYS)

    @property
    def gated(self) -> bool:
        return self.w_gate is not None

    def check(self, label: str, width: int) -> None:
        if self.activation not in ACTIVATIONS:
            raise WeightsError(f"{label}.activation: unknown activation {self.activation!r}; "
                               f"known: {', '.join(ACTIVATIONS)}")
        if (self.w_gate is None) != (self.b_gate is None):
            missing, given = ("b_gate", "w_gate") if self.b_gate is None else ("w_gate", "b_gate")
            raise WeightsError(f"{label}.{missing}: missing ({given} is given; a gate needs both)")
        for name, ndim in zip(MLP_ARRAYS, (2, 1, 2, 1, 2, 1)):
            _array(getattr(self, name), f"{label}.{name}", ndim)
        w1, w2 = _shape(self.w1), _shape(self.w2)
        _expect(f"{label}.w1", w1, 0, width, "model width D")
        _expect(f"{label}.b1", self.b1.shape, 0, w1[1], "hidden width of w1")
        if self.gated:
            assert self.w_gate is not None and self.b_gate is not None  # checked above
            gate = _shape(self.w_gate)
            _expect(f"{label}.w_gate", gate, 0, width, "model width D")
            _expect(f"{label}.w_gate", gate, 1, w1[1], "hidden width of w1")
            _expect(f"{label}.b_gate", self.b_gate.shape, 0, w1[1], "hidden width of w1")
        _expect(f"{label}.w2", w2, 0, w1[1], "hidden width of w1")
        _expect(f"{label}.w2", w2, 1, width, "model width D")
        _expect(f"{label}.b2", self.b2.shape, 0, width, "model width D")
        if self.norm is not None:
            self.norm.check(f"{label}.norm", width)


# Names only: the functions live in forward.py so this module stays free of maths.
ACTIVATIONS = ("relu", "gelu", "linear")

Block = Union[AttentionBlock, MLPBlock]


@dataclass(frozen=True)
class InputEncoder:
    """Token values in id order (id = position in `tokens`), the BOS and pad tokens."""

    tokens: tuple
    bos: Any = None
    pad: Any = None


@dataclass(frozen=True)
class OutputEncoder:
    """Output values in id order, or None for a numeric output read from the unembedding."""

    values: tuple | None = None


@dataclass(frozen=True, eq=False)
class Transformer:
    layers: tuple[Block, ...]
    unembed: Matrix
    causal: bool = False
    input_proj: Matrix | None = None
    token_embed: np.ndarray | None = None
    pos_embed: np.ndarray | None = None
    final_norm: LayerNorm | None = None
    residual_labels: tuple[str, ...] | None = None
    input_encoder: InputEncoder | None = None
    output_encoder: OutputEncoder | None = None
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(self.layers))
        _coerce(self, "unembed", "input_proj", "token_embed", "pos_embed")
        if self.residual_labels is not None:
            object.__setattr__(self, "residual_labels", tuple(self.residual_labels))
        self.check()

    def check(self) -> None:
        """Shapes agree with the width D, arrays are finite, labels and encoders fit."""
        _array(self.unembed, "unembed", 2)
        width = self.width
        for index, block in enumerate(self.layers):
            if not isinstance(block, (AttentionBlock, MLPBlock)):
                raise WeightsError(f"layers.{index}: not an AttentionBlock or MLPBlock")
            block.check(f"layers.{index}", width)
        _array(self.input_proj, "input_proj", 2)
        if self.input_proj is not None:
            _expect("input_proj", _shape(self.input_proj), 1, width, "model width D")
        for name in ("token_embed", "pos_embed"):
            _array(getattr(self, name), name, 2)
            if getattr(self, name) is not None:
                _expect(name, getattr(self, name).shape, 1, width, "model width D")
        if self.final_norm is not None:
            self.final_norm.check("final_norm", width)
        if self.residual_labels is not None and len(self.residual_labels) != width:
            raise WeightsError(f"residual_labels: {len(self.residual_labels)} labels for "
                               f"model width D = {width}")
        if self.output_encoder is not None and self.output_encoder.values is not None:
            _expect("output_encoder.values", (len(self.output_encoder.values),), 0,
                    self.out_dim, "output dimension of unembed")

    @property
    def width(self) -> int:
        """The residual width D."""
        return _shape(self.unembed)[0]

    @property
    def out_dim(self) -> int:
        return _shape(self.unembed)[1]

    def replace(self, **changes: Any) -> "Transformer":
        """A copy with `changes` applied (checked again)."""
        return replace(self, **changes)


# ---------------------------------------------------------------- save / load


def _flatten(model: Transformer) -> tuple[dict, dict[str, np.ndarray]]:
    """The JSON structure of `model` and its arrays by dotted name."""
    arrays: dict[str, np.ndarray] = {}

    def put(name: str, value: Matrix | None) -> Any:
        if value is None:
            return None
        if isinstance(value, SparseMatrix):
            arrays[f"{name}.rows"], arrays[f"{name}.cols"] = value.rows, value.cols
            arrays[f"{name}.values"] = value.values
            return {"sparse": list(value.shape)}
        arrays[name] = value
        return {"dense": list(value.shape)}

    def norm(name: str, ln: LayerNorm | None) -> Any:
        if ln is None:
            return None
        spec = {"gain": put(f"{name}.gain", ln.gain), "bias": put(f"{name}.bias", ln.bias),
                "eps": ln.eps}
        return spec if ln.columns is None else {**spec, "columns": list(ln.columns)}

    layers = []
    for index, block in enumerate(model.layers):
        label = f"layers.{index}"
        if isinstance(block, AttentionBlock):
            heads = [{name: put(f"{label}.heads.{h}.{name}", getattr(head, name))
                      for name in ("w_q", "w_k", "w_v", "w_o")}
                     for h, head in enumerate(block.heads)]
            layers.append({"kind": "attention", "heads": heads, "scale": block.scale,
                           "residual": block.residual, "norm": norm(f"{label}.norm", block.norm)})
        else:
            entry = {name: put(f"{label}.{name}", getattr(block, name)) for name in MLP_ARRAYS}
            entry.update(kind="mlp", activation=block.activation, residual=block.residual,
                         norm=norm(f"{label}.norm", block.norm))
            layers.append(entry)
    header = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "layers": layers,
        "unembed": put("unembed", model.unembed),
        "causal": model.causal,
        **{name: put(name, getattr(model, name))
           for name in ("input_proj", "token_embed", "pos_embed")},
        "final_norm": norm("final_norm", model.final_norm),
        "residual_labels": None if model.residual_labels is None else list(model.residual_labels),
        "input_encoder": None if model.input_encoder is None else {
            "tokens": list(model.input_encoder.tokens), "bos": model.input_encoder.bos,
            "pad": model.input_encoder.pad},
        "output_encoder": None if model.output_encoder is None else {
            "values": None if model.output_encoder.values is None
            else list(model.output_encoder.values)},
        "metadata": model.metadata,
    }
    return header, arrays


def _unflatten(header: dict, arrays: dict[str, np.ndarray]) -> Transformer:
    """The model a checked header (weights_format.parse_header) and its arrays (matched
    by `_match_arrays`) describe."""
    # Any: which kind (dense, sparse, None) each field may hold is the constructors' check.
    def get(name: str, spec: Any) -> Any:
        if spec is None:
            return None
        if "sparse" in spec:
            try:
                return SparseMatrix(tuple(spec["sparse"]), arrays[f"{name}.rows"],
                                    arrays[f"{name}.cols"], arrays[f"{name}.values"])
            except WeightsError as error:
                raise WeightsError(f"{name}: {error.message}") from None
        return arrays[name]

    def norm(name: str, spec: Any) -> LayerNorm | None:
        if spec is None:
            return None
        columns = tuple(spec["columns"]) if "columns" in spec else None
        return LayerNorm(get(f"{name}.gain", spec["gain"]), get(f"{name}.bias", spec["bias"]),
                         spec["eps"], columns)

    layers: list[Block] = []
    for index, entry in enumerate(header["layers"]):
        label = f"layers.{index}"
        if entry["kind"] == "attention":
            heads = tuple(AttentionHead(**{name: get(f"{label}.heads.{h}.{name}", spec[name])
                                           for name in ("w_q", "w_k", "w_v", "w_o")})
                          for h, spec in enumerate(entry["heads"]))
            layers.append(AttentionBlock(heads, entry["scale"], entry["residual"],
                                         norm(f"{label}.norm", entry["norm"])))
        else:
            # .get: version-1 headers have no gate entries
            arrays_of = {n: get(f"{label}.{n}", entry.get(n)) for n in MLP_ARRAYS}
            layers.append(MLPBlock(**arrays_of, activation=entry["activation"],
                                   residual=entry["residual"],
                                   norm=norm(f"{label}.norm", entry["norm"])))
    encoder = header["input_encoder"]
    output = header["output_encoder"]
    labels = header["residual_labels"]
    return Transformer(
        layers=tuple(layers),
        unembed=get("unembed", header["unembed"]),
        causal=header["causal"],
        input_proj=get("input_proj", header["input_proj"]),
        token_embed=get("token_embed", header["token_embed"]),
        pos_embed=get("pos_embed", header["pos_embed"]),
        final_norm=norm("final_norm", header["final_norm"]),
        residual_labels=None if labels is None else tuple(labels),
        input_encoder=None if encoder is None else InputEncoder(
            tuple(encoder["tokens"]), encoder["bos"], encoder["pad"]),
        output_encoder=None if output is None else OutputEncoder(
            None if output["values"] is None else tuple(output["values"])),
        metadata=header["metadata"],
    )


def weights_digest(header: dict, arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 (hex) of a model's stored form: the JSON header without its HASH_KEY entry
    (canonical JSON: sorted keys, no spaces), then every array in name order as its name,
    dtype, shape and C-order bytes. `save` records it; `load` recomputes it."""
    digest = hashlib.sha256()
    canonical = {key: value for key, value in header.items() if key != HASH_KEY}
    digest.update(json.dumps(canonical, sort_keys=True, separators=(",", ":"),
                             allow_nan=False).encode("utf-8"))
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        # name, dtype and shape as one JSON line: together they fix the byte count that follows
        digest.update(b"\n" + json.dumps([name, array.dtype.str, list(array.shape)]).encode("utf-8")
                      + b"\n")
        digest.update(array.tobytes())
    return digest.hexdigest()


def _stored_form(model: Transformer) -> tuple[dict, dict[str, np.ndarray]]:
    """The header (its hash included) and the arrays, as `save` writes them."""
    header, arrays = _flatten(model)
    try:
        # the hash covers the header as a reader sees it (JSON turns e.g. int keys to strings)
        header = json.loads(json.dumps(to_json_safe(header), allow_nan=False))
    except (TypeError, ValueError) as error:
        raise WeightsError(f"metadata: not JSON-serialisable ({error})") from None
    header[HASH_KEY] = weights_digest(header, arrays)
    return header, arrays


def save(model: Transformer, path: str | Path) -> None:
    """Write `model` to `path` losslessly: safetensors for a .safetensors suffix, else .npz
    (written to exactly `path`, whatever its suffix)."""
    header, arrays = _stored_form(model)
    weights_files.write(path, json.dumps(header), arrays)


def _match_arrays(header: dict, stored: dict[str, weights_files.ArrayInfo]) -> None:
    """The file holds exactly the arrays its header names, each with the dtype and shape the
    header gives (a sparse matrix's three parts 1-d of one length)."""
    expected = stored_arrays(header)
    for name in sorted(set(stored) - set(expected)):
        raise WeightsError(f"{name}: an array the header does not name")
    for name, (dtype, shape) in expected.items():
        if name not in stored:
            raise WeightsError(f"{name}: missing (the header names it)")
        info = stored[name]
        if info.dtype != dtype:
            raise WeightsError(f"{name}: stored as {info.dtype}, expected {dtype}")
        if shape is not None and info.shape != shape:
            raise WeightsError(f"{name}: stored shape {info.shape} differs from the header's "
                               f"{shape}")
        if shape is None and len(info.shape) != 1:
            raise WeightsError(f"{name}: stored shape {info.shape}, expected 1-d")
        if name.endswith(".values"):
            base = name[:-len(".values")]
            lengths = {stored[f"{base}.{part}"].shape for part in ("rows", "cols", "values")}
            if len(lengths) != 1:
                raise WeightsError(f"{base}: sparse rows, cols and values have different "
                                   "lengths")


def load(path: str | Path, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> Transformer:
    """Read a model written by `save` (.safetensors or .npz, by suffix). The file is
    hostile input: the container's and the JSON header's declarations are checked (fields,
    array names, dtypes, shapes, a total of at most `memory_limit` bytes) before any array
    is read; a corrupt, truncated, altered or foreign file raises WeightsError naming the
    file and the field, a file over the limit RaspResourceError."""
    return load_with_version(path, memory_limit)[0]


def load_with_version(path: str | Path,
                      memory_limit: int = DEFAULT_MEMORY_LIMIT) -> tuple[Transformer, int]:
    """`load`, and the file's format version: 1 has no hash, so nothing in a version-1
    file (its `validated` flag included) is guarded against edits."""
    try:
        with weights_files.open_weights(path, memory_limit) as stored:
            weights_files.check_memory(stored.arrays, stored.header_size, memory_limit)
            raw = stored.read_header()
            if raw is None:
                raise WeightsError("not a rasp-sim weights file (no header)")
            header, checked = parse_header(raw)
            _match_arrays(checked, stored.arrays)
            arrays = {name: stored.read(name) for name in sorted(stored.arrays)}
        # The arrays' own checks (shapes, finiteness) name the bad parameter; the hash then
        # catches any other change.
        model = _unflatten(checked, arrays)
        if header["version"] >= 2 and header[HASH_KEY] != weights_digest(header, arrays):
            raise WeightsError("altered or corrupt: the weights' hash does not match the one "
                               "recorded")
        return model, header["version"]
    except RaspError as error:  # WeightsError, or RaspResourceError for the memory limit
        raise in_file(error, path) from None


def weights_equal(a: Transformer, b: Transformer) -> bool:
    """True iff `a` and `b` have the same structure, metadata and bit-identical arrays
    (compared through their SHA-256 digests)."""
    return _stored_form(a)[0][HASH_KEY] == _stored_form(b)[0][HASH_KEY]


def computation_digest(model: Transformer) -> str:
    """SHA-256 of what `model` computes: its stored form without the metadata (which
    records timings and reports that differ between two compiles of one program)."""
    return _stored_form(model.replace(metadata={}))[0][HASH_KEY]
