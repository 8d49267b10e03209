"""The benchmark's replicas (behind HAProxy) and subscriptions scenarios keep working (see
test_bench.py)."""

from __future__ import annotations

from tests.bench_run import assert_reported, run_bench


def test_the_replicas_scenario_runs(pg_admin_url: str) -> None:
    assert_reported(
        run_bench(pg_admin_url, "replicas"),
        "floor (Starlette behind HAProxy)",
        "3 replicas",
        "capacity (from 1 replica, which has a core to itself)",
        "Redis commands per request by command",
    )


def test_the_subscriptions_scenario_runs(pg_admin_url: str) -> None:
    # --smoke opens 20 subscriptions, half of each kind, in each of the two phases.
    assert_reported(
        run_bench(pg_admin_url, "subscriptions"),
        "with permessage-deflate: 20 subscriptions in place",
        "without permessage-deflate: 20 subscriptions in place",
        "subscriptions: 20 on one replica",
        "target: at most 50 kB a subscription with permessage-deflate",
        "target: an event reaches the last subscriber within 2 s without compression",
    )
