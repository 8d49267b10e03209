"""The benchmark's serving and execution scenarios keep working (see test_bench.py)."""

from __future__ import annotations

from tests.bench_run import assert_reported, run_bench


def test_the_serving_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(
        run_bench(pg_admin_url, "serving"),
        "floor (Starlette, same bytes)",
        "persisted GET, response cache",
        "persisted GET, L1 warm",
        "persisted GET, L1 warm, generic",
        "at >= 3x the req/s of persisted GET, L1 warm, generic",
        "persisted GET, cold",
        "hot path of the cached persisted GET",
        "count and log: metrics, access log line",
    )


def test_the_execution_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(
        run_bench(pg_admin_url, "execution"),
        "component page",
        "team page",
        "catalog list, 50 rows",
        "target: component page, compiled at least 4x faster than generic",
        "component page, whole request (persisted GET in, bytes out",
        "target: component page, whole request at most 2.5 µs per resolved field",
    )
