"""The benchmark keeps working: generation matches the app's model, and every answer checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_runs_on_a_small_catalog(pg_admin_url: str) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--entities",
            "3000",
            "--rounds",
            "3",
            "--users",
            "200",
            "--pinapps",
            "300",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        # Every scenario, the replicas behind HAProxy and the subscriptions' two replicas
        # included.
        timeout=720,
        env={**os.environ, "ATRIUM_BENCH_DATABASE_URL": pg_admin_url},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for scenario in (
        "entity page",
        "filtered list",
        "sorted list",
        "several kinds sorted",
        "search 'chekout'",
        "facets",
        "no-change resync",
        "team workloads",
        "workload page",
        "floor (Starlette, same bytes)",
        "persisted GET, response cache",
        "persisted GET, L1 warm",
        "persisted GET, L1 warm, generic",
        "at >= 3x the req/s of persisted GET, L1 warm, generic",
        "persisted GET, cold",
        "hot path of the cached persisted GET",
        "count and log: metrics, access log line",
        "throttled (CPU 4x, Slow 4G), server-rendered",
        "largest contentful paint sooner with SSR",
        # Lighthouse, once on the component page in a short run: its score, weight and assets.
        "target: Lighthouse performance >= 95 on every page: ",
        "what each page transferred by type",
        "/assets/",
        "page, from the page cache",
        "component page",
        "team page",
        "catalog list, 50 rows",
        "target: component page, compiled at least 4x faster than generic",
        "component page, whole request (persisted GET in, bytes out",
        "target: component page, whole request at most 2.5 µs per resolved field",
        "team DORA, 90 days",
        "Atrium POST /hooks/deployments/github",
        "Prometheus: the 5 range queries, one after another",
        "Atrium: metrics panel, uncached",
        "Atrium: metrics panel, metrics cache warm",
        "import with a change hook",
        "to a receiver on 127.0.0.1, after the import, every signature valid",
        # Replicas behind HAProxy: the floor, one to three replicas, the costs per request.
        "floor (Starlette behind HAProxy)",
        "3 replicas",
        "capacity (from 1 replica, which has a core to itself)",
        "Redis commands per request by command",
        # Subscriptions on one replica: memory each, an event's time to the last subscriber.
        "subscriptions: 400 on one replica",
        "target: at most 50 kB a subscription with permessage-deflate",
        "target: an event reaches the last subscriber within 2 s without compression",
    ):
        assert scenario in result.stdout
    # The warm metrics cache answered every cached panel: Prometheus was asked nothing.
    assert "queries sent to Prometheus by the cached requests: 0 " in result.stdout
    assert "scratch database dropped" in result.stdout
