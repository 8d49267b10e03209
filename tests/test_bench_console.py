"""The benchmark's console scenario keeps working (see test_bench.py): Chromium, throttled, and
Lighthouse once on the component page in a short run (its score, weight and assets)."""

from __future__ import annotations

from tests.bench_run import assert_reported, run_bench


def test_the_console_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(
        run_bench(pg_admin_url, "console"),
        "throttled (CPU 4x, Slow 4G), server-rendered",
        "largest contentful paint sooner with SSR",
        "target: Lighthouse performance >= 95 on every page: ",
        "what each page transferred by type",
        "/assets/",
        "page, from the page cache",
    )
