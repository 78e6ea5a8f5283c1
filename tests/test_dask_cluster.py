"""The local Dask cluster of `--workers` (rasp_sim/dask_cluster.py): its workers'
environment."""
from __future__ import annotations

import os

import pytest

from rasp_sim import dask_cluster
from rasp_sim.dask_cluster import _worker_environ, dask_client
from rasp_sim.freed_memory import MMAP_THRESHOLD, TRIM_THRESHOLD


def test_workers_keep_freed_memory_instead_of_faulting_it_back_per_block(monkeypatch):
    """Dask's 64 KiB trim threshold is raised (it made every array above 128 KiB fresh
    memory: a third of a large proof's CPU in page faults); its thread limits stay; a
    user's own malloc settings are left alone."""
    pytest.importorskip("distributed")
    monkeypatch.setattr(dask_cluster, "user_has_settings", lambda: False)
    environ = _worker_environ()
    assert environ["MALLOC_TRIM_THRESHOLD_"] == TRIM_THRESHOLD
    assert environ["MALLOC_MMAP_THRESHOLD_"] == MMAP_THRESHOLD
    assert environ["OMP_NUM_THREADS"] == 1 and environ["OPENBLAS_NUM_THREADS"] == 1
    monkeypatch.setattr(dask_cluster, "user_has_settings", lambda: True)
    assert _worker_environ()["MALLOC_TRIM_THRESHOLD_"] == 65536  # Dask's own


@pytest.mark.slow
def test_a_local_worker_runs_with_that_environment(monkeypatch):
    pytest.importorskip("distributed")
    for name in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(name, raising=False)
    with dask_client(1, None, "pip install dask") as client:
        seen = client.submit(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                      os.environ.get("MALLOC_MMAP_THRESHOLD_"))).result()
    assert seen == (str(TRIM_THRESHOLD), str(MMAP_THRESHOLD))
