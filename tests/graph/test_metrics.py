"""Requests counted on the hot path by plain integers, exposed as Prometheus families."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from graph.metrics import MAX_OPERATION_LABELS, Metrics


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_requests_and_latency_buckets() -> None:
    metrics = Metrics()
    for seconds in (0.0005, 0.001, 0.003, 20.0):
        metrics.observe_request("Page", 200, seconds)
    metrics.observe_request("Page", 304, 0.0001)
    metrics.observe_request(None, 400, 0.002)
    found = samples(metrics)
    assert found["atrium_graphql_requests_total", (("operation", "Page"), ("status", "200"))] == 4
    assert found["atrium_graphql_requests_total", (("operation", "Page"), ("status", "304"))] == 1
    assert (
        found["atrium_graphql_requests_total", (("operation", "anonymous"), ("status", "400"))] == 1
    )

    def bucket(le: str) -> float:
        key = (
            "atrium_graphql_request_duration_seconds_bucket",
            (("le", le), ("operation", "Page")),
        )
        return found[key]

    # Cumulative, each bound counting what is at most it (0.001 falls in le="0.001").
    assert bucket("0.001") == 3
    assert bucket("0.0025") == 3
    assert bucket("0.005") == 4
    assert bucket("10.0") == 4
    assert bucket("+Inf") == 5
    count = found["atrium_graphql_request_duration_seconds_count", (("operation", "Page"),)]
    total = found["atrium_graphql_request_duration_seconds_sum", (("operation", "Page"),)]
    assert count == 5 and abs(total - 20.0046) < 1e-9


def test_operation_names_are_bounded() -> None:
    metrics = Metrics()
    for i in range(MAX_OPERATION_LABELS + 50):
        metrics.observe_request(f"Op{i}", 200, 0.001)
    operations = {
        dict(labels)["operation"]
        for name, labels in samples(metrics)
        if name == "atrium_graphql_requests_total"
    }
    assert len(operations) == MAX_OPERATION_LABELS + 1 and "other" in operations


def test_requests_counted_at_once_are_counted_as_one_by_one() -> None:
    durations = [0.0005, 0.001, 0.003, 20.0]
    one_by_one, at_once = Metrics(), Metrics()
    for seconds in durations:
        one_by_one.observe_request("Page", 200, seconds)
    at_once.observe_requests("Page", 200, durations)
    assert samples(at_once) == samples(one_by_one)
