"""rasp_sim/base/freed_memory.py: malloc thresholds raised where glibc has them, a user's own
settings left alone."""
from __future__ import annotations

import subprocess
import sys

import pytest

from rasp_sim.base.freed_memory import user_has_settings

# A child process, so the thresholds of the test process stay as they are: it allocates
# and frees a 2 MiB array 200 times and prints the minor page faults that cost.
_FAULTS = """
import resource, sys
import numpy as np
import rasp_sim.base.freed_memory as fm
if sys.argv[1] == "keep":
    assert fm.keep_freed_memory()
def step():
    a = np.ones(1 << 18); b = np.ones(1 << 18); c = a + b; del a, b, c
step()  # the heap grows once
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str, **environ: str) -> int:
    done = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True,
                          text=True, check=True, env={"PATH": "", **environ})
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_kept_memory_is_reused_without_page_faults():
    """The pattern of the engine's operations (arrays above 128 KiB, freed soon after):
    with the thresholds raised, no fresh pages after warm-up (glibc's adaptive defaults
    took 300,000 here: 1,500 a step)."""
    assert _faults("keep") < 50


@pytest.mark.parametrize("environ, has", [
    ({}, False), ({"MALLOC_TRIM_THRESHOLD_": "0"}, True), ({"MALLOC_TOP_PAD_": "1"}, True),
    ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}, True),
    ({"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2"}, False)])
def test_a_users_own_malloc_settings_are_seen(environ, has):
    assert user_has_settings(environ) is has
