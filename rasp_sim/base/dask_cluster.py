"""A Dask client for parallel work: a local cluster of single-threaded worker processes,
or an existing scheduler. Used by `rasp-sim experiment` sweeps and by exhaustive proofs
(`rasp-sim compile/verify --exhaustive`); Dask is the `train`/`compile` extras' dependency
and is imported only here, when a cluster is asked for."""
from __future__ import annotations

import logging
import re
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from .errors import RaspError
from .freed_memory import child_environment, user_has_settings
from .interrupts import deferred_interrupts

# PROTOCOL://HOST:PORT or HOST:PORT; HOST may be a name, an IPv4 or a bracketed IPv6 address
SCHEDULER_ADDRESS = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?(?:\[[0-9a-fA-F:.]+\]|[\w.-]+):\d{1,5}")
# How long a scheduler address may take to answer as a Dask scheduler before it is refused
# (connect, Dask's handshake and one identity call); a live scheduler answers in
# milliseconds.
PROBE_SECONDS = 5.0


class ClusterError(RaspError):
    """Dask is missing, or the scheduler cannot be reached or is not a Dask scheduler."""

    kind = "cluster error"


def probe_scheduler(address: object, install_hint: str,
                    seconds: float = PROBE_SECONDS) -> None:
    """Refuse, before any work, a scheduler address that is not a Dask scheduler answering
    within `seconds`: nothing listening, a port that speaks another protocol, or one that
    never answers. Dask's own Client waits forever for a silent peer's handshake and, from
    an HTTP server, reads a length of 3 EiB and runs out of memory, so the probe is Dask's
    low-level connect and one `identity` call, in a thread of its own that is abandoned
    when the time is up."""
    if not isinstance(address, str) or not SCHEDULER_ADDRESS.fullmatch(address):
        raise ClusterError(f"scheduler {address!r}: expected a Dask scheduler address such "
                           "as tcp://host:8786 (PROTOCOL://HOST:PORT or HOST:PORT)")
    try:
        from distributed.comm.addressing import parse_address
        from distributed.comm.registry import get_backend
    except ImportError:
        raise ClusterError(f"parallel work runs on Dask, which is not installed: "
                           f"{install_hint}") from None
    try:
        get_backend(parse_address(address)[0])
    except (ValueError, ImportError) as error:  # an unknown protocol, or one not installed
        raise ClusterError(f"scheduler {address}: {error}") from None
    outcome: list[Any] = []
    prober = threading.Thread(target=_identify_into, args=(address, seconds, outcome),
                              daemon=True, name="rasp-sim scheduler probe")
    prober.start()
    prober.join(seconds + 1.0)  # Dask's timeouts end it first; this is a backstop
    _judge(address, seconds, outcome[0] if outcome else TimeoutError())


def _identify_into(address: str, seconds: float, outcome: list[Any]) -> None:
    """What the peer at `address` answers to Dask's `identity` call (or the exception),
    appended to `outcome`. Its own event loop: the caller may be inside one (Jupyter)."""
    import asyncio

    try:
        outcome.append(asyncio.run(asyncio.wait_for(_identify(address, seconds), seconds)))
    except BaseException as error:  # noqa: BLE001 (judged in the caller's thread)
        outcome.append(error)


async def _identify(address: str, seconds: float) -> Any:
    from distributed.comm import connect
    from distributed.security import Security

    # Half the time to connect (Dask retries a refused one until then), so that a port
    # nobody listens on is told apart from a peer that accepts and never answers.
    comm = await connect(address, timeout=seconds / 2,
                         **Security().get_connection_args("client"))
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def _judge(address: str, seconds: float, answer: Any) -> None:
    """A ClusterError unless `answer` is a Dask scheduler's identity."""
    import asyncio

    # TimeoutError before OSError, of which it is a subclass; asyncio's own before 3.11
    if isinstance(answer, (TimeoutError, asyncio.TimeoutError, asyncio.CancelledError)):
        raise ClusterError(f"scheduler {address}: no answer as a Dask scheduler within "
                           f"{seconds:g} s (something listens there, but not a Dask "
                           "scheduler, or it is stalled)")
    if isinstance(answer, OSError):  # refused, unreachable, closed, timed out connecting
        raise ClusterError(f"scheduler {address}: unreachable, no connection within "
                           f"{seconds / 2:g} s ({_root_cause(answer)})")
    if isinstance(answer, BaseException):  # MemoryError from a length that is none, ...
        raise ClusterError(f"scheduler {address}: not a Dask scheduler, or not one rasp-sim "
                           f"can talk to ({type(answer).__name__}: {str(answer)[:200]})")
    kind = answer.get("type") if isinstance(answer, dict) else None
    if kind != "Scheduler":
        raise ClusterError(f"scheduler {address}: not a Dask scheduler (it answers as "
                           f"{kind or 'something else'})")


def _root_cause(error: BaseException) -> str:
    """The first error of a chain that says something (Dask wraps "connection refused"
    in two of its own)."""
    said = str(error)
    while error.__cause__ is not None:
        error = error.__cause__
        said = str(error) or said
    return said


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
    # Ctrl-C while a cluster starts is held until it has started, so that it can be
    # closed: interrupted half-way, its worker processes are left starting and Dask's exit
    # handler fails on them with a traceback.
    with deferred_interrupts() as interrupted:
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
    those of the CLI (rasp_sim/base/freed_memory.py) unless the user set their own.

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
