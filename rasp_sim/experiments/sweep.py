"""Many runs: in this process one after another, or on a Dask cluster (local by default,
or an existing scheduler), one run per task. Each run writes <out>/<run name>/result.json
and its checkpoint; `resume` reuses finished runs and continues interrupted ones."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from .checkpoints import CHECKPOINT
from .config import RunConfig
from .errors import ExperimentError
from .results import finished_result, write_result
from .stopping import Interrupted, requested, stop_on_interrupt


def run_one(config: dict, out_dir: str, resume: bool, progress: bool,
            device_name: str | None = None) -> dict:
    """One run on `device_name` (picklable, so a Dask worker can call it); the result dict."""
    from .train import train  # jax loads in the worker, after its thread settings
    run = RunConfig.from_dict(config)
    directory = Path(out_dir) / run.name()
    previous = finished_result(directory, run) if resume else None
    if previous is not None:
        return previous
    result = train(run, directory, resume=resume and (directory / CHECKPOINT).exists(),
                   progress=progress, device_name=device_name)
    write_result(directory, result)
    return result


def sweep(configs: list[RunConfig], out_dir: Path, workers: int = 1,
          scheduler: str | None = None, resume: bool = False, progress: bool = True,
          report: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
          device_name: str | None = None) -> tuple[list[dict], list[str]]:
    """Run every config on `device_name` ("cpu", "gpu", None: the best each process sees);
    (results, failures) where a failure is "run name: message"."""
    jobs = [config.to_dict() for config in configs]
    if workers <= 1 and scheduler is None:
        results, failures = [], []
        with stop_on_interrupt():  # Ctrl-C stops between steps (stopping.py)
            for config, job in zip(configs, jobs):
                if requested():
                    raise Interrupted(f"interrupted before {config.name()} started; "
                                      "continue the sweep with --resume")
                try:
                    results.append(run_one(job, str(out_dir), resume, progress, device_name))
                    report(f"done {config.name()}")
                except Interrupted:
                    raise
                except ExperimentError as error:
                    failures.append(f"{config.name()}: {error.message}")
        return results, failures
    return _dask(configs, jobs, out_dir, workers, scheduler, resume, report, device_name)


def _dask(configs, jobs, out_dir, workers, scheduler, resume, report, device_name):
    from rasp_sim.base.dask_cluster import ClusterError, dask_client

    try:
        with dask_client(workers, scheduler, "install the train extra (pip install "
                         "'rasp-sim[train]') or use --workers 1") as client:
            from dask.distributed import as_completed

            futures = {client.submit(run_one, job, str(out_dir), resume, False, device_name,
                                     pure=False): config
                       for job, config in zip(jobs, configs)}
            results, failures = [], []
            for future in as_completed(futures):
                name = futures[future].name()
                try:
                    results.append(future.result())
                    report(f"done {name} ({len(results) + len(failures)}/{len(jobs)})")
                except ExperimentError as error:
                    failures.append(f"{name}: {error.message}")
                    report(f"failed {name}: {error.message}")
            return results, failures
    except ClusterError as error:  # the sweep's own error kind, as before
        raise ExperimentError(error.message) from None
