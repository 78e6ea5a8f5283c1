"""rasp-sim's compiler: RASP programs to transformer weights (tracr_backend/), the weights
file format, and fixed universal transformers (universal/, its own surface).

The names below are the package's public surface, the one the CLI uses. Each is imported
from its submodule on first use (PEP 562), so `import rasp_sim.compiler` imports neither NumPy-heavy
modules nor tracr or jax; `tracr_driver` (compile and verify, compiler/tracr_backend/
driver.py) imports tracr when first used.
"""
from __future__ import annotations

from ._exports import Table, lazy_getattr

_TABLE: Table = {
    "tracr_driver": ("rasp_sim.compiler.tracr_backend.driver", None),
    "compile_info": ("rasp_sim.compiler.tracr_backend.runtime", "compile_info"),
    "load_compiled": ("rasp_sim.compiler.tracr_backend.runtime", "load_compiled"),
    "run_weights": ("rasp_sim.compiler.tracr_backend.runtime", "run_weights"),
    "WeightsError": ("rasp_sim.compiler.weights", "WeightsError"),
    "load_weights": ("rasp_sim.compiler.weights", "load"),
    "save_weights": ("rasp_sim.compiler.weights", "save"),
    "in_file": ("rasp_sim.compiler.weights_format", "in_file"),
    "NpyFile": ("rasp_sim.compiler.weights_files", "NpyFile"),
    "Transformer": ("rasp_sim.compiler.weights", "Transformer"),
    "AttentionBlock": ("rasp_sim.compiler.weights", "AttentionBlock"),
    "as_dense": ("rasp_sim.compiler.weights", "as_dense"),
}

__all__ = list(_TABLE)
__getattr__ = lazy_getattr(__name__, _TABLE)
