"""Which heavy modules a statement imports, in a fresh interpreter (so that modules the
test session already loaded do not count)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = ("jax", "haiku", "tracr", "numba")


def heavy_modules_after(statement: str, folder: Path,
                        modules: tuple[str, ...] = HEAVY) -> list[str]:
    code = f"import sys; {statement}; print(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=folder).stdout.strip()
    return out.split(",") if out else []
