"""Requests counted on the hot path by plain integers, exposed as Prometheus families."""

from __future__ import annotations

from graphql import GraphQLError
from prometheus_client.parser import text_string_to_metric_families

from graph.metrics import MAX_OPERATION_LABELS, Metrics
from tests.conftest import AppFactory


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_requests_and_latency_buckets() -> None:
    metrics = Metrics()
    metrics.know("Page")
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


def _operations(metrics: Metrics) -> set[str]:
    return {
        dict(labels)["operation"]
        for name, labels in samples(metrics)
        if name == "atrium_graphql_requests_total"
    }


def test_only_names_of_known_documents_are_labels() -> None:
    """A name a client sends with a document Atrium does not know is no label: "other"."""
    metrics = Metrics()
    for i in range(1_000):
        metrics.observe_request(f"Sneaky{i}", 200, 0.001)
    metrics.count_errors("Sneaky", [GraphQLError("no", extensions={"code": "BAD_USER_INPUT"})])
    assert _operations(metrics) == {"other"}
    errors = samples(metrics)[
        "atrium_graphql_errors_total", (("code", "BAD_USER_INPUT"), ("operation", "other"))
    ]
    assert errors == 1
    metrics.know("EntityPage")
    metrics.observe_request("EntityPage", 200, 0.001)
    assert _operations(metrics) == {"other", "EntityPage"}


def test_known_operation_names_are_bounded() -> None:
    metrics = Metrics()
    for i in range(MAX_OPERATION_LABELS + 50):
        metrics.know(f"Op{i}")
        metrics.observe_request(f"Op{i}", 200, 0.001)
    operations = _operations(metrics)
    assert len(operations) == MAX_OPERATION_LABELS + 1 and "other" in operations


def test_requests_counted_at_once_are_counted_as_one_by_one() -> None:
    durations = [0.0005, 0.001, 0.003, 20.0]
    one_by_one, at_once = Metrics(), Metrics()
    for seconds in durations:
        one_by_one.observe_request("Page", 200, seconds)
    at_once.observe_requests("Page", 200, durations)
    assert samples(at_once) == samples(one_by_one)


def _runs(text: str) -> dict[tuple[str, str], float]:
    return {
        (s.labels["executor"], s.labels["reason"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "atrium_operation_runs"
        for s in family.samples
        if s.name == "atrium_operation_runs_total"
    }


async def test_operation_runs_count_plans_and_why_the_generic_executor_ran(
    make_client: AppFactory,
) -> None:
    client = await make_client(response_cache=False)
    page = "query Page($ref: String!) { entity(ref: $ref) { ref } }"
    # The first GET registers the document (a POST, its first run, which plans it); every GET
    # then runs on its plan.
    for _ in range(3):
        assert (await client.persisted_get(page, {"ref": "component:x"})).status_code == 200
    await client.persisted_get(page, {"ref": 5})  # the plan declines what does not coerce
    for _ in range(2):
        await client.persisted_get("query Intro { __schema { queryType { name } } }")
    await client.gql("{ __typename }")  # an ad hoc document
    assert _runs((await client.get("/metrics")).text) == {
        ("plan", "compiled"): 3,
        ("generic", "first_run"): 2,
        ("generic", "declined"): 1,
        ("generic", "not_plannable"): 2,
        ("generic", "not_persisted"): 1,
    }
    off = await make_client(response_cache=False, compiled_plans=False)
    for _ in range(2):
        await off.persisted_get(page, {"ref": "component:x"})
    assert _runs((await off.get("/metrics")).text) == {("generic", "plans_off"): 2}
