"""Runs the benchmark's scenarios as `make bench` would run them, at their smoke size (``python
-m bench --smoke``: every phase, table and target of a scenario's report, on the least data and
in the fewest rounds): the tests of the benchmark are split in a few modules so that they
spread over the suite's processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ["--smoke"]


def run_bench(pg_admin_url: str, only: str, *, timeout: float = 360) -> str:
    """``python -m bench --only <only> --smoke``; its report, having checked that it
    succeeded."""
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--only", only, *SMOKE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "ATRIUM_BENCH_DATABASE_URL": pg_admin_url},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def assert_reported(report: str, *lines: str) -> None:
    missing = [line for line in lines if line not in report]
    assert not missing, f"{missing} not in:\n{report}"
