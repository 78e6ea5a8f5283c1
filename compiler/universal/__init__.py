"""Fixed universal transformers: build one, embed a target model in it, verify.

The names below are the package's public surface, the one the CLI uses; each is imported
from its submodule on first use (PEP 562). All of them need NumPy only, never tracr or jax.
"""
from __future__ import annotations

from .._exports import Table, lazy_getattr

_TABLE: Table = {
    "budget": ("compiler.universal.budget", None),  # the memory estimates, a module
    "as_target": ("compiler.universal.compiled", "as_target"),
    "is_compiled": ("compiler.universal.compiled", "is_compiled"),
    "shape_of": ("compiler.universal.compiled", "shape_of"),
    "embed_target": ("compiler.universal.embed", "embed"),
    "check_domain_size": ("compiler.universal.exhaustive", "check_domain_size"),
    "check_every_input": ("compiler.universal.exhaustive", "check_every_input"),
    "build_random": ("compiler.universal.gaussian", "build_random"),
    "constraint_count": ("compiler.universal.paths", "constraint_count"),
    "size_report": ("compiler.universal.report", "size_report"),
    "build_sparse": ("compiler.universal.sparse", "build_sparse"),
    "check_tied": ("compiler.universal.spec", "check_tied"),
    "read_spec": ("compiler.universal.spec", "read_spec"),
    "Shape": ("compiler.universal.target", "Shape"),
    "random_target": ("compiler.universal.target", "random_target"),
    "verify_embedding": ("compiler.universal.verify", "verify"),
}

__all__ = list(_TABLE)
__getattr__ = lazy_getattr(__name__, _TABLE)
