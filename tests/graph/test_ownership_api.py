"""Ownership and access control through GraphQL, with people from a real slapd."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sources.auth import create_token, revoke_token
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from sources.ldap.config import PRESETS, DirectoryConfig
from sources.ldap.sync import sync_directory
from tests.conftest import AppFactory, Client
from tests.slapd import (
    GROUPS_DN,
    ROOT_DN,
    ROOT_PASSWORD,
    USERS_DN,
    group,
    group_dn,
    person,
    start_slapd,
    user_dn,
)

# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


DIRECTORY = "\n".join(
    [
        person("ada", "Ada Lovelace"),
        person("grace", "Grace Hopper"),
        person("zoe", "Zoe Sre"),
        person("mallory", "Mallory Sales"),
        person("root", "Root Admin"),
        group("engineering", [group_dn("platform"), user_dn("ada")]),
        group("platform", [group_dn("sre"), user_dn("grace")]),
        group("sre", [user_dn("zoe")]),
        group("sales", [user_dn("mallory")]),
        group("admins", [user_dn("root")]),
    ]
)
CATALOG = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: payments}
spec: {type: service, lifecycle: production, owner: platform}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: runbooks}
spec: {type: website, lifecycle: production, owner: sre}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: billing}
spec: {type: service, lifecycle: production, owner: sales}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: zoes-tool}
spec: {type: library, lifecycle: experimental, owner: user:zoe}
"""
DELETE = "mutation($ref: String!) { deleteEntity(ref: $ref) { ref deleted } }"


@pytest.fixture
async def org(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Client]:
    server = start_slapd(tmp_path / "slapd", DIRECTORY)
    try:
        client: Client = await make_client()
        config = DirectoryConfig(
            url=server.url,
            users_dn=USERS_DN,
            groups_dn=GROUPS_DN,
            attributes=PRESETS["openldap"],
            bind_dn=ROOT_DN,
            bind_password=ROOT_PASSWORD,
        )
        report = await sync_directory(client.services.db, config, brake=0.1)
        assert report.outcome == "succeeded"
        assert not (
            await apply_batch(client.services.db, parse_documents(CATALOG, "c.yaml"))
        ).errors
        yield client
    finally:
        server.stop()


def error_code(body: dict[str, Any]) -> str:
    return body["errors"][0]["extensions"]["code"]  # type: ignore[no-any-return]


async def test_ownership_names_owner_people_and_chain(org: Client) -> None:
    query = """{ ownership(ref: "component:payments") {
        ownerRef owner { ref } members { ref } chain { ref } } }"""
    found = (await org.gql(query))["data"]["ownership"]
    assert found["owner"] == {"ref": "group:default/platform"}
    # grace directly, zoe through sre, which is nested in platform.
    assert sorted(m["ref"] for m in found["members"]) == ["user:default/grace", "user:default/zoe"]
    assert [g["ref"] for g in found["chain"]] == ["group:default/engineering"]


async def test_what_a_person_owns_through_any_group(org: Client) -> None:
    query = """query($ref: String!, $t: Boolean!) {
        entitiesOwnedBy(ref: $ref, transitive: $t) { totalCount nodes { ref } } }"""
    zoe = (await org.gql(query, {"ref": "user:zoe", "t": True}))["data"]["entitiesOwnedBy"]
    assert sorted(n["ref"] for n in zoe["nodes"]) == [
        "component:default/payments",
        "component:default/runbooks",
        "component:default/zoes-tool",
    ]
    assert zoe["totalCount"] == 3
    direct = (await org.gql(query, {"ref": "zoe", "t": False}))["data"]["entitiesOwnedBy"]
    assert [n["ref"] for n in direct["nodes"]] == ["component:default/zoes-tool"]
    platform = (await org.gql(query, {"ref": "group:platform", "t": True}))["data"][
        "entitiesOwnedBy"
    ]
    assert sorted(n["ref"] for n in platform["nodes"]) == [
        "component:default/payments",
        "component:default/runbooks",
    ]


async def test_viewer_from_the_proxy_header(org: Client) -> None:
    query = "{ viewer { ref authenticatedBy isAdmin user { ref } groups { ref } } }"
    zoe = (await org.gql(query, user="Zoe"))["data"]["viewer"]
    assert zoe["ref"] == "user:default/zoe" and zoe["authenticatedBy"] == "proxy"
    assert sorted(g["ref"] for g in zoe["groups"]) == [
        "group:default/engineering",
        "group:default/platform",
        "group:default/sre",
    ]
    assert zoe["isAdmin"] is False and zoe["user"] == {"ref": "user:default/zoe"}
    assert (await org.gql(query, user="root"))["data"]["viewer"]["isAdmin"] is True
    nobody = (await org.gql(query))["data"]["viewer"]
    assert nobody == {
        "ref": None,
        "authenticatedBy": "anonymous",
        "isAdmin": False,
        "user": None,
        "groups": [],
    }


async def test_a_non_owner_is_denied_and_audited(org: Client) -> None:
    body = await org.gql(DELETE, {"ref": "component:payments"}, user="mallory", expect_errors=True)
    assert error_code(body) == "FORBIDDEN"
    assert "owned by group:default/platform" in body["errors"][0]["message"]
    assert (
        await org.services.db.fetchval("select count(*) from entities where name = 'payments'") == 1
    )
    row = await org.services.db.fetchrow("select * from audit_log")
    assert (row["actor"], row["action"], row["target_ref"], row["outcome"]) == (
        "user:default/mallory",
        "catalog.deleteEntity",
        "component:default/payments",
        "denied",
    )


async def test_a_member_of_a_nested_sub_group_of_the_owner_is_allowed(org: Client) -> None:
    body = await org.gql(DELETE, {"ref": "component:payments"}, user="zoe")
    assert body["data"]["deleteEntity"] == {"ref": "component:default/payments", "deleted": True}
    row = await org.services.db.fetchrow("select * from audit_log")
    assert (row["actor"], row["outcome"]) == ("user:default/zoe", "allowed")
    assert row["before"]["owner_ref"] == "group:default/platform"
    assert row["after"] is None
    assert row["arguments"] == {"ref": "component:payments"}


async def test_admins_may_change_anything(org: Client) -> None:
    body = await org.gql(DELETE, {"ref": "component:billing"}, user="root")
    assert body["data"]["deleteEntity"]["deleted"] is True


async def test_anonymous_mutations_are_unauthenticated(org: Client) -> None:
    body = await org.gql(DELETE, {"ref": "component:payments"}, expect_errors=True)
    assert error_code(body) == "UNAUTHENTICATED"


async def test_the_user_header_is_believed_only_from_trusted_proxies(
    make_client: AppFactory, org: Client
) -> None:
    untrusting = await make_client(trusted_proxies=["10.0.0.0/8"])
    body = await untrusting.gql(
        DELETE, {"ref": "component:payments"}, user="zoe", expect_errors=True
    )
    assert error_code(body) == "UNAUTHENTICATED"
    viewer = await untrusting.gql("{ viewer { ref } }", user="zoe")
    assert viewer["data"]["viewer"]["ref"] is None


async def test_tokens_act_within_their_scopes(org: Client) -> None:
    db = org.services.db
    _, reader = await create_token(db, "dashboard", ["read"], None)
    _, sre_writer = await create_token(db, "sre-bot", ["read", "write"], "group:default/sre")
    _, sales_writer = await create_token(db, "sales-bot", ["write"], "group:default/sales")

    read_only = await org.gql(
        DELETE, {"ref": "component:runbooks"}, token=reader, expect_errors=True
    )
    # A token is someone known: what it may not do is FORBIDDEN, with the scope it lacks.
    assert error_code(read_only) == "FORBIDDEN", read_only
    assert "needs a token with the write scope" in read_only["errors"][0]["message"]
    _, no_subject = await create_token(db, "loose-bot", ["write"], None)
    acting_as_no_one = await org.gql(
        DELETE, {"ref": "component:runbooks"}, token=no_subject, expect_errors=True
    )
    assert error_code(acting_as_no_one) == "FORBIDDEN", acting_as_no_one
    assert "acting as a user or group" in acting_as_no_one["errors"][0]["message"]
    wrong_team = await org.gql(
        DELETE, {"ref": "component:runbooks"}, token=sales_writer, expect_errors=True
    )
    assert error_code(wrong_team) == "FORBIDDEN"
    allowed = await org.gql(DELETE, {"ref": "component:runbooks"}, token=sre_writer)
    assert allowed["data"]["deleteEntity"]["deleted"] is True
    # A group token may act for groups nested below the owner too: sre is inside platform.
    assert (await org.gql(DELETE, {"ref": "component:payments"}, token=sre_writer))["data"]
    actors = [r["actor"] for r in await db.fetch("select actor from audit_log order by id")]
    assert actors[-1] == "token:sre-bot (group:default/sre)"


async def test_bad_and_revoked_tokens_are_401(org: Client) -> None:
    token_id, token = await create_token(org.services.db, "old", ["read"], None)
    assert (
        await org.post(
            "/graphql",
            json={"query": "{ viewer { ref } }"},
            headers={"authorization": f"Bearer {token}"},
        )
    ).status_code == 200
    assert await revoke_token(org.services.db, token_id)
    # As `atrium token revoke` announces it (replicas keep verified tokens for a moment).
    await org.services.invalidate([f"token:{token_id}"])
    for value in (
        f"Bearer {token}",
        "Bearer atr_nope_nope",
        "Bearer garbage",
        "Basic dXNlcjpwYXNz",
    ):
        response = await org.post(
            "/graphql", json={"query": "{ viewer { ref } }"}, headers={"authorization": value}
        )
        assert response.status_code == 401, value
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_anonymous_reading_can_be_turned_off(make_client: AppFactory) -> None:
    closed = await make_client(anonymous_read=False)
    response = await closed.post("/graphql", json={"query": "{ __typename }"})
    assert response.status_code == 401
    token = await closed.admin_token()
    assert (await closed.gql("{ __typename }", token=token))["data"] == {"__typename": "Query"}
    assert (await closed.gql("{ viewer { ref } }", user="someone"))["data"]["viewer"][
        "ref"
    ] == "user:default/someone"


async def test_the_audit_log_is_for_admins(org: Client) -> None:
    await org.gql(DELETE, {"ref": "component:payments"}, user="mallory", expect_errors=True)
    await org.gql(DELETE, {"ref": "component:payments"}, user="grace")
    query = "query($t: String) { auditLog(target: $t) { actor outcome before after message } }"
    denied = await org.gql(query, {"t": "component:payments"}, user="grace", expect_errors=True)
    assert error_code(denied) == "FORBIDDEN"
    entries = (await org.gql(query, {"t": "component:payments"}, user="root"))["data"]["auditLog"]
    assert [(e["actor"], e["outcome"]) for e in entries] == [
        ("user:default/grace", "allowed"),
        ("user:default/mallory", "denied"),
    ]
    assert entries[0]["before"]["name"] == "payments" and entries[0]["after"] is None


async def test_apply_entities_is_for_admins(org: Client) -> None:
    mutation = 'mutation { applyEntities(yaml: "") { unchanged } }'
    assert error_code(await org.gql(mutation, user="zoe", expect_errors=True)) == "FORBIDDEN"
    assert (await org.gql(mutation, user="root"))["data"]["applyEntities"]["unchanged"] == 0


async def test_sync_runs_in_graphql_and_metrics(org: Client) -> None:
    runs = (
        await org.gql("{ ldapSyncRuns { outcome added usersRead groupsRead skipped warnings } }")
    )["data"]["ldapSyncRuns"]
    assert runs == [
        {
            "outcome": "succeeded",
            "added": 10,
            "usersRead": 5,
            "groupsRead": 5,
            "skipped": 0,
            "warnings": [],
        }
    ]
    metrics = (await org.get("/metrics")).text
    assert 'atrium_ldap_sync_runs{outcome="succeeded"} 1.0' in metrics
    assert 'atrium_ldap_sync_last{figure="added"} 10.0' in metrics


async def test_a_token_is_looked_up_once_per_moment_and_revocation_reaches_replicas(
    make_client: AppFactory, redis_url: str, cache_prefix: str
) -> None:
    from loaders.announce import publish_invalidation

    client = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    token_id, token = await create_token(client.services.db, "tool", ["read"], None)
    headers = {"authorization": f"Bearer {token}"}
    ask = {"query": "{ viewer { authenticatedBy } }"}
    assert (await client.post("/graphql", json=ask, headers=headers)).status_code == 200
    queries = client.services.db.queries
    for _ in range(5):
        assert (await client.post("/graphql", json=ask, headers=headers)).status_code == 200
    assert client.services.db.queries == queries, "no token lookup while it is fresh"
    # Another token's secret with this id is not taken for it.
    forged = f"atr_{token_id}_{'x' * 43}"
    assert (
        await client.post("/graphql", json=ask, headers={"authorization": f"Bearer {forged}"})
    ).status_code == 401
    assert await revoke_token(client.services.db, token_id)
    await publish_invalidation(redis_url, cache_prefix, [f"token:{token_id}"])  # as the CLI
    for _ in range(100):
        if (await client.post("/graphql", json=ask, headers=headers)).status_code == 401:
            break
        await asyncio.sleep(0.02)
    assert (await client.post("/graphql", json=ask, headers=headers)).status_code == 401
