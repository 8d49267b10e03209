"""Backstage's catalog REST API through the ASGI app: who may read, what hostile input gets,
SQL per request, kept answers and what drops them, caching headers, metrics."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import EXAMPLES, AppFactory, Client, demo_batch

API = "/api/catalog"
CHECKOUT = f"{API}/entities/by-name/component/default/checkout"


def refused(response: httpx.Response, status: int, name: str) -> str:
    """The message of an error in Backstage's shape."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"]["name"] == name
    assert body["response"] == {"statusCode": status}
    assert body["request"]["method"] == response.request.method
    assert body["request"]["url"].startswith(API)
    return str(body["error"]["message"])


async def snapshot(client: Client) -> list[Any]:
    rows = await client.services.db.fetch("select ref, hash, updated_at from entities order by ref")
    return [tuple(row) for row in rows]


HOSTILE = [
    ("filter", "kind=component\x00", "NUL"),
    ("filter", "metadata.name=" + "x" * 20_000, "at most 200 characters"),
    ("filter", "status.items=x", "not a field Atrium can filter on"),
    ("filter", "=x", "not a valid statement"),
    ("filter", ",".join(["kind=a"] * 200), "at most 100 statements"),
    ("fields", "metadata[0]", "array type fields are not supported"),
    ("order", "sideways:metadata.name", "Invalid order parameter"),
    ("order", "asc:spec.profile.email", "cannot order by"),
    ("limit", "-1", "Invalid limit"),
    ("limit", "ten", "not an integer"),
    ("offset", "99999999999", "Invalid offset"),
    ("after", "not-a-cursor!", "not a cursor this API issued"),
]


async def test_hostile_input_is_a_clear_input_error_and_touches_nothing(
    demo_client: Client,
) -> None:
    before = await snapshot(demo_client)
    for name, value, message in HOSTILE:
        response = await demo_client.get(f"{API}/entities", params={name: value})
        assert message in refused(response, 400, "InputError"), (name, value)
    # Quotes and LIKE's characters are values like any other: they match nothing here.
    for value in (
        "metadata.name=x' or '1'='1",
        'kind=component"; drop table entities; --',
        "spec.owner=%_\\",
        "metadata.annotations.x=%",
    ):
        response = await demo_client.get(f"{API}/entities", params={"filter": value})
        assert response.status_code == 200 and response.json() == [], value
    # What PostgreSQL cannot store, in a path.
    for path in (
        "/entities/by-name/component/default/check%00out",
        "/locations/by-entity/component/default/check%00out",
        "/entities/by-name/component/default/checkout%00/ancestry",
    ):
        assert "NUL" in refused(await demo_client.get(API + path), 400, "InputError"), path
    assert await snapshot(demo_client) == before
    assert (await demo_client.get("/readyz")).status_code == 200


async def test_cursors_are_checked_before_any_sql(demo_client: Client) -> None:
    import base64

    forged = base64.urlsafe_b64encode(b'{"f":[],"o":"name","k":"a\\u0000","r":"x"}').decode()
    for cursor in ("garbage", forged, "x" * 20_000):
        response = await demo_client.get(f"{API}/entities/by-query", params={"cursor": cursor})
        assert "not a cursor this API issued" in refused(response, 400, "InputError")


async def test_not_found_is_backstages_not_found(demo_client: Client) -> None:
    response = await demo_client.get(f"{API}/entities/by-name/component/default/nothing")
    assert "No entity named 'nothing'" in refused(response, 404, "NotFoundError")
    response = await demo_client.get(f"{API}/entities/by-uid/not-a-uid")
    refused(response, 404, "NotFoundError")
    refused(await demo_client.get(f"{API}/locations/0000"), 404, "NotFoundError")
    refused(await demo_client.get(f"{API}/no/such/route"), 404, "NotFoundError")
    # Predicate queries (POST by-query) are not Atrium's: a route it does not have.
    response = await demo_client.post(f"{API}/entities/by-query", json={"query": {}})
    refused(response, 404, "NotFoundError")
    response = await demo_client.post(
        f"{API}/entities/by-refs", json={"entityRefs": [], "query": {"kind": "x"}}
    )
    assert "predicate" in refused(response, 400, "InputError")


async def test_by_uid_finds_what_by_name_gave_the_uid_of(demo_client: Client) -> None:
    entity = (await demo_client.get(CHECKOUT)).json()
    again = await demo_client.get(f"{API}/entities/by-uid/{entity['metadata']['uid']}")
    assert again.json() == entity


async def test_anonymous_reading_off_refuses_nobody_and_serves_a_token(
    make_client: AppFactory,
) -> None:
    client = await make_client(anonymous_read=False)
    message = refused(await client.get(f"{API}/entities"), 401, "AuthenticationError")
    assert "anonymous reading is off" in message
    response = await client.get(f"{API}/entities", headers={"authorization": "Bearer atr_x_y"})
    assert refused(response, 401, "AuthenticationError")
    assert response.headers["www-authenticate"] == "Bearer"
    token = await client.admin_token()
    bearer = {"authorization": f"Bearer {token}"}
    allowed = await client.get(f"{API}/entities?limit=10", headers=bearer)
    assert allowed.status_code == 200 and allowed.json() == []
    # The trusted proxy's user, as for /graphql (the tests' client is 127.0.0.1).
    proxied = await client.get(f"{API}/locations", headers={"x-forwarded-user": "amelia.chen"})
    assert proxied.status_code == 200
    # Shared caches must not hand such answers to anyone: private.
    assert allowed.headers["cache-control"] == "max-age=60, private"
    streamed = await client.get(f"{API}/entities", headers=bearer)
    assert streamed.json() == [] and streamed.headers["cache-control"] == "no-store"


async def queries(client: Client, url: str) -> int:
    """SQL statements one request sends, with every in-process cache cold."""
    client.services.caches.clear_local()
    before = client.services.db.queries
    response = await client.get(url)
    assert response.status_code == 200, response.text
    return int(client.services.db.queries - before)


async def test_sql_per_request_does_not_grow_with_the_page(make_client: AppFactory) -> None:
    client = await make_client(response_cache=False)
    from sources.catalog.store import apply_batch

    assert not (await apply_batch(client.services.db, demo_batch())).errors
    # The page and its entities' relations: two statements, for 1 entity or 50.
    one = await queries(client, f"{API}/entities?filter=kind=component&limit=1")
    fifty = await queries(client, f"{API}/entities?filter=kind=component&limit=50")
    assert one == fifty == 2
    # Their relations now in the in-process cache, the page alone.
    before = client.services.db.queries
    assert (await client.get(f"{API}/entities?filter=kind=component&limit=50")).status_code == 200
    assert client.services.db.queries - before == 1
    # Without relations in the fields, the page alone.
    assert await queries(client, f"{API}/entities?limit=50&fields=metadata.name") == 1
    # by-query counts too (the kind's count is read from the counts table).
    assert await queries(client, f"{API}/entities/by-query?filter=kind=user&limit=50") == 3
    assert await queries(client, CHECKOUT) == 2  # the entity, its relations
    refs = {"entityRefs": ["component:default/checkout", "group:default/checkout-team"] * 20}
    client.services.caches.clear_local()
    before = client.services.db.queries
    assert (await client.post(f"{API}/entities/by-refs", json=refs)).status_code == 200
    assert client.services.db.queries - before == 2
    # Warm, the entity and its relations come from the in-process cache.
    before = client.services.db.queries
    assert (await client.get(CHECKOUT)).status_code == 200
    assert client.services.db.queries == before


async def test_kept_answers_are_dropped_when_the_entity_changes(demo_client: Client) -> None:
    first = await demo_client.get(CHECKOUT)
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "max-age=60, public"
    before = demo_client.services.db.queries
    again = await demo_client.get(CHECKOUT, headers={"if-none-match": etag})
    assert again.status_code == 304 and demo_client.services.db.queries == before
    listed = await demo_client.get(f"{API}/entities?filter=kind=component&limit=100")
    assert "Renamed" not in listed.text

    yaml = (EXAMPLES / "components" / "checkout.yaml").read_text()
    changed = yaml.replace("title: Checkout Service", "title: Renamed Checkout", 1)
    assert changed != yaml
    token = await demo_client.admin_token()
    location = str(EXAMPLES / "components" / "checkout.yaml")
    applied = await demo_client.gql(
        "mutation($y: String!, $l: String!) { applyEntities(yaml: $y, location: $l) { updated } }",
        {"y": changed, "l": location},
        token=token,
    )
    assert "component:default/checkout" in applied["data"]["applyEntities"]["updated"]

    fresh = await demo_client.get(CHECKOUT, headers={"if-none-match": etag})
    assert fresh.status_code == 200 and fresh.json()["metadata"]["title"] == "Renamed Checkout"
    assert fresh.json()["metadata"]["etag"] != first.json()["metadata"]["etag"]
    listed = await demo_client.get(f"{API}/entities?filter=kind=component&limit=100")
    assert "Renamed Checkout" in listed.text


async def test_the_link_header_leads_through_every_page(demo_client: Client) -> None:
    url: str | None = f"{API}/entities?filter=kind=system&limit=3&fields=metadata.name"
    names: list[str] = []
    while url:
        response = await demo_client.get(url)
        names += [e["metadata"]["name"] for e in response.json()]
        link = response.headers.get("link")
        url = link[1 : link.index(">")] if link else None
    everything = (await demo_client.get(f"{API}/entities?filter=kind=system")).json()
    assert names == [e["metadata"]["name"] for e in everything] and len(names) > 3


async def test_requests_are_counted_by_route_and_status(demo_client: Client) -> None:
    await demo_client.get(CHECKOUT)
    await demo_client.get(f"{API}/entities/by-name/component/default/nothing")
    await demo_client.get(f"{API}/entities?filter=nope=1")
    metrics = (await demo_client.get("/metrics")).text
    route = 'route="GET /entities/by-name/{kind}/{namespace}/{name}"'
    assert f'atrium_catalog_api_requests_total{{{route},status="200"}} 1.0' in metrics
    assert f'atrium_catalog_api_requests_total{{{route},status="404"}} 1.0' in metrics
    assert 'atrium_catalog_api_requests_total{route="GET /entities",status="400"} 1.0' in metrics
    assert f"atrium_catalog_api_request_duration_seconds_count{{{route}}} 2.0" in metrics


async def test_graphql_filters_by_annotation(demo_client: Client) -> None:
    body = await demo_client.gql(
        "query($a: JSON) { entities(filter: {annotations: $a}) { totalCount nodes { ref } } }",
        {"a": {"backstage.io/kubernetes-id": "checkout"}},
    )
    rows = await demo_client.services.db.fetch(
        "select ref from entities where annotations->>'backstage.io/kubernetes-id' = 'checkout'"
    )
    found = body["data"]["entities"]
    assert [n["ref"] for n in found["nodes"]] == [r["ref"] for r in rows]
    assert found["totalCount"] == len(rows) > 0
    wrong = await demo_client.gql(
        "{ entities(filter: {annotations: [1]}) { totalCount } }", expect_errors=True
    )
    assert "annotations must be an object of strings" in wrong["errors"][0]["message"]


async def test_facets_under_any_filter_count_what_it_matches(demo_client: Client) -> None:
    keys = ["relations.ownedBy", "metadata.labels.tier", "spec.system", "metadata.tags", "kind"]
    response = await demo_client.get(
        f"{API}/entity-facets",
        params={"facet": keys, "filter": "kind=component,spec.lifecycle=production"},
    )
    facets = response.json()["facets"]
    db = demo_client.services.db
    where = "kind = 'Component' and lower(lifecycle) = 'production'"
    expected = {
        "relations.ownedBy": f"select owner_ref as v from entities where {where}",
        "metadata.labels.tier": f"select labels->>'tier' as v from entities where {where}",
        "spec.system": f"select spec->>'system' as v from entities where {where}",
        "metadata.tags": f"select unnest(tags) as v from entities where {where}",
        "kind": f"select kind as v from entities where {where}",
    }
    for key, values in expected.items():
        rows = await db.fetch(
            f"select v, count(*) from ({values}) x where v is not null group by v "
            "order by 2 desc, 1"
        )
        assert facets[key] == [{"value": r[0], "count": r[1]} for r in rows], key
        assert facets[key], key
    # GraphQL's facets under the same kind of filter (counted row by row, not from the
    # counts table).
    body = await demo_client.gql(
        '{ facets(field: OWNER, filter: {kind: ["component"], lifecycle: ["production"]},'
        " first: 100) { value count } }"
    )
    assert body["data"]["facets"] == facets["relations.ownedBy"]
