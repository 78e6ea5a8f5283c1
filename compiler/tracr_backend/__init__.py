"""Compiling RASP programs to transformer weights through tracr (docs/compiler.md).

Importing this package does not import tracr or jax: `run_weights` needs only NumPy.
The compiler itself is `compiler.tracr_backend.driver.compile_program` (tracr,
jax and dm-haiku, the `compile` extra).
"""

from .runtime import run_weights

__all__ = ["run_weights"]
