"""The JSON header of a weights file: parsing and schema checks, no file I/O, no arrays.

A weights file is hostile input: its header is checked field by field before any array is
read, and every error names the field ("layers.2.heads.0.w_q.dense.1: expected an integer
>= 0, got -3"). The validators are small composable checkers, each a callable
`(value, path) -> None` that raises `WeightsError`; other records stored in a model's
metadata (the compile record, the universal spec) are checked with the same ones.
"""
from __future__ import annotations

import json
import math
import numbers
from typing import Any, Callable, Iterable

from rasp_sim.base.errors import RaspError

FORMAT_NAME = "rasp-sim-weights"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 1: no gated MLPs, no recorded hash
HASH_KEY = "sha256"  # the header entry holding weights_digest (absent in version 1)
MAX_DEPTH = 64  # JSON nesting a header may have; the format itself needs 6
MAX_DIMENSION = 2**62  # larger sizes overflow int64 byte counts
NON_FINITE = "$float"  # JSON has no inf or nan: {"$float": "inf"} stands for one


class WeightsError(RaspError):
    """Inconsistent, non-finite or unreadable transformer weights."""

    kind = "weights error"


Check = Callable[[Any, str], None]


def in_file(error: RaspError, path: object) -> RaspError:
    """`error` with the file it is about in front: `file: field: what is wrong`."""
    error.message = f"{path}: {error.message}"
    error.args = (error.message,)
    return error


def _fail(path: str, expected: str, value: Any) -> WeightsError:
    shown = repr(value)
    return WeightsError(f"{path}: expected {expected}, got "
                        f"{shown if len(shown) <= 60 else shown[:57] + '...'}")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def any_value(value: Any, path: str) -> None:
    """Anything JSON holds (depth is bounded by `parse_header`)."""


def boolean(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise _fail(path, "true or false", value)


def text(value: Any, path: str) -> None:
    if not isinstance(value, str):
        raise _fail(path, "a string", value)


def integer(minimum: int = 0, maximum: int = MAX_DIMENSION) -> Check:
    what = {0: "a non-negative integer", 1: "a positive integer"}.get(
        minimum, f"an integer >= {minimum}")

    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise _fail(path, what, value)
        if value > maximum:
            raise _fail(path, f"{what} at most {maximum}", value)
    return check


def number(positive: bool = False) -> Check:
    """A finite real number (JSON's true/false are not numbers here)."""
    def check(value: Any, path: str) -> None:
        if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                or not math.isfinite(value) or (positive and value <= 0)):
            raise _fail(path, "a finite positive number" if positive else "a finite number",
                        value)
    return check


def scalar(value: Any, path: str) -> None:
    """A token or output value: a string, number, boolean or null (not a list or object)."""
    if value is not None and not isinstance(value, (str, bool, numbers.Real)):
        raise _fail(path, "a string, number, boolean or null", value)


def one_of(*choices: Any) -> Check:
    def check(value: Any, path: str) -> None:
        if isinstance(value, bool) or value not in choices:
            raise _fail(path, "one of " + ", ".join(map(repr, choices)), value)
    return check


def nullable(inner: Check) -> Check:
    def check(value: Any, path: str) -> None:
        if value is not None:
            inner(value, path)
    return check


def list_of(item: Check, min_length: int = 0, length: int | None = None) -> Check:
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise _fail(path, "a list", value)
        if length is not None and len(value) != length:
            raise WeightsError(f"{path}: expected {length} entries, got {len(value)}")
        if len(value) < min_length:
            raise WeightsError(f"{path}: expected at least {min_length} entries, got "
                               f"{len(value)}")
        for index, entry in enumerate(value):
            item(entry, _join(path, index))
    return check


def record(required: dict[str, Check], optional: dict[str, Check] | None = None,
           others: bool = False) -> Check:
    """An object with the `required` fields, maybe the `optional` ones, and others only if
    `others` (records that later versions may extend, such as metadata)."""
    optional = optional or {}

    def check(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise _fail(path, "an object", value)
        for key, field_check in required.items():
            if key not in value:
                raise WeightsError(f"{_join(path, key)}: missing")
            field_check(value[key], _join(path, key))
        for key, field_check in optional.items():
            if key in value:
                field_check(value[key], _join(path, key))
        if not others:
            unknown = sorted(set(value) - set(required) - set(optional))
            if unknown:
                raise WeightsError(f"{_join(path, unknown[0])}: unknown field")
    return check


def array_spec(value: Any, path: str) -> None:
    """{"dense": [sizes]} or {"sparse": [rows, cols]}: an array's kind and shape."""
    if isinstance(value, dict) and set(value) == {"sparse"}:
        list_of(integer(), length=2)(value["sparse"], _join(path, "sparse"))
    elif isinstance(value, dict) and set(value) == {"dense"}:
        list_of(integer(), min_length=1)(value["dense"], _join(path, "dense"))
    else:
        raise _fail(path, 'an array: {"dense": [sizes]} or {"sparse": [rows, cols]}', value)


_NORM = nullable(record({"gain": array_spec, "bias": array_spec, "eps": number(positive=True)},
                        {"columns": list_of(integer(), min_length=1)}))
_COMMON_BLOCK = {"residual": boolean, "norm": _NORM}
_HEAD = record({"w_q": array_spec, "w_k": array_spec, "w_v": array_spec,
                "w_o": nullable(array_spec)})
_ATTENTION = record({"kind": one_of("attention"), "heads": list_of(_HEAD, min_length=1),
                     "scale": number(), **_COMMON_BLOCK})
_MLP = record({"kind": one_of("mlp"), "w1": array_spec, "b1": array_spec, "w2": array_spec,
               "b2": array_spec, "activation": text, **_COMMON_BLOCK},
              # version-1 headers have no gate entries
              optional={"w_gate": nullable(array_spec), "b_gate": nullable(array_spec)})


def _block(value: Any, path: str) -> None:
    kind = value.get("kind") if isinstance(value, dict) else None
    checks = {"attention": _ATTENTION, "mlp": _MLP}
    if kind not in checks:
        if not isinstance(value, dict):
            raise _fail(path, "an object", value)
        raise _fail(_join(path, "kind"), "'attention' or 'mlp'", kind)
    checks[kind](value, path)


HEADER = record(
    {"format": one_of(FORMAT_NAME), "version": one_of(*READABLE_VERSIONS),
     "layers": list_of(_block), "unembed": array_spec, "causal": boolean,
     "input_proj": nullable(array_spec), "token_embed": nullable(array_spec),
     "pos_embed": nullable(array_spec), "final_norm": _NORM,
     "residual_labels": nullable(list_of(text)),
     "input_encoder": nullable(record({"tokens": list_of(scalar), "bos": scalar,
                                       "pad": scalar})),
     "output_encoder": nullable(record({"values": nullable(list_of(scalar))})),
     "metadata": record({}, others=True)},
    optional={HASH_KEY: text})


def _depth(value: Any) -> int:
    """Nesting depth of parsed JSON, without recursion (a hostile header may nest deeply)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1)
                         for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_header(raw: bytes) -> tuple[dict, dict]:
    """The header as stored (what its hash covers) and as checked: JSON, nested at most
    MAX_DEPTH, of this format and a readable version, every field of the schema present and
    well-typed, with its non-finite floats restored."""
    try:
        header = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise WeightsError(f"header: not UTF-8 text ({error.reason} at byte {error.start})") \
            from None
    except RecursionError:
        raise WeightsError(f"header: JSON nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as error:
        raise WeightsError(f"header: not valid JSON ({error})") from None
    if _depth(header) > MAX_DEPTH:
        raise WeightsError(f"header: JSON nested more than {MAX_DEPTH} levels deep")
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        found = header.get("format") if isinstance(header, dict) else None
        raise WeightsError(f"not a rasp-sim weights file (format {found!r})")
    if header.get("version") not in READABLE_VERSIONS:
        raise WeightsError(f"format version {header.get('version')!r} is not supported (this "
                           f"rasp-sim reads versions {', '.join(map(str, READABLE_VERSIONS))})")
    if header["version"] >= 2 and HASH_KEY not in header:
        raise WeightsError(f"{HASH_KEY}: missing (version-2 files record their hash)")
    restored = from_json_safe(header)
    HEADER(restored, "")
    return header, restored


def array_specs(header: dict) -> Iterable[tuple[str, dict]]:
    """(dotted name, spec) of every array the (checked) header names."""
    def norm(name: str, spec: dict | None) -> Iterable[tuple[str, dict]]:
        if spec is not None:
            yield f"{name}.gain", spec["gain"]
            yield f"{name}.bias", spec["bias"]

    for index, entry in enumerate(header["layers"]):
        label = f"layers.{index}"
        if entry["kind"] == "attention":
            for h, head in enumerate(entry["heads"]):
                for name, spec in head.items():
                    yield f"{label}.heads.{h}.{name}", spec
        else:
            for name in ("w1", "b1", "w2", "b2", "w_gate", "b_gate"):
                yield f"{label}.{name}", entry.get(name)
        yield from norm(f"{label}.norm", entry["norm"])
    for name in ("unembed", "input_proj", "token_embed", "pos_embed"):
        yield name, header[name]
    yield from norm("final_norm", header["final_norm"])


SPARSE_PARTS = {"rows": "int64", "cols": "int64", "values": "float64"}


def stored_arrays(header: dict) -> dict[str, tuple[str, tuple[int, ...] | None]]:
    """The stored arrays a checked header names: dotted name -> (dtype, shape); a sparse
    matrix's rows/cols/values are 1-d of a length the header does not give (None)."""
    stored: dict[str, tuple[str, tuple[int, ...] | None]] = {}
    for name, spec in array_specs(header):
        if spec is None:
            continue
        if "sparse" in spec:
            stored.update({f"{name}.{part}": (dtype, None) for part, dtype in SPARSE_PARTS.items()})
        else:
            stored[name] = ("float64", tuple(spec["dense"]))
    return stored


def to_json_safe(value: Any) -> Any:
    """`value` with every non-finite float (a vocabulary or output value inf, say) written
    as {"$float": repr}, which `from_json_safe` turns back."""
    if isinstance(value, float) and not math.isfinite(value):
        return {NON_FINITE: repr(value)}
    if isinstance(value, dict):
        return {k: to_json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_safe(v) for v in value]
    return value


def from_json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {NON_FINITE} and value[NON_FINITE] in ("inf", "-inf", "nan"):
            return float(value[NON_FINITE])
        return {k: from_json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json_safe(v) for v in value]
    return value
