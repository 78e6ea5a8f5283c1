"""Scopes: nested environments with reserved names and `load`'s export rule.

The original keeps one chain of environments (docs/language.md):

- the *base* environment holds the base values (5.1), the standard library (5.2) and
  `tokens`; every loaded file runs in a fresh child of it;
- the *top* environment (console or main program) is a child of the base whose
  reserved names also include the library names;
- function calls and comprehensions run in fresh children of the defining (resp.
  current) environment, where only the base values are reserved.

A file's environment *exports* each public binding to the environment that loaded it,
at the moment the binding is made (so a failing export still leaves the file's own
binding in force).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from ..base.errors import RaspNameError

# Assigning these fails everywhere (5.1). `range`, `zip`, `len`, `get` are reserved but
# unbound; `out` is rebound by the interpreter itself (6.14).
BASE_VALUE_NAMES = (
    "tokens_str", "tokens_int", "tokens_float", "tokens_bool", "tokens_asis", "indices",
    "True", "False",
)
BASE_RESERVED = frozenset(BASE_VALUE_NAMES + ("out", "range", "zip", "len", "get"))


def is_exported(name: str) -> bool:
    """Whether a binding made in a loaded file is copied to its loader (6.13)."""
    return not name.startswith("_") and name != "out"


class FailedBinding:
    """What a name holds after the statement that would have bound it failed, in a run
    that goes on past failing statements (`rasp_sim.language.run_session`): using the name fails,
    naming that statement, instead of silently finding an older value. `failure` is the
    runner's record of the failed statement, handed on to the error."""

    def __init__(self, span: Any, failure: Any):
        self.span = span
        self.failure = failure

    def used(self, name: str) -> "FailedNameError":
        return FailedNameError(f"{name} has no value: the statement at {self.span} that "
                               "binds it failed", self.failure)


class FailedNameError(RaspNameError):
    """A use of a `FailedBinding`: `failure` says which failed statement it goes back to."""

    def __init__(self, message: str, failure: Any):
        super().__init__(message)
        self.failure = failure


class Environment:
    """One scope. `lookup` walks to the parents; `bind` binds here (and exports)."""

    def __init__(
        self,
        parent: "Environment | None" = None,
        *,
        name: str = "console",
        reserved: Iterable[str] = BASE_RESERVED,
        exporter: "Environment | None" = None,
        on_bind: Callable[[str, Any], None] | None = None,
    ):
        self.parent = parent
        self.name = name  # the original's "creator" of functions defined here
        self.reserved = frozenset(reserved)
        self.exporter = exporter
        self.on_bind = on_bind  # notified of each successful binding in this scope
        self.variables: dict[str, Any] = {}

    def child(self, name: str | None = None) -> "Environment":
        """A nested scope (function call, comprehension) seeing this one."""
        return Environment(self, name=self.name if name is None else name)

    def lookup(self, name: str) -> Any:
        """The value bound to `name`; raises RaspNameError("Undefined variable: x")."""
        env: Environment | None = self
        while env is not None:
            if name in env.variables:
                value = env.variables[name]
                if isinstance(value, FailedBinding):
                    raise value.used(name)
                return value
            env = env.parent
        raise RaspNameError(f"Undefined variable: {name}")

    def is_bound(self, name: str) -> bool:
        env: Environment | None = self
        while env is not None:
            if name in env.variables:
                return True
            env = env.parent
        return False

    def bind(self, name: str, value: Any) -> None:
        """Bind `name` here; a public name in a loaded file is exported to its loader."""
        if name in self.reserved:
            raise RaspNameError(f"Cannot set reserved name: {name}")
        self.variables[name] = value
        if self.on_bind is not None:
            self.on_bind(name, value)
        if self.exporter is not None and is_exported(name):
            self.exporter.bind(name, value)

    def bind_failed(self, name: str, failed: FailedBinding) -> None:
        """Mark `name` as left without a value by a failed statement, here and (a public
        name) in the loaders, except where it is reserved: a reserved name is never
        rebound, so it keeps its value."""
        if name in self.reserved:
            return
        self.variables[name] = failed
        if self.exporter is not None and is_exported(name):
            self.exporter.bind_failed(name, failed)

    def set_out(self, value: Any) -> None:
        """Rebind `out` (6.14): not an assignment, so no reserved check and no export."""
        self.variables["out"] = value
