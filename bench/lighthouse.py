"""The console's pages in Lighthouse on ``atrium serve --demo``: the mobile performance score and
its metrics, and what each page weighs on the wire.

Lighthouse is npm ``lighthouse`` (installed in tests/clients), with Debian's Chromium, at its
default settings: the mobile profile, throttling simulated (Slow 4G, the CPU 4 times slower)
from one unthrottled load. Every page is run several times, the pages taking turns so a slow
moment of the machine hits them all; a page's figures are those of its median run by score.
Bytes are Lighthouse's own: ``total-byte-weight`` (what went over the wire, compressed) and the
largest of its network requests. Every page is loaded as the demo user amelia.chen (the
development server's demo cookie, sent by Lighthouse with each request), after one load of
its own to warm the server's caches, as a person's second visit would find them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

from bench.harness import BenchFailure
from bench.harness.host import ROOT
from bench.harness.replica import Replica, serve_environment
from bench.harness.tables import verdict

__all__ = ["LIGHTHOUSE", "PAGES", "lighthouse", "run_lighthouse"]

LIGHTHOUSE: Final = ROOT / "tests" / "clients" / "node_modules" / ".bin" / "lighthouse"
CHROMIUM: Final = "/usr/bin/chromium"
# Headless, as root; and no name resolved but the server's address, so the browser's own
# background requests (sign-in, component and extension updates) go nowhere on a closed network.
CHROME_FLAGS: Final = (
    "--headless=new --no-sandbox --host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'"
)
PAGES: Final = {
    "home": "/",
    "catalog": "/catalog",
    "component": "/catalog/default/component/checkout",
    "team": "/catalog/default/group/checkout-team",
    "API": "/catalog/default/api/checkout-api",
}
DEMO_USER: Final = "amelia.chen"
TARGET: Final = 95  # Lighthouse's performance score, on every page
METRICS: Final = (
    ("LCP", "largest-contentful-paint"),
    ("TBT", "total-blocking-time"),
    ("FCP", "first-contentful-paint"),
    ("CLS", "cumulative-layout-shift"),
    ("SI", "speed-index"),
)
BIGGEST: Final = 4  # resources listed per page
RUN_TIMEOUT_S: Final = 180.0
READY_TIMEOUT_S: Final = 90.0


@dataclass(frozen=True, slots=True)
class Run:
    score: int
    metrics: dict[str, str]  # Lighthouse's display values
    bytes: int
    requests: list[dict[str, Any]]
    benchmark_index: float  # Lighthouse's measure of the machine's speed during the run
    flagged: list[str]  # the diagnostics Lighthouse flags, with what they would save


async def run_lighthouse(database_url: str, *, runs: int, pages: dict[str, str]) -> None:
    """``runs`` of each of ``pages`` against ``atrium serve --demo`` on ``database_url``."""
    results: dict[str, list[Run]] = {name: [] for name in pages}
    version = "?"
    async with atrium_serve_demo(database_url) as base:
        async with httpx.AsyncClient(cookies={"atrium_demo_user": DEMO_USER}) as http:
            for path in pages.values():
                response = await http.get(base + path)
                if response.status_code != 200:
                    raise BenchFailure(f"GET {path}: HTTP {response.status_code}")
        for _ in range(runs):
            for name, path in pages.items():
                report = await lighthouse(base + path)
                version = report["lighthouseVersion"]
                results[name].append(_run(report))
    _print(results, runs, version)


def _run(report: dict[str, Any]) -> Run:
    audits = report["audits"]
    score = report["categories"]["performance"]["score"]
    if score is None:
        raise BenchFailure(f"Lighthouse gave {report['finalDisplayedUrl']} no performance score")
    return Run(
        round(score * 100),
        {label: audits[audit].get("displayValue", "?") for label, audit in METRICS},
        int(audits["total-byte-weight"]["numericValue"]),
        list(audits["network-requests"]["details"]["items"]),
        report["environment"]["benchmarkIndex"],
        _flagged(report),
    )


def _flagged(report: dict[str, Any]) -> list[str]:
    """The performance category's diagnostics and insights that fail, as Lighthouse words them
    (its weighted audits are the metrics, shown apart)."""
    found = []
    for ref in report["categories"]["performance"]["auditRefs"]:
        audit = report["audits"][ref["id"]]
        if ref["weight"] or audit["score"] is None or audit["score"] >= 0.9:
            continue
        saving = audit.get("displayValue")
        found.append(f"{audit['id']} ({saving})" if saving else audit["id"])
    return found


async def lighthouse(
    url: str,
    *,
    categories: Sequence[str] = ("performance",),
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Lighthouse's JSON report of ``url`` (default settings: the mobile profile) for
    ``categories``, as the demo user unless other ``headers`` are given. The console's tests
    run it too (tests/console/lighthouse.py)."""
    if not LIGHTHOUSE.is_file():
        raise BenchFailure(f"no Lighthouse at {LIGHTHOUSE}: make test installs it (tests/clients)")
    if headers is None:
        headers = {"Cookie": f"atrium_demo_user={DEMO_USER}"}
    process = await asyncio.create_subprocess_exec(
        str(LIGHTHOUSE),
        url,
        "--quiet",
        "--output=json",  # on stdout
        f"--chrome-flags={CHROME_FLAGS}",
        f"--only-categories={','.join(categories)}",
        f"--extra-headers={json.dumps(dict(headers))}",
        env={**os.environ, "CHROME_PATH": CHROMIUM},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        raise BenchFailure(f"Lighthouse took over {RUN_TIMEOUT_S:.0f} s on {url}") from None
    finally:
        await _interrupt(process)
    try:
        report: dict[str, Any] = json.loads(stdout)
    except ValueError:
        report = {}
    if report.get("runtimeError") or process.returncode != 0 or not report:
        raise BenchFailure(
            f"Lighthouse on {url} exited with {process.returncode}: "
            f"{report.get('runtimeError') or stderr.decode()[-2000:]}"
        )
    return report


async def _interrupt(process: asyncio.subprocess.Process) -> None:
    """SIGINT: Lighthouse then kills the Chromium it started (a process group of its own)."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(process.wait(), 10)
    except TimeoutError:
        process.kill()
        await process.wait()


@contextlib.asynccontextmanager
async def atrium_serve_demo(database_url: str) -> AsyncIterator[str]:
    """``atrium serve --demo`` on a free port of 127.0.0.1, as ``make run`` starts it but on
    ``database_url`` (the demo is loaded if its catalog is empty), ready and its demo cluster
    watched; stopped as Ctrl+C would (SIGTERM) on the way out. Yields its base URL."""
    settings = {
        "ATRIUM_DATABASE_URL": database_url,
        "ATRIUM_WEB_DIR": str(ROOT / "web" / "dist"),
        "ATRIUM_LOG_LEVEL": "WARNING",
        "ATRIUM_SHUTDOWN_GRACE": "0",  # no balancer to leave: SIGTERM stops it at once
    }
    # Its directory is its working directory: the demo's files (its cluster's kubeconfig)
    # go under ./.atrium there.
    with tempfile.TemporaryDirectory(prefix="atrium-bench-demo-") as tmp:
        demo = Replica("demo", serve_environment(settings), Path(tmp), args=("--demo",))
        try:
            await demo.start()
            await demo.ready(READY_TIMEOUT_S)
            await demo.until(lambda: _watched(demo), READY_TIMEOUT_S, "watching its cluster")
            yield demo.base
        finally:
            if demo.child is not None:
                await demo.child.stop(30.0)


async def _watched(demo: Replica) -> bool:
    """The demo's cluster is watched: the component page shows its workloads."""
    metrics = await demo.metrics()
    return any(
        series.startswith("atrium_compute_cluster_healthy{") and value == 1.0
        for series, value in metrics.items()
    )


def _print(results: dict[str, list[Run]], runs: int, version: str) -> None:
    print(
        f"\nLighthouse {version}, mobile (simulated Slow 4G, CPU 4x), performance, "
        f"median of {runs} run{'s' if runs > 1 else ''} a page, as {DEMO_USER}, on "
        "atrium serve --demo"
    )
    labels = "".join(f"{label:>9}" for label, _ in METRICS)
    print(f"  {'page':11}{'score':>6}  {'runs':14}{labels}{'KiB':>8}{'requests':>10}  target")
    medians = {}
    for name, page_runs in results.items():
        median = medians[name] = sorted(page_runs, key=lambda r: r.score)[len(page_runs) // 2]
        scores = "(" + ", ".join(str(r.score) for r in page_runs) + ")"
        values = "".join(f"{median.metrics[label]:>9}" for label, _ in METRICS)
        print(
            f"  {name:11}{median.score:6}  {scores:14}{values}{median.bytes / 1024:8.0f}"
            f"{len(median.requests):10}  {verdict(median.score >= TARGET, 'FAIL')}"
        )
    passed = sum(run.score >= TARGET for run in medians.values())
    print(
        f"target: Lighthouse performance >= {TARGET} on every page: {passed} of {len(medians)} pass"
    )
    indexes = sorted(r.benchmark_index for rs in results.values() for r in rs)
    print(
        "Lighthouse's benchmark index of the machine during the runs (its CPU speed: the busier, "
        f"the lower): {indexes[0]:.0f} to {indexes[-1]:.0f}"
    )
    if runs > 1:
        spread = [max(r.score for r in rs) - min(r.score for r in rs) for rs in results.values()]
        print(f"a page's scores spread over {statistics.mean(spread):.1f} points on average")
    _print_weights(medians)


def _print_weights(medians: dict[str, Run]) -> None:
    print(
        "\nwhat each page transferred by type and its biggest resources, KiB as sent (compressed)"
    )
    previous: tuple[str, list[str]] | None = None
    for name, run in medians.items():
        by_type: Counter[str] = Counter()
        for request in run.requests:
            by_type[request.get("resourceType", "Other").lower()] += (
                request.get("transferSize") or 0
            )
        print(f"  {name}: " + ", ".join(f"{t} {n / 1024:.1f}" for t, n in by_type.most_common()))
        biggest = sorted(run.requests, key=lambda r: -(r.get("transferSize") or 0))[:BIGGEST]
        lines = [
            f"    {urlsplit(r['url']).path:48}{(r.get('transferSize') or 0) / 1024:8.1f}"
            f"  ({(r.get('resourceSize') or 0) / 1024:.1f} uncompressed)"
            for r in biggest
        ]
        if previous is not None and previous[1] == lines:
            print(f"    the same biggest {len(lines)} as {previous[0]}")
        else:
            print("\n".join(lines))
            previous = (name, lines)
        if run.flagged:
            print(f"    flagged by Lighthouse: {', '.join(run.flagged)}")
