"""Change hooks through GraphQL: for admins only, the secret never returned nor audited, the
URL checked, kinds read as the catalog spells them, pausing, deleting; mutations are writers
of the outbox too; the outbox's backlog in /metrics."""

from __future__ import annotations

from typing import Any

import pytest

from resolvers.changes import create_change_hook
from sources.auth import create_token
from sources.changes.secrets import SecretBox
from sources.db import Database
from sources.errors import ChangeHookError
from tests.conftest import AppFactory, Client

SECRET = "a secret only the receiver knows"
KEY = "a key of at least sixteen characters"
LOCAL = {"change_hooks_allowed_networks": ["127.0.0.1/32"], "change_hooks_key": KEY}

CREATE = """
mutation($url: String!, $secret: String!, $kinds: [String!]) {
  createChangeHook(url: $url, secret: $secret, kinds: $kinds) {
    id url kinds paused failing lastError lastDeliveredAt pendingDeliveries failedDeliveries
    createdBy
  }
}
"""
HOOKS = "{ changeHooks { id url kinds paused failing pendingDeliveries } }"
COMPONENT = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout}
spec: {type: service, lifecycle: production, owner: team-a}
"""


def error_code(body: dict[str, Any]) -> str:
    return str(body["errors"][0]["extensions"]["code"])


async def create(client: Client, token: str, **variables: Any) -> dict[str, Any]:
    values = {"url": "http://127.0.0.1:9/events", "secret": SECRET, **variables}
    return await client.gql(CREATE, values, token=token, expect_errors=True)


async def test_an_admin_registers_a_hook_whose_secret_is_never_shown(
    make_client: AppFactory,
) -> None:
    client = await make_client(**LOCAL)
    token = await client.admin_token()
    body = await create(client, token, kinds=["component", "GROUP"])
    hook = body["data"]["createChangeHook"]
    assert hook["url"] == "http://127.0.0.1:9/events"
    assert hook["kinds"] == ["Component", "Group"]
    assert (hook["paused"], hook["failing"], hook["pendingDeliveries"]) == (False, False, 0)
    assert hook["createdBy"] == "token:tests"

    listed = await client.gql(HOOKS, token=token)
    assert [h["id"] for h in listed["data"]["changeHooks"]] == [hook["id"]]
    schema = await client.gql('{ __type(name: "ChangeHook") { fields { name } } }')
    assert not [f for f in schema["data"]["__type"]["fields"] if "secret" in f["name"].lower()]

    db: Database = client.services.db
    stored = await db.fetchrow("select secret, secret_sealed from change_hooks")
    assert stored["secret_sealed"] and SECRET.encode() not in stored["secret"]
    audit = await db.fetch("select row_to_json(a)::text as line from audit_log a")
    assert audit and all(SECRET not in r["line"] for r in audit)
    entry = await db.fetchrow(
        "select arguments, outcome from audit_log where action = 'changes.createChangeHook'"
    )
    assert entry["outcome"] == "allowed"
    assert entry["arguments"]["secret"] == "(secret, not recorded)"


async def test_only_admins_may_see_or_change_hooks(make_client: AppFactory) -> None:
    client = await make_client(**LOCAL)
    db: Database = client.services.db
    _, writer = await create_token(db, "writer", ["read", "write"], "group:default/team-a")
    assert error_code(await create(client, writer)) == "FORBIDDEN"
    assert (
        error_code(
            await client.gql(CREATE, {"url": "http://x", "secret": SECRET}, expect_errors=True)
        )
        == "UNAUTHENTICATED"
    )
    assert error_code(await client.gql(HOOKS, token=writer, expect_errors=True)) == "FORBIDDEN"
    assert await db.fetchval("select count(*) from change_hooks") == 0
    denied = await db.fetchval(
        "select count(*) from audit_log where action = 'changes.createChangeHook' and outcome = 'denied'"
    )
    assert denied == 2  # the writer's attempt and the anonymous one


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"url": "http://169.254.169.254/latest/meta-data/"}, "not a public address"),
        ({"url": "http://10.0.0.5/events"}, "not a public address"),
        ({"url": "gopher://127.0.0.1/"}, "only http and https"),
        ({"url": "http://8.8.8.8/\x18events"}, "url: Invalid non-printable ASCII character"),
        ({"url": "http://8.8.8.8/a\x7fb"}, "url: Invalid non-printable ASCII character"),
        ({"secret": "short"}, "secret: 16 to 1000 characters"),
        ({"kinds": ["widget"]}, "unknown kind"),
        ({"kinds": []}, "name at least one kind"),
    ],
)
async def test_what_cannot_be_a_hook_is_refused_and_nothing_is_stored(
    make_client: AppFactory, variables: dict[str, Any], message: str
) -> None:
    client = await make_client(**LOCAL)
    body = await create(client, await client.admin_token(), **variables)
    assert error_code(body) == "BAD_USER_INPUT" and message in body["errors"][0]["message"]
    assert await client.services.db.fetchval("select count(*) from change_hooks") == 0


async def test_loopback_is_refused_unless_a_setting_allows_it(make_client: AppFactory) -> None:
    client = await make_client()
    body = await create(client, await client.admin_token())
    assert "ATRIUM_CHANGE_HOOKS_ALLOWED_NETWORKS" in body["errors"][0]["message"]


async def test_production_without_a_key_registers_no_hook(db: Database) -> None:
    with pytest.raises(ChangeHookError, match="ATRIUM_CHANGE_HOOKS_KEY is not set"):
        await create_change_hook(
            db,
            SecretBox(None),
            url="http://127.0.0.1:9/",
            secret=SECRET,
            kinds=None,
            created_by="test",
            allowed=[],
            resolve_within=5.0,
            production=True,
        )
    assert await db.fetchval("select count(*) from change_hooks") == 0


async def test_pause_resume_redeliver_and_delete(make_client: AppFactory) -> None:
    client = await make_client(**LOCAL, change_hooks_interval=3600)
    token = await client.admin_token()
    hook_id = (await create(client, token))["data"]["createChangeHook"]["id"]
    for mutation, paused in (("pauseChangeHook", True), ("resumeChangeHook", False)):
        body = await client.gql(
            f"mutation($id: ID!) {{ {mutation}(id: $id) {{ id paused }} }}",
            {"id": hook_id},
            token=token,
        )
        assert body["data"][mutation] == {"id": hook_id, "paused": paused}
    redelivered = await client.gql(
        "mutation($id: ID!) { redeliverChangeHook(id: $id) { failedDeliveries } }",
        {"id": hook_id},
        token=token,
    )
    assert redelivered["data"]["redeliverChangeHook"] == {"failedDeliveries": 0}

    missing = await client.gql(
        'mutation { pauseChangeHook(id: "999") { id } }', token=token, expect_errors=True
    )
    assert error_code(missing) == "NOT_FOUND"
    malformed = await client.gql(
        'mutation { pauseChangeHook(id: "x1") { id } }', token=token, expect_errors=True
    )
    assert error_code(malformed) == "BAD_USER_INPUT"

    delete = "mutation($id: ID!) { deleteChangeHook(id: $id) }"
    assert (await client.gql(delete, {"id": hook_id}, token=token))["data"] == {
        "deleteChangeHook": True
    }
    assert (await client.gql(delete, {"id": hook_id}, token=token))["data"] == {
        "deleteChangeHook": False
    }
    assert (await client.gql(HOOKS, token=token))["data"]["changeHooks"] == []


async def test_mutations_write_the_outbox_and_metrics_count_it(make_client: AppFactory) -> None:
    # No delivery here (the job looks once an hour): the rows stay to be counted.
    client = await make_client(**LOCAL, change_hooks_interval=3600)
    token = await client.admin_token()
    await create(client, token)
    applied = await client.gql(
        "mutation($y: String!) { applyEntities(yaml: $y) { errors { message } } }",
        {"y": COMPONENT},
        token=token,
    )
    assert applied["data"]["applyEntities"]["errors"] == []
    deleted = await client.gql(
        'mutation { deleteEntity(ref: "component:checkout") { deleted } }', token=token
    )
    assert deleted["data"]["deleteEntity"]["deleted"]
    rows = await client.services.db.fetch("select ref, type from change_deliveries order by id")
    assert [tuple(r) for r in rows] == [
        ("component:default/checkout", "entity.created"),
        ("component:default/checkout", "entity.deleted"),
    ]
    hooks = await client.gql(HOOKS, token=token)
    assert hooks["data"]["changeHooks"][0]["pendingDeliveries"] == 2
    metrics = (await client.get("/metrics")).text
    assert 'atrium_change_deliveries{state="pending"} 2.0' in metrics
    assert 'atrium_change_deliveries{state="failed"} 0.0' in metrics
