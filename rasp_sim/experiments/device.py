"""Where training runs: the JAX device for `--device cpu|gpu` (default: a GPU if JAX sees
one, else the CPU), and the process settings that must precede JAX's first use.

Training is float32 on both: the parameters are float32, and on a GPU float32 matrix
products are kept at full float32 precision (JAX's default there is TensorFloat-32, which
rounds the inputs to 10-bit mantissas); the CPU computes float32 products either way.
"""
from __future__ import annotations

import os

# At most 2 compute threads (shared 2-core machines), and no preallocation of 75% of the
# GPU per process, so that several Dask workers can share one GPU. Both are read when JAX
# first initialises a backend, so this module is imported before anything touches JAX.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402

from .errors import ExperimentError  # noqa: E402

DEVICES = ("cpu", "gpu")


def _gpus() -> list:
    # jax.devices(platform) raises RuntimeError when no backend of that platform is
    # installed or initialises (a CPU-only jaxlib, or no CUDA driver): that means no GPU.
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


def resolve_device(name: str | None) -> str:
    """The platform to train on: `name` ("cpu" or "gpu"), or None for the best available;
    an ExperimentError, before any work, when a GPU is asked for and JAX sees none."""
    if name is None:
        return "gpu" if _gpus() else "cpu"
    if name not in DEVICES:
        raise ExperimentError(f"device: unknown device {name!r}; known: {', '.join(DEVICES)}")
    if name == "gpu" and not _gpus():
        raise ExperimentError(
            f"device: --device gpu, but JAX {jax.__version__} sees no GPU (its devices: "
            f"{', '.join(sorted({d.platform for d in jax.devices()}))}); install JAX with CUDA "
            f"(pip install '.[gpu]') on a machine with an NVIDIA GPU and driver, or use "
            f"--device cpu")
    return name


def device(name: str | None) -> "jax.Device":
    """The first JAX device of platform `name`, or of the best one for None (checked by
    resolve_device)."""
    return jax.devices(resolve_device(name))[0]


def describe(dev: "jax.Device") -> dict:
    """What a result records about where it ran: platform ("cpu", "gpu") and device kind."""
    return {"platform": dev.platform, "kind": dev.device_kind}


def full_float32(fn, dev: "jax.Device"):
    """`fn` tracing its matrix products at full float32 precision on a GPU; unchanged on
    the CPU (whose float32 products are full precision already), so CPU results stay
    bit for bit what they were."""
    if dev.platform != "gpu":
        return fn

    def traced(*args):
        with jax.default_matmul_precision("float32"):
            return fn(*args)
    return traced
