"""The benchmark keeps working: generation matches the app's model, and every answer checks.
The catalog and the directory here; the other scenarios in test_bench_*.py, so that they run
beside each other on the suite's processes."""

from __future__ import annotations

from tests.bench_run import assert_reported, run_bench


def test_the_catalog_scenario_runs_on_a_small_catalog(pg_admin_url: str) -> None:
    report = run_bench(pg_admin_url, "catalog")
    assert_reported(
        report,
        "entity page",
        "filtered list",
        "sorted list",
        "several kinds sorted",
        "search 'chekout'",
        "facets",
    )


def test_the_directory_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(run_bench(pg_admin_url, "ldap"), "no-change resync")


def test_the_compute_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(run_bench(pg_admin_url, "compute"), "team workloads", "workload page")
