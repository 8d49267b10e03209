"""Component metrics from a real Prometheus (Debian's), its history backfilled with promtool:
range queries through GraphQL give the expected points; fifty identical dashboards make one
query per series (Prometheus's own query log counts them); Prometheus stopped gives a 200
answer whose metrics are null with an UNAVAILABLE error naming it."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from plugins.observability import ObservabilityPlugin
from plugins.observability.settings import ObservabilitySettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client
from tests.prometheus import RunningPrometheus, openmetrics, prometheus

ORG = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout}
spec: {type: service, lifecycle: production, owner: team-a}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: payments
  annotations: {atrium.dev/prometheus-service: 'pay"ments\\\\'}
spec: {type: service, lifecycle: production, owner: team-a}
"""
QUERY = """query($ref: String!, $since: Int!, $step: Int) { entity(ref: $ref) { name
  ... on Component { metrics(since: $since, step: $step) { name labels query points } } } }"""


@pytest.fixture(scope="module")
def prom(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningPrometheus]:
    """Requests of checkout over the last hour: 10/s answered 200, 1/s answered 500."""
    now = int(time.time())
    times = list(range(now - 3600, now - 60, 15))
    history = openmetrics(
        {
            'http_requests_total{service="checkout",code="200"}': [
                (t, 10.0 * (t - times[0])) for t in times
            ],
            'http_requests_total{service="checkout",code="500"}': [
                (t, 1.0 * (t - times[0])) for t in times
            ],
        }
    )
    with prometheus(tmp_path_factory.mktemp("prometheus"), history) as running:
        yield running


async def _client(make_client: AppFactory, url: str, **app_settings: Any) -> Client:
    settings = ObservabilitySettings(prometheus_url=url, observability_timeout=2.0)
    client: Client = await make_client(plugins=[ObservabilityPlugin(settings)], **app_settings)
    assert not (await apply_batch(client.services.db, parse_documents(ORG, "org.yaml"))).errors
    return client


async def test_a_components_metrics_come_from_prometheus(
    make_client: AppFactory, prom: RunningPrometheus
) -> None:
    client = await _client(make_client, prom.url)
    body = await client.gql(QUERY, {"ref": "component:checkout", "since": 3600, "step": 60})
    series = {s["name"]: s for s in body["data"]["entity"]["metrics"]}
    assert set(series) == {"request_rate", "error_ratio"}  # no latency histogram here
    rate, errors = series["request_rate"], series["error_ratio"]
    assert rate["query"] == 'sum(rate(http_requests_total{service="checkout"}[5m]))'
    # Points a step apart, on the step's grid; once five minutes of history are in the
    # window, the rate is 11 requests a second and a ratio of 1 in 11 fails.
    times = [t for t, _ in rate["points"]]
    assert all(b - a == 60 for a, b in itertools.pairwise(times))
    assert all(int(t) % 60 == 0 for t in times)
    settled = [v for t, v in rate["points"] if times[0] + 600 < t < time.time() - 600]
    assert settled and all(v == pytest.approx(11.0, rel=0.02) for v in settled), settled
    ratios = [v for t, v in errors["points"] if times[0] + 600 < t < time.time() - 600]
    assert ratios and all(v == pytest.approx(1 / 11, rel=0.02) for v in ratios)

    # A service label with a quote and a backslash is escaped: Prometheus parses every query
    # (a refused one would be an error) and finds no such series, an empty answer.
    other = await client.gql(QUERY, {"ref": "component:payments", "since": 3600, "step": 60})
    assert other["data"]["entity"]["metrics"] == []
    bad = await client.gql(
        QUERY, {"ref": "component:checkout", "since": 3600, "step": 1}, expect_errors=True
    )
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "step must be between" in bad["errors"][0]["message"]


async def _logged(prom: RunningPrometheus, count: int) -> None:
    """Until Prometheus's query log holds ``count`` queries (it writes each as it ends)."""
    deadline = time.monotonic() + 10
    while len(prom.queries()) < count:
        assert time.monotonic() < deadline, prom.queries()
        await asyncio.sleep(0.02)


async def test_fifty_identical_dashboards_cost_one_query_per_series(
    make_client: AppFactory, prom: RunningPrometheus
) -> None:
    client = await _client(make_client, prom.url)
    before = len(prom.queries())
    answers = await asyncio.gather(
        *(client.gql(QUERY, {"ref": "component:checkout", "since": 7200}) for _ in range(50))
    )
    assert all(a["data"]["entity"]["metrics"] for a in answers)
    await _logged(prom, before + 5)  # Prometheus logs a query as it ends
    asked = prom.queries()[before:]
    assert len(asked) == 5, asked  # five series, each asked once
    assert len(set(asked)) == 5


async def test_a_second_replica_answers_from_redis_without_asking_prometheus(
    make_client: AppFactory, prom: RunningPrometheus, redis_url: str, cache_prefix: str
) -> None:
    shared = {"redis_url": redis_url, "cache_prefix": cache_prefix}
    first = await _client(make_client, prom.url, **shared)
    second = await _client(make_client, prom.url, **shared)
    variables = {"ref": "component:checkout", "since": 10_800, "step": 60}
    before = len(prom.queries())
    shown = await first.gql(QUERY, variables)
    again = await second.gql(QUERY, variables)
    assert again == shown and shown["data"]["entity"]["metrics"]
    await _logged(prom, before + 5)
    assert len(prom.queries()) - before == 5, "the second replica read Redis"
    observability = second.services.extras["observability"]
    assert observability.calls == 0
    assert second.services.caches.stats.counts[("l2", "hit")] >= 5


async def test_prometheus_stopped_makes_the_field_null_and_the_page_render(
    make_client: AppFactory, tmp_path: Path
) -> None:
    with prometheus(tmp_path, openmetrics({})) as running:
        client = await _client(make_client, running.url)
    body = await client.gql(
        QUERY, {"ref": "component:checkout", "since": 3600, "step": None}, expect_errors=True
    )
    assert body["data"]["entity"]["name"] == "checkout"
    assert body["data"]["entity"]["metrics"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "UNAVAILABLE" and "prometheus" in error["message"]
    assert error["path"] == ["entity", "metrics"]


def test_label_values_are_escaped_and_windows_bounded_and_aligned() -> None:
    from plugins.observability.metrics import window
    from plugins.observability.prometheus import render

    assert render('up{service="$service"}', service='a"b\\c\nd') == ('up{service="a\\"b\\\\c\\nd"}')
    settings = ObservabilitySettings(metrics_max_points=100, metrics_max_range=86_400)
    span = window(3600, None, settings, now=1_000_037.5)
    assert (span.end - span.start, span.end % span.step) == (3600, 0)
    assert (span.end - span.start) / span.step <= 100
    for since, step in ((30, None), (90_000, None), (3600, 10), (3600, 7200)):
        with pytest.raises(ValueError):
            window(since, step, settings, now=1_000_000)


async def test_a_bad_template_is_said_once_at_start_up_and_answers_unavailable(
    make_client: AppFactory, prom: RunningPrometheus, caplog: pytest.LogCaptureFixture
) -> None:
    settings = ObservabilitySettings(
        prometheus_url=prom.url,
        metrics_templates={"request_rate": "sum(rate(", "cpu": 'up{pod="$nobody"}'},
    )
    with caplog.at_level("ERROR", logger="atrium.observability"):
        client = await make_client(plugins=[ObservabilityPlugin(settings)])
        assert not (await apply_batch(client.services.db, parse_documents(ORG, "o.yaml"))).errors
        said = [r for r in caplog.records if r.getMessage() == "a PromQL template is wrong"]
        assert sorted(r.series for r in said) == ["cpu", "request_rate"]  # type: ignore[attr-defined]
        for _ in range(3):
            body = await client.gql(
                QUERY,
                {"ref": "component:checkout", "since": 3600, "step": None},
                expect_errors=True,
            )
            [error] = body["errors"]
            assert error["extensions"]["code"] == "UNAVAILABLE"
            assert "refused the template" in error["message"]
        again = [r for r in caplog.records if r.getMessage() == "a PromQL template is wrong"]
        assert len(again) == 2, "said at start-up only"
