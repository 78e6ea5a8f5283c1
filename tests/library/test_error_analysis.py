"""Smoke test of benchmarks/error_analysis.py at the smallest size: it runs, writes its
table, and the table shows what the error figure claims: gathers exact, exact mode
exact, our softmax at rounding level, the authors' fixed base far off."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_error_analysis_table(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "error_analysis.py"), "--sizes", "2",
         "--samples", "3", "--exact-sizes", "2", "--exact-samples", "1", "--out", str(tmp_path),
         "--no-plot"],
        check=True, capture_output=True, text=True, timeout=300,
    )
    rows = {}
    for line in (tmp_path / "error_analysis.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[1][:1].isdigit():
            rows[cells[0]] = cells[1:]
    assert rows["transpose"] == ["0.0e+00", "0.0e+00", "0"]
    for name in ("matmul", "inverse (n x n)", "U without softmax"):
        assert rows[name][2] == "0"  # exact mode: zero error
    assert float(rows["softmax"][0]) < 1e-15
    assert float(rows["U"][0]) < 1e-14
    assert float(rows["softmax 2.718^x (authors)"][0]) > 1e-6
    assert float(rows["softmax 2.73^x (authors)"][0]) > float(rows["softmax 2.718^x (authors)"][0])
