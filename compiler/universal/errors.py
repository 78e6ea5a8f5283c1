"""The error raised for targets outside the class, bad shapes and unsolvable systems."""
from __future__ import annotations

from rasp_sim.base.errors import RaspError


class UniversalError(RaspError):
    """A target or universal transformer that cannot be used as asked; names the parameter."""

    kind = "universal error"
