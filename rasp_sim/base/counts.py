"""The ranges of counts and sizes that the command line's options and the Python API's
arguments share (argparse types, which `rasp_sim.base.api_arguments` also applies to
keyword arguments), defined once below both."""
from __future__ import annotations

import argparse
import math
from typing import Callable

# The largest size the memory options accept: beyond any machine's address space.
MAX_SIZE = 2**63 - 1


def _integer(minimum: int, what: str, maximum: int = 2**31 - 1) -> Callable[[str], int]:
    """An argparse type: an integer from minimum to maximum. Every count has a maximum, so
    that no count option can ask for work or memory the machine does not have."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: expected {what}")
        if value > maximum:
            raise argparse.ArgumentTypeError(
                f"invalid value {text!r}: expected {what} of at most {maximum:,}")
        return value
    return parse


positive = _integer(1, "a positive integer")
# NumPy's and JAX's generators take seeds of 32 bits and more; 2^32 - 1 fits every one.
seed_number = _integer(0, "a seed, an integer >= 0", 2**32 - 1)
# Random inputs a validation draws: each is run through the interpreter and the model
# (tens of microseconds each), so 10^6 is already minutes of work.
MAX_SAMPLES = 10**6
sample_count = _integer(1, "a positive number of samples", MAX_SAMPLES)


def _real(maximum: float, what: str) -> Callable[[str], float]:
    """An argparse type: a finite number above 0 and at most maximum."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (0 < value <= maximum):  # also refuses nan and inf
            raise argparse.ArgumentTypeError(
                f"invalid value {text!r}: expected {what}, a number above 0 and at most "
                f"{maximum:g}")
        return value
    return parse


# Caps far above any setting that trains (the budgets' learning rates are 1e-4 to 3e-2,
# the embeddings' initial standard deviation 0.02), so that a slip such as 3e2 for 3e-2 is
# refused rather than trained on for an hour.
learning_rate = _real(10.0, "a learning rate")
initial_std = _real(100.0, "a standard deviation")


def length_phase(text: str) -> tuple[int, int]:
    """An argparse type: one phase of a length curriculum, LEN:STEPS (two positive
    integers; the run checks LEN against the task's length and STEPS against its steps)."""
    length, _, steps = text.partition(":")
    try:
        return positive(length), positive(steps)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"invalid phase {text!r}: expected LEN:STEPS, two "
                                         f"positive integers such as 30:3000") from None
