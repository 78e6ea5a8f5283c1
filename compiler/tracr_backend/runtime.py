"""Running compiled weights with NumPy alone (no tracr, no JAX).

A compiled model reads `[BOS] + tokens` (token ids from its input encoder, positions from
0) and writes one output per position; position 0 (BOS) is dropped. A numeric-input model
(compile record "tokens_kind": "numeric", no token embedding) reads instead one real
feature per position, 0.0 at BOS, through its `input_proj` (1 x D), plus `pos_embed`. A
categorical output is the arg-max over the unembedding's columns, decoded by the output
encoder; a numerical one is the single unembedding column. Inputs are grouped by length
and run as batches.
"""
from __future__ import annotations

import json
import math
import numbers
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from rasp_sim.core import semantics
from rasp_sim.base.errors import RaspError, RaspResourceError, RaspRuntimeError, RaspTypeError

from ..forward import floats_per_position, forward
from ..weights import (DEFAULT_MEMORY_LIMIT, AttentionBlock, InputEncoder, MLPBlock, Transformer,
                       WeightsError, load, load_with_version)
from ..weights_format import boolean, in_file, integer, list_of, one_of, record, scalar

COMPILE_KEY = "tracr_compile"  # the metadata entry this backend writes
# Validation's tolerance for numerical outputs (validate.NUMERIC_TOLERANCE, whose module
# imports this one): |model - program| <= NUMERIC_TOLERANCE * max(1, |program|).
NUMERIC_TOLERANCE = 1e-9
NUMERIC = "numeric"  # the compile record's tokens_kind of a numeric-input model
# The longest sequence a compile accepts (each position is a residual dimension); a
# compile record claiming more is forged, and is refused before `verify` samples rows.
MAX_LEN = 256


# The compile record's fields that running the model reads; the record has others (the
# validation report, versions, sizes) that only describe it.
_RECORD = record({"tokens_kind": one_of("str", "int", "float", "bool", "asis", NUMERIC),
                  "max_len": integer(1, MAX_LEN)},
                 optional={"min_len": integer(1, MAX_LEN), "vocab": list_of(scalar), "forced": boolean,
                           "output_type": one_of("int", "float", "bool", "str")},
                 others=True)


def compile_info(model: Transformer) -> dict[str, Any]:
    """The compile record in `model.metadata`, checked against the model, or a WeightsError
    naming the field (written by hand or altered files are hostile input).

    "min_len" defaults to 1 (older files). A token model needs its vocabulary, an input
    encoder whose BOS (and pad) are tokens, and a token embedding with a row per token; a
    numeric-input model an input_proj of one row and "token_range" [lo, hi]; both a
    position embedding (when they have one) with a row for BOS and each of max_len
    positions; and an unembedding with a column per output value, or a single column for
    a numerical output (the readout: see the module docstring)."""
    info = model.metadata.get(COMPILE_KEY) if isinstance(model.metadata, dict) else None
    if not isinstance(info, dict) or (model.input_encoder is None
                                      and info.get("tokens_kind") != NUMERIC):
        raise WeightsError("these weights were not written by `rasp-sim compile` (no "
                           f"'{COMPILE_KEY}' record or input encoder in their metadata)")
    where = f"metadata.{COMPILE_KEY}"
    _RECORD(info, where)
    info = {"min_len": 1, **info}
    if info["min_len"] > info["max_len"]:
        raise WeightsError(f"{where}.min_len: {info['min_len']} is above max_len "
                           f"{info['max_len']}")
    if model.pos_embed is not None and model.pos_embed.shape[0] < info["max_len"] + 1:
        raise WeightsError(f"pos_embed: {model.pos_embed.shape[0]} rows, but max_len "
                           f"{info['max_len']} needs {info['max_len'] + 1} (BOS and each position)")
    if info["tokens_kind"] == NUMERIC:
        _check_numeric(model, info, where)
    else:
        _check_tokens(model, info, where)
    _check_readout(model)
    return info


def _check_readout(model: Transformer) -> None:
    """Refused before any run: an empty categorical readout (its arg-max has no column)
    and a numerical one wider than its single column (a forged 2^40-wide sparse
    unembedding was multiplied out until memory ran out)."""
    values = model.output_encoder.values if model.output_encoder is not None else None
    if values is None and model.out_dim != 1:
        raise WeightsError(f"unembed: {model.out_dim:,} columns, but a numerical output is "
                           "read from exactly one (output_encoder.values is null)")
    if values is not None and model.out_dim == 0:
        raise WeightsError("unembed: no columns, and output_encoder.values is empty: a "
                           "categorical output needs at least one value")


def _check_numeric(model: Transformer, info: dict[str, Any], where: str) -> None:
    if model.input_proj is None or model.input_proj.shape[0] != 1:
        raise WeightsError("a numeric-input model needs an input_proj of one row (the token "
                           "value's direction)")
    bounds = info.get("token_range")
    if not (isinstance(bounds, list) and len(bounds) == 2 and all(_is_number(b) and math.isfinite(b)
                                                                   for b in bounds)
            and bounds[0] <= bounds[1]):
        raise WeightsError(f"{where}.token_range: expected [lo, hi], two finite numbers "
                           f"with lo <= hi, got {bounds!r}")


def _token_encoder(model: Transformer) -> InputEncoder:
    if model.input_encoder is None:
        raise WeightsError("input_encoder: missing (a token model has one)")
    return model.input_encoder


def _check_tokens(model: Transformer, info: dict[str, Any], where: str) -> None:
    encoder = _token_encoder(model)
    if "vocab" not in info:
        raise WeightsError(f"{where}.vocab: missing")
    for name in ("bos", "pad"):
        token = getattr(encoder, name)
        if (token is not None or name == "bos") and token not in encoder.tokens:
            raise WeightsError(f"input_encoder.{name}: {token!r} is not in the vocabulary "
                               "(input_encoder.tokens)")
    known = {(type(t), t) for t in encoder.tokens}  # by value and type, as vocabulary_ids
    unknown = [v for v in info["vocab"] if (type(v), v) not in known]
    if unknown:
        raise WeightsError(f"{where}.vocab: {unknown[0]!r} is not one of the model's tokens "
                           "(input_encoder.tokens)")
    if model.token_embed is None:
        raise WeightsError("token_embed: missing (a token model embeds its tokens)")
    if model.token_embed.shape[0] != len(encoder.tokens):
        raise WeightsError(f"token_embed: {model.token_embed.shape[0]} rows for "
                           f"{len(encoder.tokens)} tokens (input_encoder.tokens)")


def is_numeric_input(model: Transformer) -> bool:
    """Whether `model` (compiled) reads real numbers instead of token ids."""
    return compile_info(model).get("tokens_kind") == NUMERIC


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _check_length(info: dict[str, Any], sequence: Sequence[Any], index: int) -> None:
    if len(sequence) == 0:
        raise RaspTypeError(f"input {index}: is empty")
    if len(sequence) > info["max_len"]:
        raise RaspTypeError(f"input {index}: length {len(sequence)} is above the model's "
                            f"max-len {info['max_len']}")
    shortest = info.get("min_len", 1)
    if len(sequence) < shortest:
        raise RaspTypeError(f"input {index}: length {len(sequence)} is below the model's "
                            f"min-len {shortest}")


def numeric_features(model: Transformer, sequence: Sequence[Any], index: int = 0) -> list[float]:
    """[0.0 (BOS)] + the values of `sequence`, each a finite real number in the model's
    token_range, for a numeric-input model."""
    info = compile_info(model)
    if info.get("tokens_kind") != NUMERIC:
        raise WeightsError("this model reads tokens, not numbers (use token_ids)")
    if isinstance(sequence, str):
        raise RaspTypeError(f"input {index}: the model reads numbers; give a JSON list such "
                            f"as [0.5, -1.25], not the text {sequence!r}")
    _check_length(info, sequence, index)
    lo, hi = info["token_range"]
    features = [0.0]
    for position, value in enumerate(sequence):
        where = f"input {index}, position {position}"
        if not _is_number(value):
            raise RaspTypeError(f"{where}: {value!r} is not a number (the model reads numbers)")
        if not math.isfinite(value):
            raise RaspTypeError(f"{where}: {value!r} is not finite")
        if not lo <= value <= hi:
            raise RaspTypeError(f"{where}: {value!r} is outside the model's token range "
                                f"[{lo!r}, {hi!r}]")
        features.append(float(value))
    return features


def token_ids(model: Transformer, sequence: Sequence[Any], index: int = 0) -> list[int]:
    """[BOS] + the ids of `sequence`'s tokens, converted as the program's tokens see them."""
    info = compile_info(model)
    if info.get("tokens_kind") == NUMERIC:
        raise WeightsError("this model reads numbers, not tokens (use numeric_features)")
    encoder = _token_encoder(model)
    _check_length(info, sequence, index)
    ids = [encoder.tokens.index(encoder.bos)]
    for position, raw in enumerate(sequence):
        try:
            token = semantics.convert_token(info["tokens_kind"], raw)
        except RaspError as error:
            raise RaspTypeError(f"input {index}, position {position}: {error.message}") from None
        matches = [i for i, t in enumerate(encoder.tokens)
                   if t == token and type(t) is type(token) and t not in (encoder.bos, encoder.pad)]
        if not matches:
            raise RaspTypeError(f"input {index}, position {position}: token {token!r} is not in "
                                f"the model's vocabulary {list(info['vocab'])}")
        ids.append(matches[0])
    return ids


def decode(model: Transformer, outputs: np.ndarray) -> list[list[Any]]:
    """(B, n+1, c) forward outputs -> per input the n decoded values (BOS dropped)."""
    if model.output_encoder is not None and model.output_encoder.values is not None:
        # vectorised: one lookup in an object array of the values, one tolist
        values = np.empty(len(model.output_encoder.values), dtype=object)
        values[:] = model.output_encoder.values
        return values[outputs[:, 1:].argmax(axis=-1)].tolist()
    return outputs[:, 1:, 0].tolist()


def as_program_types(model: Transformer, outputs: list[list[Any]]) -> list[list[Any]]:
    """Decoded outputs in the program's own type (the compile record's "output_type"):
    a numerical output direction carries an int program's values as floats (sort's
    [1.0, 2.0]); they are given back as ints, as the interpreter prints them.

    Only a value within validation's tolerance of an integer is converted; any other
    value means the model is wrong on this input, which is an error, never a rounding."""
    info = compile_info(model)
    if info.get("output_type") != "int" or not _numerical_output(model):
        return outputs
    typed = []
    for row in outputs:
        for position, x in enumerate(row):
            if not (math.isfinite(x) and abs(x - round(x)) <= NUMERIC_TOLERANCE * max(1.0, abs(x))):
                raise RaspRuntimeError(f"the model's output at position {position} is {x!r}, "
                                       "not the integer its program gives (the model is "
                                       "wrong on this input)")
        typed.append([round(x) for x in row])
    return typed


def _numerical_output(model: Transformer) -> bool:
    return model.output_encoder is None or model.output_encoder.values is None


def run_ids(model: Transformer, ids: np.ndarray) -> list[list[Any]]:
    """Decoded outputs for a (B, n+1) batch of id rows of one length."""
    return decode(model, forward(model, np.asarray(ids, dtype=np.int64)))


def load_compiled(path: str | Path, allow_unvalidated: bool = False,
                  memory_limit: int = DEFAULT_MEMORY_LIMIT) -> tuple[Transformer, str | None]:
    """A compile output read from `path` (at most `memory_limit` bytes of arrays), and a
    warning when it is not validated.

    A model whose metadata does not say validated (e.g. written by `compile --force`) is a
    WeightsError unless `allow_unvalidated`; then the warning says what is wrong with it."""
    model, version = load_with_version(path, memory_limit)
    try:
        info = compile_info(model)
    except WeightsError as error:
        raise in_file(error, path) from None
    outer, recorded = model.metadata.get("validated"), info.get("validated")
    if recorded is not None and recorded != outer:
        raise WeightsError(f"{path}: its metadata says validated: {json.dumps(outer)} but its "
                           f"compile record says validated: {json.dumps(recorded)}; the file "
                           "was edited or is corrupt: compile the program again")
    if outer is True and version >= 2:
        return model, None
    if outer is True:
        why = ("a version-1 file: it has no hash, so nothing guards its 'validated' flag; "
               "compile the program again for a checked file")
    elif info.get("forced"):
        why = "written by `compile --force` after its validation failed"
    elif _compression_wrong(model) is not None:
        why = (f"compressed by `rasp-sim compress`, and wrong on {_compression_wrong(model)} "
               "inputs of its domain")
    else:
        why = "its metadata does not say validated"
    if not allow_unvalidated:
        raise WeightsError(f"{path}: the model is not validated ({why}); "
                           "--allow-unvalidated uses it anyway")
    return model, f"warning: {path} is NOT validated ({why}); its outputs may be wrong"


def run_features(model: Transformer, features: np.ndarray) -> list[list[Any]]:
    """Decoded outputs for a (B, n+1) batch of numeric feature rows of one length."""
    return decode(model, forward(model, np.asarray(features, dtype=np.float64)[..., None]))


def run_weights(model: Transformer | str | Path, inputs: Sequence[Sequence[Any]],
                memory_limit: int = DEFAULT_MEMORY_LIMIT) -> list[list[Any]]:
    """Run compiled weights (a model or a weights file) on `inputs`; one output list each,
    in the program's output type (`as_program_types`).
    Inputs of one length run in passes whose activations fit in `memory_limit` bytes."""
    if not isinstance(model, Transformer):
        model = load(model, memory_limit=memory_limit)
    if is_numeric_input(model):
        rows: list[list] = [numeric_features(model, sequence, i) for i, sequence in enumerate(inputs)]
        run_rows: Callable[[Transformer, np.ndarray], list[list[Any]]] = run_features
    else:
        rows = [token_ids(model, sequence, i) for i, sequence in enumerate(inputs)]
        run_rows = run_ids
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_length[len(row)].append(i)
    out: list[list[Any]] = [[] for _ in rows]
    for length, members in by_length.items():
        step = rows_per_pass(model, length, memory_limit)
        for start in range(0, len(members), step):
            batch = members[start:start + step]
            for i, values in zip(batch, run_rows(model, np.array([rows[i] for i in batch]))):
                out[i] = values
    return as_program_types(model, out)


# Bytes of per-position arrays one forward pass aims at (`floats_per_position`: the
# residual stream, or the widest attention block's arrays where the stream is held as
# distinct rows), below any memory limit. Passes of a few MiB reuse the memory the
# previous pass freed, where fresh memory costs a page fault per 4 KiB (on the 2-core CI
# machine ~30 us each: 134k faults were 5 s of a 15 s compile with passes of 160 MiB),
# and keep more of each block's arrays in cache.
PASS_BYTES = 8 * 2**20


def rows_per_pass(model: Transformer, length: int, memory_limit: int) -> int:
    """How many inputs of `length` positions (BOS included) one forward pass may take:
    an upper bound of the floats alive per position (the residual stream and its copy, a
    block's output, and the widest block's intermediates: an MLP's hidden layer and gate,
    or every head's queries, keys, values and score row) times 8 bytes, within
    `memory_limit`, and per-position arrays of at most PASS_BYTES (at least one input). A file
    may declare a huge width in a few stored numbers (a sparse matrix), so this is
    checked, not assumed."""
    widest = 0
    for block in model.layers:
        if isinstance(block, MLPBlock):
            widest = max(widest, 2 * block.w1.shape[1])
        else:
            widest = max(widest, sum(2 * h.w_q.shape[1] + h.w_v.shape[1] + length
                                     for h in block.heads))
    per_row = 8 * length * (3 * model.width + widest)
    if per_row > memory_limit:
        raise RaspResourceError(
            f"running this model on one input of {length - 1} tokens needs about "
            f"{per_row:,} bytes (width {model.width:,}), above the memory limit of "
            f"{memory_limit:,} bytes; raise it with --memory-limit SIZE")
    return max(1, min(memory_limit // per_row,
                      PASS_BYTES // (8 * length * floats_per_position(model, length))))


def size(weights: Transformer) -> dict[str, int]:
    """Heads, blocks, residual width and (dense) parameter count of compiled weights:
    every array, gates, LayerNorms and the input projection included."""
    attention = [b for b in weights.layers if isinstance(b, AttentionBlock)]
    arrays = [weights.unembed, weights.token_embed, weights.pos_embed, weights.input_proj]
    for block in weights.layers:
        if isinstance(block, AttentionBlock):
            arrays += [a for h in block.heads for a in (h.w_q, h.w_k, h.w_v, h.w_o)]
        else:
            arrays += [block.w1, block.b1, block.w2, block.b2, block.w_gate, block.b_gate]
        if block.norm is not None:
            arrays += [block.norm.gain, block.norm.bias]
    return {"heads": sum(len(b.heads) for b in attention),
            "attention_blocks": len(attention),
            "mlp_blocks": len(weights.layers) - len(attention),
            "residual_width": weights.width,
            "parameters": sum(math.prod(a.shape) for a in arrays if a is not None)}


def _compression_wrong(model: Transformer) -> str | None:
    """The count of wrong inputs a compressed model's certificate records (rasp-sim
    compress: the metadata's "compression" record), as text; None for another model."""
    record = model.metadata.get("compression")
    certificate = record.get("certificate") if isinstance(record, dict) else None
    wrong = certificate.get("wrong") if isinstance(certificate, dict) else None
    return f"{wrong:,}" if type(wrong) is int else None
