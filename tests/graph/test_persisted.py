"""Automatic persisted queries as Apollo Client speaks them, trusted documents, CSRF."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from graph.persisted import read_manifest, trust
from sources.persisted import document_hash
from tests.conftest import AppFactory, Client

# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


QUERY = '{ entity(ref: "component:default/nothing") { ref } }'
GET = {"apollo-require-preflight": "true"}


def apq(digest: str, version: int = 1) -> dict[str, object]:
    return {"persistedQuery": {"version": version, "sha256Hash": digest}}


def test_the_test_vector() -> None:
    assert (
        document_hash("{__typename}")
        == "ecf4edb46db40b5132295c0291d62fb65d6759a9eedfa4d5d612dd5ec54a6b38"
    )


async def test_hash_only_then_registration_then_hash_only(client: Client) -> None:
    digest = document_hash(QUERY)
    miss = await client.post("/graphql", json={"extensions": apq(digest)})
    assert miss.status_code == 200
    assert miss.json() == {
        "errors": [
            {
                "message": "PersistedQueryNotFound",
                "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
            }
        ]
    }
    assert miss.headers["cache-control"] == "private, no-cache, must-revalidate"

    registered = await client.post("/graphql", json={"query": QUERY, "extensions": apq(digest)})
    assert registered.json() == {"data": {"entity": None}}

    params = {"extensions": orjson.dumps(apq(digest)).decode(), "operationName": ""}
    hit = await client.get("/graphql", params=params, headers=GET)
    assert hit.status_code == 200 and hit.json() == {"data": {"entity": None}}
    assert await client.services.db.fetchval("select count(*) from persisted_queries") == 1


async def test_a_document_that_does_not_validate_is_not_stored(client: Client) -> None:
    bad = "{ nope }"
    response = await client.post(
        "/graphql", json={"query": bad, "extensions": apq(document_hash(bad))}
    )
    assert response.status_code == 400
    again = await client.post("/graphql", json={"extensions": apq(document_hash(bad))})
    assert again.json()["errors"][0]["message"] == "PersistedQueryNotFound"


async def test_protocol_errors(client: Client) -> None:
    mismatch = await client.post(
        "/graphql", json={"query": QUERY, "extensions": apq(document_hash("{x}"))}
    )
    assert (
        mismatch.status_code == 400
        and mismatch.json()["errors"][0]["message"] == "provided sha does not match query"
    )
    version = await client.post(
        "/graphql", json={"query": QUERY, "extensions": apq(document_hash(QUERY), 2)}
    )
    assert version.status_code == 400 and "version" in version.json()["errors"][0]["message"]
    garbage = await client.post("/graphql", json={"extensions": apq("not-a-hash")})
    assert garbage.status_code == 400


async def test_apq_can_be_turned_off(make_client: AppFactory) -> None:
    client = await make_client(apq=False)
    response = await client.post("/graphql", json={"extensions": apq(document_hash(QUERY))})
    assert response.status_code == 200
    assert response.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_SUPPORTED"


async def test_production_runs_trusted_documents_only(
    make_client: AppFactory, tmp_path: Path
) -> None:
    client = await make_client(mode="production")
    manifest = tmp_path / "persisted-query-manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "format": "apollo-persisted-query-manifest",
                "version": 1,
                "operations": [
                    {"id": document_hash(QUERY), "name": "Nothing", "type": "query", "body": QUERY}
                ],
            }
        )
    )
    await trust(client.services.db, read_manifest(manifest))

    by_hash = await client.post("/graphql", json={"extensions": apq(document_hash(QUERY))})
    assert by_hash.json() == {"data": {"entity": None}}
    by_text = await client.post("/graphql", json={"query": QUERY})
    assert by_text.json() == {"data": {"entity": None}}

    other = "{ facets(field: KIND) { value } }"
    refused = await client.post("/graphql", json={"query": other})
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["extensions"]["code"] == "OPERATION_NOT_TRUSTED"
    registering = await client.post(
        "/graphql", json={"query": other, "extensions": apq(document_hash(other))}
    )
    assert registering.json()["errors"][0]["extensions"]["code"] == "OPERATION_NOT_TRUSTED"
    unknown = await client.post("/graphql", json={"extensions": apq(document_hash(other))})
    assert unknown.json()["errors"][0]["message"] == "PersistedQueryNotFound"


def test_bad_manifests_are_refused(tmp_path: Path) -> None:
    import pytest

    path = tmp_path / "m.json"
    for content, message in (
        ("{not json", "cannot read"),
        (
            '{"format": "other", "version": 1, "operations": []}',
            "not an Apollo persisted-query manifest",
        ),
        (
            json.dumps(
                {
                    "format": "apollo-persisted-query-manifest",
                    "version": 1,
                    "operations": [{"id": "0" * 64, "body": QUERY}],
                }
            ),
            "not the SHA-256",
        ),
    ):
        path.write_text(content)
        with pytest.raises(ValueError, match=message):
            read_manifest(path)


@pytest.mark.parametrize(
    ("method", "headers", "body"),
    [
        ("GET", {}, None),
        ("GET", {"content-type": "text/plain"}, None),
        ("GET", {"apollo-require-preflight": ""}, None),  # present but empty
        ("POST", {"content-type": "application/x-www-form-urlencoded"}, b"query=%7Bx%7D"),
        ("POST", {"content-type": "text/plain; charset=utf-8"}, b'{"query": "{ __typename }"}'),
        ("POST", {"content-type": "multipart/form-data; boundary=x"}, b"--x--"),
        ("POST", {"content-type": "TEXT/Plain"}, b'{"query": "{ __typename }"}'),
    ],
)
async def test_requests_a_browser_sends_cross_site_are_refused(
    client: Client, method: str, headers: dict[str, str], body: bytes | None
) -> None:
    """Apollo Server's CSRF rule: no Content-Type, or one a browser sends without a preflight,
    and no preflight header either."""
    response = await client.request(
        method,
        "/graphql",
        params={"query": QUERY} if method == "GET" else None,
        content=body,
        headers=headers,
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["extensions"]["code"] == "CSRF_PREVENTED"
    assert await client.services.db.fetchval("select count(*) from persisted_queries") == 0


@pytest.mark.parametrize(
    "headers",
    [
        # Apollo Client (web) sends this on every request, GETs included, and nothing else.
        {"content-type": "application/json"},
        {"apollo-require-preflight": "true"},
        {"x-apollo-operation-name": "Q"},  # Apollo iOS and Kotlin
        {"graphql-require-preflight": "1"},  # the GraphQL-over-HTTP draft's own
        {"content-type": "text/plain", "apollo-require-preflight": "true"},
        {"content-type": "not a media type"},  # unparsable: no browser sends it unpreflighted
    ],
)
async def test_clients_headers_pass_csrf_prevention(
    client: Client, headers: dict[str, str]
) -> None:
    response = await client.get("/graphql", params={"query": QUERY}, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"data": {"entity": None}}


async def test_csrf_prevention_can_be_turned_off(make_client: AppFactory) -> None:
    client = await make_client(csrf_prevention=False)
    response = await client.get("/graphql", params={"query": QUERY})
    assert response.status_code == 200
