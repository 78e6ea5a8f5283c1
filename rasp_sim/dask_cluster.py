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
from .freed_memory import child_environment, user_has_settings

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
        import dask
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
            with dask.config.set({"distributed.nanny.pre-spawn-environ": _worker_environ()}):
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                       processes=True, dashboard_address=":0",
                                       silence_logs=logging.CRITICAL)
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


def _worker_environ() -> dict[str, Any]:
    """The environment Dask gives its worker processes, with glibc malloc's thresholds
    those of the CLI (rasp_sim/freed_memory.py) unless the user set their own.

    Dask sets the trim threshold to 64 KiB, so that workers hand freed memory back to the
    OS at once; an explicit threshold also turns off glibc's adaptive choice of which
    allocations get a mapping of their own, so every array above 128 KiB was fresh
    memory, a page fault per 4 KiB at first touch. A proof chunk's forward allocates and
    frees such arrays per block: the 10^7-input proof spent 29 s of system time in 10.8M
    faults against 46 s of user time."""
    import dask

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    if not user_has_settings():
        environ.update(child_environment())
    return environ


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
