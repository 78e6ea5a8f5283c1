"""The local Dask cluster of `--workers` (rasp_sim/dask_cluster.py): its workers'
environment."""
from __future__ import annotations

import os

import pytest

from rasp_sim.dask_cluster import _worker_environ, dask_client


def test_workers_keep_freed_memory_instead_of_faulting_it_back_per_block():
    """Dask's 64 KiB trim threshold is raised (it made every array above 128 KiB fresh
    memory: a third of a large proof's CPU in page faults); its thread limits stay."""
    pytest.importorskip("distributed")
    environ = _worker_environ()
    assert environ["MALLOC_TRIM_THRESHOLD_"] == 1 << 30
    assert environ["MALLOC_MMAP_THRESHOLD_"] == 1 << 29
    assert environ["OMP_NUM_THREADS"] == 1 and environ["OPENBLAS_NUM_THREADS"] == 1


@pytest.mark.slow
def test_a_local_worker_runs_with_that_environment():
    pytest.importorskip("distributed")
    with dask_client(1, None, "pip install dask") as client:
        seen = client.submit(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                      os.environ.get("MALLOC_MMAP_THRESHOLD_"))).result()
    assert seen == (str(1 << 30), str(1 << 29))
