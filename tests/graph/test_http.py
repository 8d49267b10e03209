"""GraphQL over HTTP: media types, status codes and request shapes."""

from __future__ import annotations

import orjson
import pytest

from sources.persisted import document_hash
from tests.conftest import AppFactory, Client

GQL = "application/graphql-response+json"
QUERY = '{ entity(ref: "component:default/nothing") { ref } }'


async def test_post_answers_graphql_response_json_by_default(client: Client) -> None:
    response = await client.post("/graphql", json={"query": QUERY})
    assert response.status_code == 200
    assert response.headers["content-type"] == GQL
    assert response.json() == {"data": {"entity": None}}


async def test_get_runs_queries(client: Client) -> None:
    response = await client.get(
        "/graphql",
        headers={"apollo-require-preflight": "true"},
        params={
            "query": "query One($r: String!) { entity(ref: $r) { ref } }",
            "variables": '{"r": "api:x"}',
        },
    )
    assert response.status_code == 200
    assert response.json() == {"data": {"entity": None}}


async def test_mutations_over_get_are_405_with_allow(client: Client) -> None:
    response = await client.get(
        "/graphql",
        headers={"apollo-require-preflight": "true"},
        params={"query": 'mutation { applyEntities(yaml: "") { unchanged } }'},
    )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert "POST" in response.json()["errors"][0]["message"]


async def test_parse_error_is_400_without_data(client: Client) -> None:
    response = await client.post("/graphql", json={"query": "{ entity(ref: "})
    assert response.status_code == 400
    body = response.json()
    assert "data" not in body
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"


async def test_validation_error_is_400(client: Client) -> None:
    response = await client.post("/graphql", json={"query": "{ nope }"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


async def test_variables_that_do_not_coerce_are_400(client: Client) -> None:
    response = await client.post(
        "/graphql",
        json={"query": "query Q($r: String!) { entity(ref: $r) { ref } }", "variables": {"r": 5}},
    )
    assert response.status_code == 400
    assert "data" not in response.json()


async def test_application_json_clients_get_200_for_graphql_errors(client: Client) -> None:
    response = await client.post(
        "/graphql", json={"query": "{ nope }"}, headers={"accept": "application/json"}
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["errors"]


async def test_field_errors_keep_partial_data(client: Client) -> None:
    response = await client.post(
        "/graphql",
        json={"query": '{ a: entity(ref: "no kind") { ref } b: entity(ref: "api:x") { ref } }'},
    )
    assert response.status_code == 200
    body = response.json()
    assert body["data"] == {"a": None, "b": None}
    assert body["errors"][0]["path"] == ["a"]
    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", b"query=%7B__typename%7D"),
        ("text/plain", b'{"query":"{__typename}"}'),
        ("application/xml", b"<query/>"),
    ],
)
async def test_other_media_types_are_415(client: Client, content_type: str, body: bytes) -> None:
    # With a preflight header CSRF prevention lets them through; the media type does not.
    response = await client.post(
        "/graphql",
        content=body,
        headers={"content-type": content_type, "graphql-require-preflight": "1"},
    )
    assert response.status_code == 415


async def test_no_accept_is_graphql_response_json_and_star_is_json(client: Client) -> None:
    """The draft since its 2025 watershed: no Accept means application/graphql-response+json;
    */* (curl, legacy clients) is answered as application/json, with 200 for any GraphQL
    error."""
    request = client.build_request("POST", "/graphql", json={"query": "{ nope }"})
    del request.headers["accept"]
    bare = await client.send(request)
    assert bare.status_code == 400 and bare.headers["content-type"] == GQL
    star = await client.post("/graphql", json={"query": "{ nope }"}, headers={"accept": "*/*"})
    assert star.status_code == 200
    assert star.headers["content-type"] == "application/json"
    assert star.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    preferred = await client.post(
        "/graphql",
        json={"query": QUERY},
        headers={"accept": "application/json;q=0.5, application/graphql-response+json"},
    )
    assert preferred.headers["content-type"] == GQL


async def test_unacceptable_accept_is_406(client: Client) -> None:
    response = await client.post(
        "/graphql", json={"query": QUERY}, headers={"accept": "application/xml"}
    )
    assert response.status_code == 406


async def test_browsers_get_the_ide_in_development_only(make_client: AppFactory) -> None:
    dev = await make_client()
    page = await dev.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    prod = await make_client(mode="production")
    assert (await prod.get("/graphql", headers={"accept": "text/html"})).status_code == 406


async def test_other_methods_are_405(client: Client) -> None:
    response = await client.put("/graphql", json={"query": QUERY})
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b'"a string"', "JSON object"),
        (b'{"query": 5}', "query must be a string"),
        (b'{"query": "{a}", "variables": [1]}', "variables must be an object"),
        (b"{}", "no query"),
        (b"[]", "empty batch"),
    ],
)
async def test_malformed_requests_are_400(client: Client, payload: bytes, message: str) -> None:
    response = await client.post(
        "/graphql", content=payload, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert message in response.json()["errors"][0]["message"]


async def test_bad_variables_json_over_get_is_400(client: Client) -> None:
    response = await client.get(
        "/graphql",
        headers={"apollo-require-preflight": "true"},
        params={"query": QUERY, "variables": "{oops"},
    )
    assert response.status_code == 400


async def test_a_large_body_is_refused_before_it_is_parsed(make_client: AppFactory) -> None:
    client = await make_client(max_body_bytes=2048)
    body = orjson.dumps({"query": "{ " + "a " * 5000 + "}"})
    response = await client.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413


async def test_too_many_tokens_and_too_deep_are_refused(make_client: AppFactory) -> None:
    client = await make_client(max_tokens=50, max_depth=3)
    many = await client.post(
        "/graphql", json={"query": "{ " + " ".join(f"a{i}: __typename" for i in range(40)) + " }"}
    )
    assert many.status_code == 400 and "token" in many.text.lower()
    deep = await client.post(
        "/graphql",
        json={
            "query": '{ entity(ref: "api:x") { ... on API { owner { ... on Group { parent { parent { name } } } } } } }'
        },
    )
    assert deep.status_code == 400 and "depth" in deep.text.lower()


async def test_batches_run_each_operation(client: Client) -> None:
    response = await client.post(
        "/graphql", json=[{"query": "{ __typename }"}, {"query": "{ nope }"}]
    )
    assert response.status_code == 200
    first, second = response.json()
    assert first == {"data": {"__typename": "Query"}}
    assert second["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"


async def test_batches_are_bounded(make_client: AppFactory) -> None:
    client = await make_client(max_batch=2)
    response = await client.post("/graphql", json=[{"query": "{ __typename }"}] * 3)
    assert response.status_code == 400


async def trusted(client: Client, *queries: str) -> None:
    from graph.persisted import trust
    from sources.persisted import document_hash

    await trust(client.services.db, [(document_hash(q), q, None) for q in queries])


async def test_production_masks_unexpected_errors_but_keeps_the_code(
    make_client: AppFactory,
) -> None:
    client = await make_client(mode="production")
    await trusted(client, '{ entity(ref: "group:x") { ref } }')
    await client.services.db.execute("alter table entities rename to gone")
    response = await client.post("/graphql", json={"query": '{ entity(ref: "group:x") { ref } }'})
    assert response.status_code == 200
    [error] = response.json()["errors"]
    assert error["message"] == "Internal server error"
    assert error["extensions"]["code"] == "INTERNAL_SERVER_ERROR"
    assert "entities" not in response.text


async def test_production_disables_introspection(make_client: AppFactory) -> None:
    client = await make_client(mode="production")
    await trusted(client, "{ __schema { types { name } } }")
    response = await client.post("/graphql", json={"query": "{ __schema { types { name } } }"})
    assert response.status_code == 400


async def test_health_readiness_and_metrics(client: Client) -> None:
    assert (await client.get("/healthz")).text == "ok"
    ready = await client.get("/readyz")
    assert ready.status_code == 200 and ready.json() == {"database": "ok", "migrations": "ok"}
    # A name is a label once a document Atrium knows (persisted, trusted) ran under it; before,
    # and for any other name, "other": clients could make names without bound.
    ping = "query Ping { __typename }"
    await client.post("/graphql", json={"query": ping})
    await client.post("/graphql", json={"query": "query Sneaky { __typename }"})
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(ping)}}
    await client.post("/graphql", json={"query": ping, "extensions": persisted})
    await client.post("/graphql", json={"query": "{ nope }"})
    metrics = (await client.get("/metrics")).text
    assert 'atrium_graphql_requests_total{operation="Ping",status="200"} 1.0' in metrics
    assert 'atrium_graphql_requests_total{operation="other",status="200"} 2.0' in metrics
    assert "Sneaky" not in metrics
    assert (
        'atrium_graphql_errors_total{code="GRAPHQL_VALIDATION_FAILED",operation="anonymous"} 1.0'
        in metrics
    )
    assert 'atrium_graphql_request_duration_seconds_count{operation="Ping"} 1.0' in metrics


async def test_readiness_fails_when_migrations_are_missing(client: Client) -> None:
    await client.services.db.execute("delete from atrium_migrations")
    response = await client.get("/readyz")
    assert response.status_code == 503
    migrations = len(client.services.assembly.migrations)
    assert response.json()["migrations"] == f"{migrations} pending"


async def test_readiness_reports_a_changed_migration(client: Client) -> None:
    await client.services.db.execute("update atrium_migrations set checksum = 'x'")
    response = await client.get("/readyz")
    assert response.status_code == 503
    assert "was changed after it was applied" in response.json()["migrations"]


async def test_parse_and_validation_are_cached_across_requests(client: Client) -> None:
    from strawberry.extensions.validation_cache import _get_validate_cache

    cache = _get_validate_cache(512)
    query = '{ entity(ref: "api:cached") { ref } }'
    await client.post("/graphql", json={"query": query})
    before = cache.cache_info()
    for _ in range(3):
        await client.post("/graphql", json={"query": query})
    after = cache.cache_info()
    assert after.hits - before.hits == 3 and after.misses == before.misses


async def test_an_unexpected_failure_is_a_logged_500_in_the_usual_shape(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: object) -> None:
        raise RuntimeError("the document store fell over")

    client.services.persisted.document = broken
    response = await client.post("/graphql", json={"query": QUERY})
    assert response.status_code == 500
    assert response.headers["content-type"] == GQL
    assert response.json() == {
        "errors": [
            {"message": "Internal server error", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}
        ]
    }
    assert "fell over" not in response.text
    [record] = [r for r in caplog.records if r.name == "atrium.http" and r.exc_info]
    assert "fell over" in str(record.exc_info[1])
    metrics = (await client.get("/metrics")).text
    assert 'atrium_graphql_requests_total{operation="anonymous",status="500"} 1.0' in metrics
