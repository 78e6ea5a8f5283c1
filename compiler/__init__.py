"""rasp-sim's compiler: RASP programs to transformer weights (tracr_backend/), the weights
file format, and fixed universal transformers (universal/, its own surface).

The names below are the package's public surface, the one the CLI uses. Each is imported
from its submodule on first use (PEP 562), so `import compiler` imports neither NumPy-heavy
modules nor tracr or jax; `tracr_driver` (compile and verify, compiler/tracr_backend/
driver.py) imports tracr when first used.
"""
from __future__ import annotations

from ._exports import Table, lazy_getattr

_TABLE: Table = {
    "tracr_driver": ("compiler.tracr_backend.driver", None),
    "compile_info": ("compiler.tracr_backend.runtime", "compile_info"),
    "load_compiled": ("compiler.tracr_backend.runtime", "load_compiled"),
    "run_weights": ("compiler.tracr_backend.runtime", "run_weights"),
    "WeightsError": ("compiler.weights", "WeightsError"),
    "load_weights": ("compiler.weights", "load"),
    "save_weights": ("compiler.weights", "save"),
    "in_file": ("compiler.weights_format", "in_file"),
    "NpyFile": ("compiler.weights_files", "NpyFile"),
}

__all__ = list(_TABLE)
__getattr__ = lazy_getattr(__name__, _TABLE)
