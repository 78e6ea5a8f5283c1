"""Keep freed memory in the process for reuse instead of returning it to the OS at once.

The engine and the compiled forward allocate arrays of a few hundred KiB to tens of MiB
per operation and free them soon after. glibc's malloc gives each allocation above a
threshold its own mapping and hands back freed memory at the top of the heap above
another; memory it hands back is fresh again when next used, and fresh memory costs a
page fault per 4 KiB at first touch (about 5-30 us each on the 2-core development
machine). With glibc's own adaptive thresholds the interpreter's `reverse` at n = 64 took
1,448 faults per batch of 10,000 inputs, 0.93 us per input, and 0.27 us with the
thresholds below (benchmarks/interpreter.py; docs/benchmarks.md); Dask's workers, which
set the trim threshold to 64 KiB, spent a third of a 10^7-input proof's CPU in faults.

So the CLI (`rasp_sim.cli.main`) and the local Dask cluster's workers keep up to
TRIM_THRESHOLD of freed heap and serve allocations below MMAP_THRESHOLD from it. A Python
session may call `keep_freed_memory()` itself. A process keeps at most its own peak.
Only glibc has these settings; elsewhere this does nothing. A user's own MALLOC_*_ or
glibc.malloc tunables win: then nothing is changed.
"""
from __future__ import annotations

import ctypes
import os
from typing import Mapping

TRIM_THRESHOLD = 256 << 20
# glibc's default ceiling for its adaptive threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
# systems): every glibc accepts it; an array above it is large enough that its page
# faults are a small part of the work done on it.
MMAP_THRESHOLD = 32 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters, from glibc's malloc.h
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_")


def user_has_settings(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether `environ` sets glibc malloc's thresholds itself."""
    return (any(name in environ for name in _USER_SETTINGS)
            or "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""))


def keep_freed_memory() -> bool:
    """Raise this process's malloc thresholds (glibc only); whether they were set."""
    if user_has_settings():
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, Windows)
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
                and mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def child_environment() -> dict[str, int]:
    """The same thresholds as environment variables, for worker processes."""
    return {"MALLOC_TRIM_THRESHOLD_": TRIM_THRESHOLD, "MALLOC_MMAP_THRESHOLD_": MMAP_THRESHOLD}
