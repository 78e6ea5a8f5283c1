"""Lazy public names for a package (PEP 562): the package lists each name with the
submodule it lives in, and that submodule is imported on first use, so importing the
package imports none of them (nor NumPy, tracr or jax through them)."""
from __future__ import annotations

import importlib
from typing import Any, Callable

# public name -> (absolute module, attribute in it; None for the module itself)
Table = dict[str, tuple[str, "str | None"]]


def lazy_getattr(package: str, table: Table) -> Callable[[str], Any]:
    """The module `__getattr__` of `package` that resolves the names of `table`. Other
    names raise AttributeError, so `from package import submodule` still imports it."""

    def __getattr__(name: str) -> Any:
        try:
            module, attribute = table[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        found = importlib.import_module(module)
        return found if attribute is None else getattr(found, attribute)

    return __getattr__
