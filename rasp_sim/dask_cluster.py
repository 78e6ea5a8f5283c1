"""A Dask client for parallel work: a local cluster of single-threaded worker processes,
or an existing scheduler. Used by `rasp-sim experiment` sweeps and by exhaustive proofs
(`rasp-sim compile/verify --exhaustive`); Dask is the `train`/`compile` extras' dependency
and is imported only here, when a cluster is asked for."""
from __future__ import annotations

import logging
import re
import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .errors import RaspError

# PROTOCOL://HOST:PORT or HOST:PORT; HOST may be a name, an IPv4 or a bracketed IPv6 address
SCHEDULER_ADDRESS = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?(?:\[[0-9a-fA-F:.]+\]|[\w.-]+):\d{1,5}")


class ClusterError(RaspError):
    """Dask is missing, or the scheduler cannot be reached."""

    kind = "cluster error"


@contextmanager
def dask_client(workers: int, scheduler: str | None, install_hint: str) -> Iterator[Any]:
    """A `dask.distributed.Client` on `scheduler`, or on a new local cluster of `workers`
    processes of one thread each (the tasks themselves are the parallelism), closed (with
    the cluster) when the block ends. `install_hint` says how to get Dask."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ClusterError(f"parallel work runs on Dask, which is not installed: "
                           f"{install_hint}") from None
    cluster = client = None
    with _deferred_interrupts() as interrupted:
        if scheduler is None:
            # ":0": any free port, so a second cluster on the machine does not warn;
            # workers' logs silenced: a closing cluster logs connection tracebacks a user
            # need not see, and a task that fails raises through its future anyway
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=logging.CRITICAL)
        try:
            client = Client(scheduler if scheduler is not None else cluster)
        except (OSError, ValueError) as error:  # no scheduler there, or none Dask can reach
            if cluster is not None:
                cluster.close()
            raise ClusterError(f"scheduler {scheduler}: cannot connect ({error})") from None
    try:
        if interrupted:
            raise KeyboardInterrupt
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@contextmanager
def _deferred_interrupts() -> Iterator[list[bool]]:
    """Ctrl-C while a cluster starts is held until it has started (the list yielded is then
    non-empty), so that it can be closed: interrupted half-way, its worker processes are
    left starting and Dask's exit handler fails on them with a traceback."""
    seen: list[bool] = []
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        yield seen
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(True))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)
