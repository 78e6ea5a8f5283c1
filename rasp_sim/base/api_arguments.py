"""The Python API's argument checks (docs/python.md): a wrong argument is a RaspTypeError
naming the function, the argument and what was given, raised before any work, never a
TypeError or IndexError from deep inside the evaluator or the compiler.

One checker per kind of argument: paths, flags, bounded integers (the CLI's bounds:
rasp_sim/cli/options.py), names and labels, tokens (finite atoms for a vocabulary; the
CLI's MAX_INT_BITS for integers), inputs, Dask scheduler addresses, and torch dtypes and
devices (checked without importing torch where the value says enough)."""
from __future__ import annotations

import argparse
import itertools
import math
import numbers
import os
import re
import reprlib
from fractions import Fraction
from typing import Any, Callable, Iterable

import numpy as np

from .counts import MAX_SIZE
from .errors import RaspTypeError
from .limits import MAX_COLLECTION_LENGTH, MAX_INT_BITS

# What one input may be: a str (its characters are the tokens) or a sequence of atoms.
_SEQUENCES = (str, list, tuple, np.ndarray)
# The atoms a token may be (docs/language.md's values); NumPy scalars of these kinds too.
_ATOMS = (str, bool, int, float, Fraction)
_ARRAY_KINDS = "biufU"  # bool, int, unsigned, float, str: NumPy dtypes of such atoms
# The suffixes Model.save writes (rasp_sim/compiler/weights_files.py: by the suffix).
MODEL_SUFFIXES = (".npz", ".safetensors")
# Where torch parameters may live; `cuda:N` and `mps:N` name one device of a kind.
TORCH_DEVICE = re.compile(r"(cpu|cuda|mps)(?::(\d{1,4}))?")


def input_list(function: str, inputs: Any) -> list:
    """`inputs` as a list of inputs, each a str or a sequence of atoms (`checked_inputs`)."""
    return list(checked_inputs(function, inputs))


def checked_inputs(function: str, inputs: Any) -> Any:
    """`inputs`, as given, once checked to be a list, tuple or array of inputs, each a str
    or a sequence of atoms: a 2-D array stays an array (its dtype checked once, not row by
    row), and a list of strs or of lists of atoms is checked in bulk, at C speed (a
    notebook's loop calls this once per input)."""
    if isinstance(inputs, (str, bytes)):
        raise RaspTypeError(f"{function} takes a list of inputs, e.g. [{inputs!r}], not one "
                            f"{type(inputs).__name__}")
    if isinstance(inputs, np.ndarray) and inputs.ndim == 2:
        _array_atoms(function, inputs, "inputs")
        return inputs
    if (not isinstance(inputs, (list, tuple, np.ndarray))
            or isinstance(inputs, np.ndarray) and inputs.ndim == 0):
        raise RaspTypeError(f"{function} takes a list of inputs (each a str or a list of "
                            f"tokens), not {shown(inputs)}")
    if not _bulk_inputs(inputs):  # then one by one, to name the first wrong input
        for index, sequence in enumerate(inputs):
            one_input(function, sequence, index)
    return inputs


def _bulk_inputs(inputs: Any) -> bool:
    """Whether `inputs` are all strs, or all lists and tuples of atoms that `_atoms`
    passes by their types alone, found in two passes at C speed; False says nothing."""
    kinds = set(map(type, inputs))
    if kinds <= {str}:
        return True
    return kinds <= {list, tuple} and _plain_atoms(list(itertools.chain.from_iterable(inputs)))


def one_input(function: str, sequence: Any, index: int = 0) -> Any:
    """One input: a str or a flat sequence of atoms (str, int, float, bool, Fraction)."""
    where = f"input {index}"
    if not isinstance(sequence, _SEQUENCES):
        raise RaspTypeError(f"{function}: {where} is not a sequence (a str or a list of "
                            f"tokens): {shown(sequence)}")
    if isinstance(sequence, np.ndarray):
        if sequence.ndim != 1:
            raise RaspTypeError(f"{function}: {where} must be a 1-D array of tokens, not one "
                                f"of shape {sequence.shape}")
        _array_atoms(function, sequence, where)
    elif not isinstance(sequence, str):
        _atoms(function, sequence, where)
    return sequence


def _array_atoms(function: str, array: np.ndarray, where: str) -> None:
    """An array of tokens: a dtype of atoms taken whole, an object array element by element."""
    if array.dtype.kind == "O":
        _atoms(function, array.ravel().tolist(), where)
    elif array.dtype.kind not in _ARRAY_KINDS:
        raise RaspTypeError(f"{function}: {where}: an array of {array.dtype}: tokens are "
                            "str, int, float or bool")


def _atoms(function: str, values: Iterable[Any], where: str) -> None:
    """Each of `values` is a token atom; the common all-str or all-float sequences are
    passed by their types alone."""
    values = list(values)
    if not _plain_atoms(values):
        for position, value in enumerate(values):
            token(function, value, f"{where} element {position}")


def _plain_atoms(values: list) -> bool:
    """Whether `values` are all str, float and bool, or all ints within MAX_INT_BITS (min
    and max run at C speed: a long list of ints is checked in bulk); False says nothing."""
    kinds = set(map(type, values))
    if kinds <= {str, float, bool}:
        return True
    return kinds == {int} and max(abs(max(values)), abs(min(values))).bit_length() <= MAX_INT_BITS


def token(function: str, value: Any, what: str, *, finite: bool = False) -> Any:
    """An atom a program reads (str, int, float, bool, Fraction, or a NumPy scalar of
    those), integers within the CLI's MAX_INT_BITS (rasp_sim/cli/inputs.py), numbers
    finite where `finite` (a vocabulary: NaN and inf are no token values)."""
    atom = value.item() if isinstance(value, np.generic) else value
    if not isinstance(atom, _ATOMS):
        raise RaspTypeError(f"{function}: {what} is {shown(value)}: a token is a str, int, "
                            "float, bool or Fraction")
    if isinstance(atom, (int, Fraction)) and _bits(atom) > MAX_INT_BITS:
        raise RaspTypeError(f"{function}: {what} has {_bits(atom):,} bits, above the limit "
                            f"of {MAX_INT_BITS:,} (rasp_sim.base.limits.MAX_INT_BITS)")
    if finite and isinstance(atom, float) and not math.isfinite(atom):
        raise RaspTypeError(f"{function}: {what} is {atom!r}: token values must be finite")
    return value


def _bits(number: int | Fraction) -> int:
    if isinstance(number, Fraction):
        return max(number.numerator.bit_length(), number.denominator.bit_length())
    return int(number).bit_length()


def text(function: str, value: Any, argument: str) -> str:
    if not isinstance(value, str):
        raise RaspTypeError(f"{function}: {argument} must be a str, not {shown(value)}")
    return value


def optional_text(function: str, value: Any, argument: str) -> str | None:
    return None if value is None else text(function, value, argument)


def flag(function: str, value: Any, argument: str) -> bool:
    """True or False: a truthy dict or "no" is not silently taken for one."""
    if not isinstance(value, (bool, np.bool_)):
        raise RaspTypeError(f"{function}: {argument} must be True or False, not {shown(value)}")
    return bool(value)


def integer(function: str, value: Any, argument: str, minimum: int,
            maximum: int | None = None) -> int:
    if type(value) is not int and (not isinstance(value, numbers.Integral)  # int: no ABC look-up
                                   or isinstance(value, (bool, np.bool_))):
        raise RaspTypeError(f"{function}: {argument} must be an int, not {shown(value)}")
    number = int(value)
    if number < minimum:
        raise RaspTypeError(f"{function}: {argument} must be at least {minimum}, got "
                            f"{_number(number)}")
    if maximum is not None and number > maximum:
        raise RaspTypeError(f"{function}: {argument} must be at most {maximum:,}, got "
                            f"{_number(number)}")
    return number


def option_integer(function: str, value: Any, argument: str, minimum: int,
                   option: Callable[[str], int]) -> int:
    """An int within the bounds of the CLI option whose argparse type is `option`
    (rasp_sim/cli/options.py: sample_count, seed_number, positive), so the API takes the
    numbers the CLI takes."""
    number = integer(function, value, argument, minimum)
    try:
        if number.bit_length() > 64:  # above every option's bound; too long to print whole
            raise argparse.ArgumentTypeError(f"a {number.bit_length():,}-bit integer is "
                                             "too large")
        return option(str(number))
    except argparse.ArgumentTypeError as error:
        raise RaspTypeError(f"{function}: {argument}: {error}") from None


def memory_limit(function: str, value: Any) -> int:
    """A number of bytes, as --memory-limit takes it (up to the CLI's MAX_SIZE)."""
    return integer(function, value, "memory_limit", 1, MAX_SIZE)


def path(function: str, value: Any, argument: str) -> str:
    """A file or folder path: a str or os.PathLike naming a str, neither empty nor holding
    a NUL or a character the file system cannot encode (os.fsencode)."""
    try:
        name = os.fspath(value) if isinstance(value, os.PathLike) else value
    except TypeError:  # an __fspath__ that returns neither str nor bytes
        name = None
    if not isinstance(name, str):
        raise RaspTypeError(f"{function}: {argument} must be a path (a str or pathlib.Path), "
                            f"not {shown(value)}")
    if not name or "\0" in name:
        raise RaspTypeError(f"{function}: {argument} {name!r} is not a path (empty, or a NUL "
                            "character in it)")
    try:
        os.fsencode(name)
    except UnicodeEncodeError:
        raise RaspTypeError(f"{function}: {argument} {name!r} has characters the file "
                            "system cannot encode") from None
    return name


def optional_path(function: str, value: Any, argument: str) -> str | None:
    return None if value is None else path(function, value, argument)


def model_path(function: str, value: Any) -> str:
    """A path to write a model to: its suffix says the format, .npz or .safetensors."""
    name = path(function, value, "path")
    if os.path.splitext(name)[1].lower() not in MODEL_SUFFIXES:
        raise RaspTypeError(f"{function}: path {name!r} must end in .npz or .safetensors "
                            "(the suffix says the format)")
    return name


def scheduler(function: str, value: Any) -> str | None:
    """A Dask scheduler address, as --scheduler takes it (rasp_sim.base.dask_cluster's
    SCHEDULER_ADDRESS: PROTOCOL://HOST:PORT or HOST:PORT)."""
    from .dask_cluster import SCHEDULER_ADDRESS

    if value is None:
        return None
    if not isinstance(value, str) or not SCHEDULER_ADDRESS.fullmatch(value):
        raise RaspTypeError(f"{function}: scheduler must be a Dask scheduler address such as "
                            f"tcp://host:8786, not {shown(value)}")
    return value


def torch_dtype(function: str, value: Any) -> Any:
    """None or a floating torch dtype (the parameters' precision). A torch.dtype exists
    only once torch is imported, so a value that is not one is refused without it."""
    if value is None:
        return None
    is_dtype = type(value).__module__ == "torch" and type(value).__name__ == "dtype"
    if not (is_dtype and value.is_floating_point):
        raise RaspTypeError(f"{function}: dtype must be a floating torch dtype such as "
                            f"torch.float64, not {shown(value)}")
    return value


def torch_device(function: str, value: Any) -> Any:
    """None, or "cpu", "cuda[:N]" or "mps[:N]" (a str or a torch.device) that this
    machine has: torch fails late, or with its own errors, on one it lacks."""
    if value is None:
        return None
    name = str(value) if type(value).__module__ == "torch" else value
    match = TORCH_DEVICE.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise RaspTypeError(f"{function}: device must be 'cpu', 'cuda', 'cuda:N' or 'mps' "
                            f"(a str or torch.device), not {shown(value)}")
    kind, index = match.group(1), int(match.group(2) or 0)
    count = None if kind == "cpu" else _device_count(kind)
    if count is not None and index >= count:
        raise RaspTypeError(f"{function}: device {name!r}: this machine has no such device")
    return value


def _device_count(kind: str) -> int | None:
    """How many `kind` devices torch sees; None without torch (the caller then says that
    torch is needed)."""
    try:
        import torch
    except ImportError:
        return None

    if kind == "cuda":
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    return 1 if torch.backends.mps.is_available() else 0


def number_range(function: str, value: Any, argument: str) -> tuple[float, float]:
    """Two finite real numbers lo <= hi."""
    try:
        low, high = value
        low, high = float(low), float(high)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond floats
        raise RaspTypeError(f"{function}: {argument} must be two numbers (lo, hi), not "
                            f"{shown(value)}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise RaspTypeError(f"{function}: {argument} must be two finite numbers with "
                            f"lo <= hi, got ({low!r}, {high!r})")
    return low, high


def vocabulary(function: str, value: Any) -> list:
    """A str (its characters) or a collection of finite atoms (str, int, float, bool,
    Fraction) of at most MAX_COLLECTION_LENGTH tokens."""
    if isinstance(value, str):
        return list(value)
    if not isinstance(value, (list, tuple, set, frozenset, range, np.ndarray)):
        raise RaspTypeError(f"{function}: vocab must be a str or a list of tokens, not "
                            f"{shown(value)}")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise RaspTypeError(f"{function}: vocab must be a 1-D array, not one of shape "
                            f"{value.shape}")
    if len(value) > MAX_COLLECTION_LENGTH:  # counted before a range is built
        raise RaspTypeError(f"{function}: vocab has {len(value):,} tokens, above the limit "
                            f"of {MAX_COLLECTION_LENGTH:,} (rasp_sim.base.limits."
                            "MAX_COLLECTION_LENGTH)")
    tokens = list(value)
    for entry in tokens:
        token(function, entry, "a vocab entry", finite=True)
    return tokens


def _number(value: int) -> str:
    """An int for a message: a huge one by its size, not its 300,000 digits."""
    bits = value.bit_length()
    return f"{value:,}" if bits <= 64 else f"a {bits:,}-bit integer"


def shown(value: Any) -> str:
    """The type and a short repr of `value` for a message."""
    text = _SHORT.repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


class _ShortRepr(reprlib.Repr):
    """reprlib's bounded repr (a few elements, a few levels), and a huge int by its size:
    repr of 10^6 bits takes a second, and a list of them as long."""

    def repr_int(self, x: int, level: int) -> str:
        return repr(x) if x.bit_length() <= 64 else f"<{x.bit_length():,}-bit int>"


_SHORT = _ShortRepr()
