"""Debian's Prometheus for the observability scenario, its history backfilled with ``promtool tsdb
create-blocks-from openmetrics``: one service over the last ``span`` seconds at 15 s
resolution, ``http_requests_total{service,code}`` for 200 and 500 and
``http_request_duration_seconds_bucket{service,le}``, Prometheus's default buckets and +Inf as
cumulative counters; the rate follows the day, errors and latency rise in an incident. The
same recipe as the tests' server (tests/prometheus.py), kept here because the benchmark does
not import from tests/.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.harness import BenchFailure
from bench.harness.host import free_port
from bench.harness.process import Child, answers, spawn

__all__ = ["RESOLUTION", "SERVICE", "RunningPrometheus", "history", "running_prometheus"]

SERVICE: Final = "checkout"
RESOLUTION: Final = 15  # seconds between backfilled samples
BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
READY_WITHIN_S: Final = 30.0


def history(span: int, seed: int, now: int) -> tuple[str, int]:
    """OpenMetrics text of one service's requests and latency histogram over ``span`` seconds:
    every series a counter (``histogram_quantile`` and ``rate`` read bucket counters alike)."""
    rng = random.Random(seed)
    times = range(now - span, now - RESOLUTION + 1, RESOLUTION)
    incident = now - span * 2 // 5  # twenty minutes of errors and slow requests
    codes = {"200": 0.0, "500": 0.0}
    buckets = dict.fromkeys([*(f"{le:g}" for le in BUCKETS), "+Inf"], 0.0)
    lines: dict[str, list[str]] = {}
    for at in times:
        day = math.sin(2 * math.pi * (at % 86_400) / 86_400)
        rate = 40.0 * (1 + 0.5 * day) * rng.uniform(0.9, 1.1)
        hit = incident <= at < incident + 1200
        errors = (0.08 if hit else 0.01) * rng.uniform(0.5, 1.5)
        median = 0.06 * (1 + 0.3 * day) * (3.0 if hit else 1.0)
        requests = rate * RESOLUTION
        codes["200"] += round(requests * (1 - errors))
        codes["500"] += round(requests * errors)
        for le in BUCKETS:  # log-normal latencies, sigma 0.6
            share = 0.5 * (1 + math.erf(math.log(le / median) / (0.6 * math.sqrt(2))))
            buckets[f"{le:g}"] += round(requests * share)
        buckets["+Inf"] += round(requests)
        for code, value in codes.items():
            key = f'http_requests_total{{service="{SERVICE}",code="{code}"}}'
            lines.setdefault(key, []).append(f"{key} {value:.0f} {at}")
        for bound, value in buckets.items():
            key = f'http_request_duration_seconds_bucket{{service="{SERVICE}",le="{bound}"}}'
            lines.setdefault(key, []).append(f"{key} {value:.0f} {at}")
    text = []
    for family in ("http_request_duration_seconds_bucket", "http_requests_total"):
        text.append(f"# TYPE {family} counter")
        for key, samples in lines.items():
            if key.partition("{")[0] == family:
                text += samples
    return "\n".join([*text, "# EOF"]) + "\n", len(times) * len(lines)


@dataclass(slots=True)
class RunningPrometheus:
    url: str
    query_log: Path
    child: Child

    def queries(self) -> int:
        """Queries it answered, from its own query log."""
        try:
            return sum(1 for line in self.query_log.read_text().splitlines() if line.strip())
        except FileNotFoundError:
            return 0

    def failure(self, what: str) -> BenchFailure:
        return self.child.failure(what)


@contextlib.asynccontextmanager
async def running_prometheus(root: Path, openmetrics: str) -> AsyncIterator[RunningPrometheus]:
    """Prometheus on 127.0.0.1 with ``openmetrics`` backfilled; stopped on the way out."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        raise BenchFailure(
            "observability: needs Prometheus (prometheus and promtool on the PATH): "
            "`make system-test-deps` installs Debian's"
        )
    data, source = root / "data", root / "history.om"
    source.write_text(openmetrics)
    done = await asyncio.to_thread(
        subprocess.run,
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise BenchFailure(f"promtool could not backfill: {done.stderr[-2000:]}")
    query_log, config = root / "queries.log", root / "prometheus.yml"
    config.write_text(f"global:\n  query_log_file: {query_log}\n")
    port = free_port()
    argv = [
        prometheus,
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    child = await spawn("prometheus", argv, root / "prometheus.log")
    running = RunningPrometheus(f"http://127.0.0.1:{port}", query_log, child)
    try:
        await child.until(lambda: answers(f"{running.url}/-/ready"), READY_WITHIN_S)
        yield running
    finally:
        await child.stop(10.0)
