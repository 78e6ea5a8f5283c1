"""Running compiled weights with NumPy alone (no tracr, no JAX).

A compiled model reads `[BOS] + tokens` (token ids from its input encoder, positions from
0) and writes one output per position; position 0 (BOS) is dropped. A categorical output is
the arg-max over the unembedding's columns, decoded by the output encoder; a numerical one
is the single unembedding column. Inputs are grouped by length and run as batches.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rasp_sim import semantics
from rasp_sim.errors import RaspError, RaspTypeError

from ..forward import forward
from ..weights import Transformer, WeightsError, load

COMPILE_KEY = "tracr_compile"  # the metadata entry this backend writes


def compile_info(model: Transformer) -> dict[str, Any]:
    """The compile record in `model.metadata`, or a WeightsError for other weight files."""
    info = model.metadata.get(COMPILE_KEY) if isinstance(model.metadata, dict) else None
    if not isinstance(info, dict) or model.input_encoder is None:
        raise WeightsError("these weights were not written by `rasp-sim compile` (no "
                           f"'{COMPILE_KEY}' record or input encoder in their metadata)")
    return info


def token_ids(model: Transformer, sequence: Sequence[Any], index: int = 0) -> list[int]:
    """[BOS] + the ids of `sequence`'s tokens, converted as the program's tokens see them."""
    info = compile_info(model)
    encoder = model.input_encoder
    if len(sequence) == 0:
        raise RaspTypeError(f"input {index}: is empty")
    if len(sequence) > info["max_len"]:
        raise RaspTypeError(f"input {index}: length {len(sequence)} is above the model's "
                            f"max-len {info['max_len']}")
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
        values = model.output_encoder.values
        return [[values[i] for i in row[1:]] for row in outputs.argmax(axis=-1).tolist()]
    return [row[1:] for row in outputs[..., 0].tolist()]


def run_ids(model: Transformer, ids: np.ndarray) -> list[list[Any]]:
    """Decoded outputs for a (B, n+1) batch of id rows of one length."""
    return decode(model, forward(model, np.asarray(ids, dtype=np.int64)))


def run_weights(model: Transformer | str | Path, inputs: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Run compiled weights (a model or an .npz path) on `inputs`; one output list each."""
    if not isinstance(model, Transformer):
        model = load(model)
    rows = [token_ids(model, sequence, i) for i, sequence in enumerate(inputs)]
    by_length: dict[int, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        by_length[len(row)].append(i)
    out: list[list[Any]] = [[] for _ in rows]
    for members in by_length.values():
        for i, values in zip(members, run_ids(model, np.array([rows[i] for i in members]))):
            out[i] = values
    return out
