"""The whole-response cache of persisted queries: hits, what drops an answer, visibility,
replicas sharing Redis, and Redis going away."""

from __future__ import annotations

import asyncio
from typing import Any

from loaders.announce import publish_invalidation
from loaders.memory import CacheStats
from loaders.responses import CachedAnswer, ResponseCache, etag_of
from loaders.shared import SharedRedis
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client, redis_server

PAGE = """query Page($ref: String!) {
  entity(ref: $ref) {
    ref title
    ... on Component { owner { ref } dependencies { ref } dependents { ref } }
  }
}"""
LIST = """query Services {
  entities(filter: {kind: ["component"], type: ["service"]}, first: 100) {
    edges { node { ref } }
  }
}"""
APPLY = "mutation($y: String!, $l: String!) { applyEntities(yaml: $y, location: $l) { created updated } }"
COMPONENT = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: {name}, title: {title}}}
spec: {{type: service, lifecycle: production, owner: team-a{extra}}}
"""


def component(name: str, title: str, depends_on: str | None = None) -> str:
    extra = f", dependsOn: [{depends_on}]" if depends_on else ""
    return COMPONENT.format(name=name, title=title, extra=extra)


def hits(client: Client, level: str = "response") -> int:
    return int(client.services.caches.stats.counts.get((level, "hit"), 0))


async def page(client: Client, ref: str, **headers: str) -> dict[str, Any]:
    response = await client.persisted_get(PAGE, {"ref": ref}, headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body["data"]["entity"]  # type: ignore[no-any-return]


async def apply(client: Client, yaml: str, location: str = "c.yaml") -> None:
    token = await client.admin_token()
    await client.gql(APPLY, {"y": yaml, "l": location}, token=token)


async def test_a_persisted_get_is_answered_without_executing(demo_client: Client) -> None:
    first = await demo_client.persisted_get(PAGE, {"ref": "component:checkout"})
    queries = demo_client.services.db.queries
    before = hits(demo_client)
    second = await demo_client.persisted_get(PAGE, {"ref": "component:checkout"})
    assert second.content == first.content and second.headers["etag"] == first.headers["etag"]
    assert hits(demo_client) == before + 1
    assert demo_client.services.db.queries == queries, "no SQL at all for a cached answer"
    # Other variables are another answer.
    other = await page(demo_client, "component:tracking-service")
    assert other["ref"] == "component:default/tracking-service"
    assert hits(demo_client) == before + 1


async def test_an_answer_is_dropped_when_data_it_contains_changes(client: Client) -> None:
    await apply(client, component("cart", "Cart"))
    await apply(client, component("web", "Web"), "web.yaml")
    assert (await page(client, "component:cart"))["title"] == "Cart"
    assert (await page(client, "component:web"))["title"] == "Web"
    before = hits(client)
    # The entity itself changes.
    await apply(client, component("cart", "Basket"))
    assert (await page(client, "component:cart"))["title"] == "Basket"
    # Another entity starts depending on it: its dependents (a reverse relation) change.
    await apply(client, component("web", "Web", depends_on="component:cart"), "web.yaml")
    cart = await page(client, "component:cart")
    assert cart["dependents"] == [{"ref": "component:default/web"}]
    assert (await page(client, "component:web"))["dependencies"] == [
        {"ref": "component:default/cart"}
    ]
    assert hits(client) == before, "every answer above was stale and recomputed"
    assert (await page(client, "component:web"))["title"] == "Web"
    assert hits(client) == before + 1


async def test_a_list_is_dropped_when_an_entity_of_its_kind_appears(client: Client) -> None:
    await apply(client, component("cart", "Cart"))
    listed = await client.persisted_get(LIST)
    assert [e["node"]["ref"] for e in listed.json()["data"]["entities"]["edges"]] == [
        "component:default/cart"
    ]
    await apply(client, component("web", "Web"), "web.yaml")
    listed = await client.persisted_get(LIST)
    assert [e["node"]["ref"] for e in listed.json()["data"]["entities"]["edges"]] == [
        "component:default/cart",
        "component:default/web",
    ]
    # A deletion too.
    token = await client.admin_token()
    deleted = await client.gql(
        'mutation { deleteEntity(ref: "component:web") { deleted } }', token=token
    )
    assert deleted["data"]["deleteEntity"]["deleted"] is True
    listed = await client.persisted_get(LIST)
    assert len(listed.json()["data"]["entities"]["edges"]) == 1


async def test_private_answers_are_kept_for_their_viewer_only(demo_client: Client) -> None:
    query = "{ viewer { ref } }"
    for _ in range(2):
        for user in ("ada", "bob"):
            response = await demo_client.persisted_get(query, headers={"X-Forwarded-User": user})
            assert response.json() == {"data": {"viewer": {"ref": f"user:default/{user}"}}}
    # ada's registration (a POST) kept her answer; bob's first GET computed his.
    assert hits(demo_client) == 3
    anonymous = await demo_client.persisted_get(query)
    assert anonymous.json() == {"data": {"viewer": {"ref": None}}}


async def test_without_the_response_cache_every_get_executes(make_client: AppFactory) -> None:
    client = await make_client(response_cache=False)
    await apply(client, component("cart", "Cart"))
    assert client.services.responses is None
    await page(client, "component:cart")
    queries = client.services.db.queries
    await page(client, "component:cart")
    assert client.services.db.queries > queries  # relations are read again
    assert hits(client) == 0


async def test_an_answer_computed_across_a_change_is_served_but_not_kept() -> None:
    cache = ResponseCache(
        max_entries=10, max_bytes=10_000, shared=SharedRedis(None, "t", CacheStats())
    )
    body = b'{"data":{}}'
    answer = CachedAnswer(body, etag_of(body), 60, False, 0.0)
    started = cache.begin()
    cache.drop_local(["component:default/cart"])
    # It read the entity that changed, or a list of its kind: not kept.
    assert not await cache.put("a", answer, {"component:default/cart"}, started)
    assert not await cache.put("b", answer, {"kind:component"}, started)
    assert not await cache.put("c", answer, {"catalog"}, started)
    # Unrelated data is kept.
    assert await cache.put("d", answer, {"api:default/other"}, started)
    assert await cache.get("a") is None and await cache.get("d") is not None
    # Dropping by tag forgets the index too.
    cache.drop_local(["api:default/other"])
    assert await cache.get("d") is None and not cache._by_tag


async def test_replicas_share_answers_and_drop_them_together(
    make_client: AppFactory, redis_url: str, cache_prefix: str
) -> None:
    a = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    b = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    await apply(a, component("cart", "Cart"))
    assert (await page(a, "component:cart"))["title"] == "Cart"
    queries = b.services.db.queries
    assert (await page(b, "component:cart"))["title"] == "Cart"
    assert hits(b, "response-l2") == 1, "b found a's answer in Redis"
    assert b.services.db.queries == queries + 1, "only b's lookup of the document by hash"
    await apply(b, component("cart", "Basket"))
    assert (await page(b, "component:cart"))["title"] == "Basket"
    for _ in range(100):  # the change reaches a over pub/sub
        if (await page(a, "component:cart"))["title"] == "Basket":
            break
        await asyncio.sleep(0.02)
    assert (await page(a, "component:cart"))["title"] == "Basket"


async def test_redis_going_away_leaves_answers_correct(
    make_client: AppFactory, cache_prefix: str
) -> None:
    with redis_server() as url:
        client = await make_client(redis_url=url, cache_prefix=cache_prefix)
        await apply(client, component("cart", "Cart"))
        assert (await page(client, "component:cart"))["title"] == "Cart"
    before = hits(client)
    assert (await page(client, "component:cart"))["title"] == "Cart"
    assert hits(client) == before + 1, "served from L1 without Redis"
    await apply(client, component("cart", "Basket"))
    assert (await page(client, "component:cart"))["title"] == "Basket"
    metrics = (await client.get("/metrics")).text
    assert 'atrium_cache_lookups{level="response",outcome="hit"}' in metrics
    assert 'atrium_cache_lookups{level="l2",outcome="error"}' in metrics


async def test_writes_announced_by_another_process_drop_answers(
    make_client: AppFactory, redis_url: str, cache_prefix: str
) -> None:
    client = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    await apply(client, component("cart", "Cart"))
    assert (await page(client, "component:cart"))["title"] == "Cart"
    # As `atrium catalog import` does: write, then announce what changed.
    result = await apply_batch(
        client.services.db, parse_documents(component("cart", "Basket"), "c.yaml")
    )
    await publish_invalidation(redis_url, cache_prefix, result.affected)
    for _ in range(100):
        if (await page(client, "component:cart"))["title"] == "Basket":
            break
        await asyncio.sleep(0.02)
    assert (await page(client, "component:cart"))["title"] == "Basket"


async def test_documents_never_cached_are_not_looked_up(demo_client: Client) -> None:
    runs = "{ ldapSyncRuns { id } }"
    for _ in range(3):
        assert (await demo_client.persisted_get(runs)).headers["cache-control"] == "no-store"
    counts = demo_client.services.caches.stats.counts
    # The first request looked (the document was new); the others knew better.
    assert counts.get(("response", "miss"), 0) == 1
    assert counts.get(("response", "hit"), 0) == 0
