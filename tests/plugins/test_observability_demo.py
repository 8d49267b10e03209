"""The observability plugin's part of ``atrium serve --demo``: a real Prometheus and a real
Alertmanager (Debian's) on free local ports, Prometheus holding the demo services' recent
history at once and the rest of the day soon after, Alertmanager the demo's incidents, both
stopped when the demo stops; without their binaries, or when one does not start, the demo
starts all the same and says once how to connect real ones; an unconfigured backend's fields
answer UNAVAILABLE naming the setting, and the console's panels are offered all the same.
(tests/test_cli.py runs it under ``atrium serve --demo`` itself.)"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import httpx
import pytest

from graph.assembly import assemble, core_plugins
from graph.settings import Settings
from plugins.observability import ObservabilityPlugin
from plugins.observability import demo as observability_demo
from plugins.observability.demo_series import HISTORY
from plugins.observability.settings import ObservabilitySettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import EXAMPLES, AppFactory, demo_batch

Demo = Callable[[Path, Path], AbstractContextManager[dict[str, str]]]
UNCONFIGURED = ObservabilitySettings(prometheus_url=None, alertmanager_url=None)
COMPONENT = """query($ref: String!) { entity(ref: $ref) { ... on Component {
  metrics(since: 3600, step: 60) { name points }
  alerts { name severity state summary runbookUrl labels } } } }"""
TEAM = """query($ref: String!) { entity(ref: $ref) { ... on Group { alerts { name } } } }"""


def _demo(settings: ObservabilitySettings) -> Demo:
    """The demo the plugin registers, as ``atrium serve --demo`` finds it."""
    assembly = assemble(Settings(), [*core_plugins(), ObservabilityPlugin(settings)])
    [(plugin_id, start)] = assembly.demos
    assert plugin_id == "observability"
    return start


def _processes_under(folder: Path) -> list[str]:
    """The programs running with ``folder`` in their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or gone
            continue
        if any(str(folder).encode() in arg for arg in argv):
            found.append(Path(argv[0].decode()).name)
    return found


def _query(url: str, query: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": query}, timeout=10).json()
    assert answer["status"] == "success", answer
    return answer["data"]["result"]  # type: ignore[no-any-return]


def _demo_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "atrium.observability.demo" and r.levelno >= logging.WARNING
    ]


async def test_the_demo_serves_metrics_and_alerts_and_stops_both(
    make_client: AppFactory,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, logger="atrium.observability.demo")
    monkeypatch.setattr(observability_demo, "EARLIER_AFTER", 0.0)
    with _demo(UNCONFIGURED)(EXAMPLES, tmp_path) as env:
        assert set(env) == {"ATRIUM_PROMETHEUS_URL", "ATRIUM_ALERTMANAGER_URL"}
        prometheus, alertmanager = env["ATRIUM_PROMETHEUS_URL"], env["ATRIUM_ALERTMANAGER_URL"]
        assert prometheus.startswith("http://127.0.0.1:")
        assert alertmanager.startswith("http://127.0.0.1:")
        assert {"prometheus", "prometheus-alertmanager"} <= set(_processes_under(tmp_path))
        [serving] = [
            r for r in caplog.records if r.getMessage() == "demo metrics and alerts serving"
        ]
        assert serving.__dict__["alerts"] == ["HighErrorRatio", "HighLatency"]
        assert not _demo_warnings(caplog)

        settings = ObservabilitySettings(
            prometheus_url=prometheus, alertmanager_url=alertmanager, observability_timeout=10
        )
        client = await make_client(plugins=[ObservabilityPlugin(settings)])
        assert not (await apply_batch(client.services.db, demo_batch())).errors

        # cart-service: requests over the whole last hour, failing since its incident began.
        body = await client.gql(COMPONENT, {"ref": "component:cart-service"})
        cart = body["data"]["entity"]
        series = {s["name"]: s["points"] for s in cart["metrics"]}
        assert set(series) == {
            "request_rate",
            "error_ratio",
            "latency_p50",
            "latency_p95",
            "latency_p99",
        }
        now = time.time()
        rate = series["request_rate"]
        assert len(rate) >= 59 and rate[0][0] <= now - 3540, rate[:2]
        assert all(v is not None and 1 < v < 1_000 for _, v in rate), rate
        errors = dict((int(t), v) for t, v in series["error_ratio"])
        early = [v for t, v in errors.items() if t < now - 45 * 60]
        late = [v for t, v in errors.items() if t > now - 30 * 60]
        assert early and all(v < 0.02 for v in early), early
        assert late and all(0.03 < v < 0.1 for v in late), late
        p95 = [v for _, v in series["latency_p95"]]
        assert all(v is not None and 0.005 < v < 1 for v in p95), p95
        [alert] = cart["alerts"]
        assert (alert["name"], alert["severity"], alert["state"]) == (
            "HighErrorRatio",
            "critical",
            "ACTIVE",
        )
        assert "cart-service" in alert["summary"]
        assert alert["runbookUrl"].startswith("https://")
        assert alert["labels"]["namespace"] == "checkout"
        search = await client.gql(COMPONENT, {"ref": "component:search-service"})
        assert [a["name"] for a in search["data"]["entity"]["alerts"]] == ["HighLatency"]
        checkout = await client.gql(COMPONENT, {"ref": "component:checkout"})
        assert checkout["data"]["entity"]["alerts"] == []
        team = await client.gql(TEAM, {"ref": "group:checkout-team"})
        assert [a["name"] for a in team["data"]["entity"]["alerts"]] == ["HighErrorRatio"]

        # Prometheus scrapes the same series on from the demo's exporter: its value now is the
        # history's last plus what came since.
        async with httpx.AsyncClient() as http:
            for _ in range(200):  # its scrapes begin a few seconds in
                targets = (await http.get(f"{prometheus}/api/v1/targets")).json()["data"]
                if targets["activeTargets"]:
                    break
                await asyncio.sleep(0.1)
            [target] = targets["activeTargets"]
            scraped = (await http.get(target["scrapeUrl"])).text
        key = 'http_requests_total{service="cart-service",code="200"}'
        [line] = [x for x in scraped.splitlines() if x.startswith(key)]
        [last] = _query(prometheus, f"last_over_time({key}[5m])")
        assert 0 <= float(line.rpartition(" ")[2]) - float(last["value"][1]) < 500 * 60, line

        # The rest of the day follows, as blocks Prometheus reads within its minute.
        for _ in range(600):
            if any(r.getMessage() == "demo metrics history written" for r in caplog.records):
                break
            await asyncio.sleep(0.1)
        spans = await asyncio.to_thread(_blocks, tmp_path / "demo-prometheus" / "data")
        assert min(s["minTime"] for s in spans) / 1000 <= now - HISTORY + 60, spans
        assert sum(s["stats"]["numSamples"] for s in spans) > 35 * 10 * 2800, spans
        assert not _demo_warnings(caplog)

    # Both stopped, and nothing of theirs is left running.
    assert _processes_under(tmp_path) == []
    async with httpx.AsyncClient() as http:
        for url in (f"{prometheus}/-/ready", f"{alertmanager}/-/ready", target["scrapeUrl"]):
            with pytest.raises(httpx.ConnectError):
                await http.get(url)


def _blocks(data: Path) -> list[dict[str, Any]]:
    """The TSDB blocks in a Prometheus data folder, by their meta.json."""
    return [
        json.loads((block / "meta.json").read_text())
        for block in data.iterdir()
        if (block / "meta.json").exists()
    ]


def _path_with(tmp_path: Path, *programs: str) -> str:
    """A PATH of one folder holding only the named programs (links to the real ones)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for program in programs:
        found = shutil.which(program)
        assert found, f"{program} is not installed (make test installs it)"
        (folder / program).symlink_to(found)
    return str(folder)


def test_without_the_binaries_the_demo_starts_and_says_once_how_to_connect_real_ones(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path))
    with _demo(UNCONFIGURED)(EXAMPLES, tmp_path) as env:
        assert env == {}
        [said] = _demo_warnings(caplog)
        assert said.startswith(
            "observability: the demo has no Prometheus (prometheus and promtool not installed)"
            " and no Alertmanager (prometheus-alertmanager not installed); install Debian's"
            " prometheus and prometheus-alertmanager (`make run` does), or set"
            " ATRIUM_PROMETHEUS_URL and ATRIUM_ALERTMANAGER_URL to connect real ones."
        ), said
        assert _processes_under(tmp_path) == []
    assert len(_demo_warnings(caplog)) == 1

    # A real Prometheus configured: only what is missing is said.
    caplog.clear()
    configured = ObservabilitySettings(prometheus_url="http://prometheus.example:9090")
    with _demo(configured)(EXAMPLES, tmp_path) as env:
        assert env == {}
        [said] = _demo_warnings(caplog)
        assert "no Alertmanager" in said and "ATRIUM_ALERTMANAGER_URL" in said
        assert "Prometheus" not in said and "ATRIUM_PROMETHEUS_URL" not in said


def test_a_server_that_does_not_start_is_said_and_the_other_runs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _path_with(tmp_path, "promtool", "prometheus-alertmanager")
    broken = Path(path) / "prometheus"
    broken.write_text("#!/bin/sh\necho 'listen tcp: address already in use' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", path)
    with _demo(UNCONFIGURED)(EXAMPLES, tmp_path) as env:
        assert set(env) == {"ATRIUM_ALERTMANAGER_URL"}
        assert httpx.get(f"{env['ATRIUM_ALERTMANAGER_URL']}/api/v2/alerts").json()
        [said] = _demo_warnings(caplog)
        assert "no Prometheus (it did not start, see " in said
        assert "address already in use" in said
        assert "install" not in said and "set ATRIUM_PROMETHEUS_URL" in said
    assert _processes_under(tmp_path) == []


async def test_an_unconfigured_backend_answers_unavailable_saying_what_to_set(
    make_client: AppFactory,
) -> None:
    client = await make_client(plugins=[ObservabilityPlugin(UNCONFIGURED)])
    org = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout}
spec: {type: service, lifecycle: production, owner: team-a}
"""
    assert not (await apply_batch(client.services.db, parse_documents(org, "o.yaml"))).errors
    body = await client.gql(COMPONENT, {"ref": "component:checkout"}, expect_errors=True)
    assert body["data"]["entity"] == {"metrics": None, "alerts": None}
    said = {e["path"][-1]: e for e in body["errors"]}
    assert said["metrics"]["extensions"]["code"] == "UNAVAILABLE"
    assert said["metrics"]["message"] == "prometheus: not configured: set ATRIUM_PROMETHEUS_URL"
    assert said["alerts"]["extensions"]["code"] == "UNAVAILABLE"
    assert said["alerts"]["message"] == (
        "alertmanager: not configured: set ATRIUM_ALERTMANAGER_URL"
    )
    team = await client.gql(TEAM, {"ref": "group:team-a"}, expect_errors=True)
    assert team["data"]["entity"] == {"alerts": None}
    assert team["errors"][0]["message"].endswith("set ATRIUM_ALERTMANAGER_URL")

    # The console's panels are offered all the same, to say so.
    panels = assemble(Settings(), [*core_plugins(), ObservabilityPlugin(UNCONFIGURED)]).panels
    assert {(p.page, p.operation) for p in panels if p.plugin_id == "observability"} == {
        ("entity", "EntityAlerts"),
        ("entity", "EntityMetrics"),
        ("team", "TeamAlerts"),
        ("team", "TeamErrorRatios"),
        ("workload", "WorkloadObservability"),
        ("workload", "WorkloadLogs"),
    }


@pytest.fixture(autouse=True)
def _no_leftovers(tmp_path: Path) -> Iterator[None]:
    yield
    assert _processes_under(tmp_path) == [], "a demo server outlived its test"
