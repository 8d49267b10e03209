"""The benchmark's deployments, observability and change-event scenarios keep working (see
test_bench.py)."""

from __future__ import annotations

from tests.bench_run import assert_reported, run_bench


def test_the_deployments_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(
        run_bench(pg_admin_url, "deployments"),
        "component page",
        "team DORA, 90 days",
        "Atrium POST /hooks/deployments/github",
    )


def test_the_observability_scenario_runs(pg_admin_url: str) -> None:
    report = run_bench(pg_admin_url, "observability")
    assert_reported(
        report,
        "Prometheus: the 5 range queries, one after another",
        "Atrium: metrics panel, uncached",
        "Atrium: metrics panel, metrics cache warm",
    )
    # The warm metrics cache answered every cached panel: Prometheus was asked nothing.
    assert "queries sent to Prometheus by the cached requests: 0 " in report


def test_the_change_events_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(
        run_bench(pg_admin_url, "changes"),
        "import with a change hook",
        "to a receiver on 127.0.0.1, after the import, every signature valid",
    )
