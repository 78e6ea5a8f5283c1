"""The Dask clusters of rasp_sim/base/dask_cluster.py: the local cluster's workers'
environment, and the probe that refuses a `--scheduler` that is not a Dask scheduler."""
from __future__ import annotations

import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import pytest

from rasp_sim.base import dask_cluster
from rasp_sim.base.dask_cluster import (
    PROBE_SECONDS, ClusterError, _worker_environ, dask_client, probe_scheduler,
)
from rasp_sim.base.freed_memory import MMAP_THRESHOLD, TRIM_THRESHOLD


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


# ------------------------------------------------------------- --scheduler, probed


def _closed_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def _listener(answer: bytes | None) -> Iterator[int]:
    """A TCP server in a thread: each connection gets `answer` after its first bytes, or
    (None) nothing at all, ever."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                peer, _ = server.accept()
            except OSError:  # closed at the end of the test
                return
            if answer is not None:
                with peer:
                    peer.recv(65536)
                    peer.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        server.close()


HTTP_GARBAGE = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nbad request" * 4


@pytest.mark.parametrize("peer, message", [
    ("closed", "unreachable, no connection within"),
    ("http", "not a Dask scheduler, or not one rasp-sim can talk to (MemoryError"),
    ("silent", "no answer as a Dask scheduler within"),
])
def test_a_scheduler_address_that_is_not_dask_is_refused_within_the_timeout(peer, message):
    """Before the probe, a silent listener hung Dask's Client forever and an HTTP server
    made it allocate 3 EiB ("out of memory"); each is a ClusterError in PROBE_SECONDS."""
    pytest.importorskip("distributed")
    with _listener(None if peer == "silent" else HTTP_GARBAGE) as port:
        if peer == "closed":
            port = _closed_port()
        start = time.monotonic()
        with pytest.raises(ClusterError, match=re.escape(message)):
            probe_scheduler(f"tcp://127.0.0.1:{port}", "pip install dask")
        assert time.monotonic() - start < PROBE_SECONDS + 1.5


def test_a_real_scheduler_passes_the_probe_and_a_worker_does_not():
    pytest.importorskip("distributed")
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0", protocol="tcp://", host="127.0.0.1") as cluster:
        probe_scheduler(cluster.scheduler_address, "pip install dask")
        worker = next(iter(cluster.workers.values())).address
        with pytest.raises(ClusterError, match="not a Dask scheduler .it answers as Worker"):
            probe_scheduler(worker, "pip install dask")


@pytest.mark.parametrize("address", ["not an address", 8786, None])
def test_a_scheduler_that_is_no_address_is_refused_without_connecting(address):
    with pytest.raises(ClusterError, match="expected a Dask scheduler address"):
        probe_scheduler(address, "pip install dask")


def test_a_scheduler_address_of_an_unknown_protocol_is_refused_as_such():
    pytest.importorskip("distributed")
    with pytest.raises(ClusterError, match="unknown address scheme 'foo'"):
        probe_scheduler("foo://127.0.0.1:8786", "pip install dask")

