"""The error every bad experiment request raises (unknown task, too large, diverged...)."""
from __future__ import annotations

from rasp_sim.base.errors import RaspError


class ExperimentError(RaspError):
    """An experiment that cannot run as asked; the message names the setting and the fix."""

    kind = "experiment error"
