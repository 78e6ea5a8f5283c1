"""Fixed universal transformers: build one, embed a target model in it, verify.

The names below are the package's public surface, the one the CLI uses; each is imported
from its submodule on first use (PEP 562). All of them need NumPy only, never tracr or jax.
"""
from __future__ import annotations

from .._exports import Table, lazy_getattr

_TABLE: Table = {
    "budget": ("rasp_sim.compiler.universal.budget", None),  # the memory estimates, a module
    "as_target": ("rasp_sim.compiler.universal.compiled", "as_target"),
    "is_compiled": ("rasp_sim.compiler.universal.compiled", "is_compiled"),
    "shape_of": ("rasp_sim.compiler.universal.compiled", "shape_of"),
    "embed_target": ("rasp_sim.compiler.universal.embed", "embed"),
    "check_domain_size": ("rasp_sim.compiler.universal.exhaustive", "check_domain_size"),
    "check_every_input": ("rasp_sim.compiler.universal.exhaustive", "check_every_input"),
    "check_expected_error": ("rasp_sim.compiler.universal.exhaustive", "check_expected_error"),
    "expected_error": ("rasp_sim.compiler.universal.exhaustive", "expected_error"),
    "build_random": ("rasp_sim.compiler.universal.gaussian", "build_random"),
    "constraint_count": ("rasp_sim.compiler.universal.paths", "constraint_count"),
    "size_report": ("rasp_sim.compiler.universal.report", "size_report"),
    "build_sparse": ("rasp_sim.compiler.universal.sparse", "build_sparse"),
    "check_tied": ("rasp_sim.compiler.universal.spec", "check_tied"),
    "read_spec": ("rasp_sim.compiler.universal.spec", "read_spec"),
    "Shape": ("rasp_sim.compiler.universal.target", "Shape"),
    "random_target": ("rasp_sim.compiler.universal.target", "random_target"),
    "verify_embedding": ("rasp_sim.compiler.universal.verify", "verify"),
}

__all__ = list(_TABLE)
__getattr__ = lazy_getattr(__name__, _TABLE)
