"""Stars through GraphQL: starring and unstarring, who may, the audit log, the viewer's list,
and cached answers that show stars."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sources.auth import create_token
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client

STAR = "mutation($ref: String!) { starEntity(ref: $ref) { ref viewerStarred } }"
UNSTAR = "mutation($ref: String!) { unstarEntity(ref: $ref) { ref viewerStarred } }"
STARRED = "query($n: Int!) { viewer { starred(first: $n) { ref } } }"
LIST = """query Services {
  entities(filter: {kind: ["component"]}, first: 50) { nodes { ref viewerStarred } }
}"""
# Of every kind: an answer any catalog change drops, but no one's stars.
PUBLIC_LIST = """query Everything {
  entities(first: 50) { nodes { ref title } }
}"""


def catalog(names: list[str]) -> str:
    return "\n---\n".join(
        "apiVersion: backstage.io/v1alpha1\nkind: Component\n"
        f"metadata: {{name: {name}}}\nspec: {{type: service, lifecycle: production, owner: team}}"
        for name in names
    )


@pytest.fixture
async def shop(client: Client) -> Client:
    batch = parse_documents(catalog(["cart", "checkout", "search", "web"]), "shop.yaml")
    assert not (await apply_batch(client.services.db, batch)).errors
    return client


async def starred(client: Client, user: str, n: int = 50) -> list[str]:
    body = await client.gql(STARRED, {"n": n}, user=user)
    return [entity["ref"] for entity in body["data"]["viewer"]["starred"]]


async def audit(client: Client) -> list[dict[str, Any]]:
    rows = await client.services.db.fetch(
        "select actor, action, target_ref, outcome, arguments, before, after, message"
        " from audit_log order by id"
    )
    return [dict(row) for row in rows]


async def test_star_and_unstar_are_idempotent(shop: Client) -> None:
    for _ in range(2):
        body = await shop.gql(STAR, {"ref": "Component:Cart"}, user="ada")
        assert body["data"]["starEntity"] == {
            "ref": "component:default/cart",
            "viewerStarred": True,
        }
    assert await starred(shop, "ada") == ["component:default/cart"]
    for _ in range(2):
        body = await shop.gql(UNSTAR, {"ref": "component:cart"}, user="ada")
        assert body["data"]["unstarEntity"]["viewerStarred"] is False
    assert await starred(shop, "ada") == []
    assert await shop.services.db.fetchval("select count(*) from stars") == 0


async def test_the_viewer_sees_their_stars_newest_first(shop: Client) -> None:
    for name in ("web", "cart", "search"):
        await shop.gql(STAR, {"ref": f"component:{name}"}, user="ada")
    await shop.gql(STAR, {"ref": "component:checkout"}, user="bob")
    # Starring again keeps a star's place.
    await shop.gql(STAR, {"ref": "component:web"}, user="ada")
    refs = ["component:default/search", "component:default/cart", "component:default/web"]
    assert await starred(shop, "ada") == refs
    assert await starred(shop, "ada", 2) == refs[:2]
    assert await starred(shop, "ada", 0) == []
    assert await starred(shop, "bob") == ["component:default/checkout"]
    nobody = await shop.gql("{ viewer { starred { ref } } }")
    assert nobody["data"]["viewer"]["starred"] == []
    too_many = await shop.gql(STARRED, {"n": 1000}, user="ada", expect_errors=True)
    assert too_many["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_stars_of_missing_entities_are_left_out_until_they_return(shop: Client) -> None:
    for name in ("cart", "web", "search"):
        await shop.gql(STAR, {"ref": f"component:{name}"}, user="ada")
    token = await shop.admin_token()
    await shop.gql('mutation { deleteEntity(ref: "component:web") { deleted } }', token=token)
    # The deleted entity does not count against first: two existing stars still come.
    assert await starred(shop, "ada", 2) == ["component:default/search", "component:default/cart"]
    batch = parse_documents(catalog(["web"]), "web.yaml")
    assert not (await apply_batch(shop.services.db, batch)).errors
    assert await starred(shop, "ada") == [
        "component:default/search",
        "component:default/web",
        "component:default/cart",
    ]


async def test_viewer_starred_is_each_persons_own(shop: Client) -> None:
    await shop.gql(STAR, {"ref": "component:cart"}, user="ada")
    for user, expected in (("ada", True), ("bob", False), (None, False)):
        body = await shop.gql('{ entity(ref: "component:cart") { viewerStarred } }', user=user)
        assert body["data"]["entity"]["viewerStarred"] is expected, user


async def test_anonymous_callers_are_refused_and_audited(shop: Client) -> None:
    for mutation, action in ((STAR, "catalog.starEntity"), (UNSTAR, "catalog.unstarEntity")):
        body = await shop.gql(mutation, {"ref": "component:cart"}, expect_errors=True)
        [error] = body["errors"]
        assert error["extensions"]["code"] == "UNAUTHENTICATED"
        assert body["data"] is None
        [row] = [r for r in await audit(shop) if r["action"] == action]
        assert (row["actor"], row["outcome"]) == ("anonymous", "denied")
        assert row["target_ref"] == "component:default/cart"
    assert await shop.services.db.fetchval("select count(*) from stars") == 0


async def test_only_people_with_the_right_to_write_may_star(shop: Client) -> None:
    db = shop.services.db
    _, reader = await create_token(db, "reader", ["read"], "user:default/ada")
    _, team = await create_token(db, "team-bot", ["write"], "group:default/team")
    _, writer = await create_token(db, "ada-cli", ["write"], "user:default/ada")
    for token in (reader, team, await shop.admin_token()):
        body = await shop.gql(STAR, {"ref": "component:cart"}, token=token, expect_errors=True)
        assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN", token
    body = await shop.gql(STAR, {"ref": "component:cart"}, token=writer)
    assert body["data"]["starEntity"]["viewerStarred"] is True
    # A token acting as a person stars for that person.
    assert await starred(shop, "ada") == ["component:default/cart"]
    outcomes = [r["outcome"] for r in await audit(shop)]
    assert outcomes == ["denied", "denied", "denied", "allowed"]


async def test_starring_needs_no_ownership_and_is_audited(shop: Client) -> None:
    # The owning team of every component is "team"; ada is in no team at all.
    await shop.gql(STAR, {"ref": "component:cart"}, user="ada")
    await shop.gql(STAR, {"ref": "component:cart"}, user="ada")
    await shop.gql(UNSTAR, {"ref": "component:cart"}, user="ada")
    rows = await audit(shop)
    assert [(r["action"], r["outcome"]) for r in rows] == [
        ("catalog.starEntity", "allowed"),
        ("catalog.starEntity", "allowed"),
        ("catalog.unstarEntity", "allowed"),
    ]
    assert {r["actor"] for r in rows} == {"user:default/ada"}
    assert {r["target_ref"] for r in rows} == {"component:default/cart"}
    states = [(r["before"], r["after"]) for r in rows]
    assert states == [
        ({"starred": False}, {"starred": True}),
        ({"starred": True}, {"starred": True}),
        ({"starred": True}, {"starred": False}),
    ]
    assert rows[0]["arguments"] == {"ref": "component:cart"}


async def test_unknown_and_malformed_refs_are_client_errors(shop: Client) -> None:
    cases = [
        ("component:nope", "NOT_FOUND", "no entity component:default/nope"),
        ("cart", "BAD_USER_INPUT", "needs a kind"),
        ("widget:cart", "BAD_USER_INPUT", "unknown kind"),
    ]
    for ref, code, message in cases:
        for mutation in (STAR, UNSTAR):
            body = await shop.gql(mutation, {"ref": ref}, user="ada", expect_errors=True)
            [error] = body["errors"]
            assert error["extensions"]["code"] == code, (ref, error)
            assert message in error["message"]
    rows = await audit(shop)
    assert len(rows) == 6 and {r["outcome"] for r in rows} == {"failed"}
    assert await shop.services.db.fetchval("select count(*) from stars") == 0


async def persisted(client: Client, query: str, user: str | None = None) -> dict[str, Any]:
    headers = {"X-Forwarded-User": user} if user else {}
    response = await client.persisted_get(query, headers=headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    return body


def shown(body: dict[str, Any]) -> dict[str, bool]:
    nodes = body["data"]["entities"]["nodes"]
    return {node["ref"].rpartition("/")[2]: node["viewerStarred"] for node in nodes}


def hits(client: Client) -> int:
    return int(client.services.caches.stats.counts.get(("response", "hit"), 0))


async def test_a_star_shows_at_once_in_cached_answers_of_that_person_only(shop: Client) -> None:
    assert shop.services.responses is not None
    response = await shop.persisted_get(LIST, headers={"X-Forwarded-User": "ada"})
    assert response.headers["cache-control"] == "max-age=60, private"
    for user in ("ada", "bob"):
        assert not any(shown(await persisted(shop, LIST, user)).values())
    public = await persisted(shop, PUBLIC_LIST)
    before = hits(shop)
    assert (await persisted(shop, LIST, "ada")) and hits(shop) == before + 1, "kept"

    await shop.gql(STAR, {"ref": "component:cart"}, user="ada")
    after_star = hits(shop)
    assert shown(await persisted(shop, LIST, "ada"))["cart"] is True
    assert hits(shop) == after_star, "ada's answer was dropped and computed again"
    # Bob's answer and the public one did not depend on ada's stars: still kept, unchanged.
    assert not any(shown(await persisted(shop, LIST, "bob")).values())
    assert await persisted(shop, PUBLIC_LIST) == public
    assert hits(shop) == after_star + 2
    assert await starred(shop, "ada") == ["component:default/cart"]

    # Starring what is starred changes nothing, and drops nothing.
    await shop.gql(STAR, {"ref": "component:cart"}, user="ada")
    assert shown(await persisted(shop, LIST, "ada"))["cart"] is True
    assert hits(shop) == after_star + 3
    await shop.gql(UNSTAR, {"ref": "component:cart"}, user="ada")
    assert shown(await persisted(shop, LIST, "ada"))["cart"] is False


async def test_the_viewers_list_is_dropped_with_their_stars(shop: Client) -> None:
    query = "query Mine { viewer { starred { ref } } }"
    assert (await persisted(shop, query, "ada"))["data"]["viewer"]["starred"] == []
    await shop.gql(STAR, {"ref": "component:web"}, user="ada")
    body = await persisted(shop, query, "ada")
    assert body["data"]["viewer"]["starred"] == [{"ref": "component:default/web"}]
    # The entity going away drops the list too.
    token = await shop.admin_token()
    await shop.gql('mutation { deleteEntity(ref: "component:web") { deleted } }', token=token)
    assert (await persisted(shop, query, "ada"))["data"]["viewer"]["starred"] == []


async def test_a_star_on_one_replica_drops_the_answers_of_another(
    make_client: AppFactory, redis_url: str, cache_prefix: str
) -> None:
    a = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    b = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    batch = parse_documents(catalog(["cart", "web"]), "shop.yaml")
    assert not (await apply_batch(a.services.db, batch)).errors
    for replica in (a, b):
        assert shown(await persisted(replica, LIST, "ada")) == {"cart": False, "web": False}
    await b.gql(STAR, {"ref": "component:web"}, user="ada")
    assert shown(await persisted(b, LIST, "ada"))["web"] is True
    for _ in range(100):  # the change reaches a over pub/sub
        if shown(await persisted(a, LIST, "ada"))["web"]:
            break
        await asyncio.sleep(0.02)
    assert shown(await persisted(a, LIST, "ada")) == {"cart": False, "web": True}
