"""Alerts and silences against a real Alertmanager (Debian's): alerts posted to it show on
their component (by its service label, or its selector annotation) and on the owning team;
a silence created through GraphQL suppresses them and expiring it releases them; a non-owner
is refused both, and the audit log keeps every attempt; Alertmanager stopped leaves a 200
answer whose alerts are null with UNAVAILABLE."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from plugins.observability import ObservabilityPlugin
from plugins.observability.settings import ObservabilitySettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.alertmanager import RunningAlertmanager, alertmanager
from tests.conftest import AppFactory, Client

ORG = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team, members: [alice], children: [team-a-sre]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a-sre}
spec: {type: team, members: [bob]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-b}
spec: {type: team, members: [mallory]}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout}
spec: {type: service, lifecycle: production, owner: team-a-sre}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: ledger
  annotations: {atrium.dev/alert-selector: 'app="ledger-api", env=~"prod|canary"'}
spec: {type: service, lifecycle: production, owner: team-a}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: search}
spec: {type: service, lifecycle: production, owner: team-b}
"""
ALERTS = """query($ref: String!) { entity(ref: $ref) { name
  ... on Component { alerts { name severity state summary runbookUrl silencedBy labels } }
  ... on Group { alerts { name state } } } }"""
SILENCE = """mutation($ref: String!, $name: String, $why: String!) {
  createSilence(ref: $ref, alertName: $name, durationSeconds: 3600, comment: $why) {
    id matchers createdBy } }"""
EXPIRE = "mutation($id: String!) { expireSilence(id: $id) }"


@pytest.fixture
async def env(
    make_client: AppFactory, tmp_path: Path
) -> AsyncIterator[tuple[Client, RunningAlertmanager]]:
    with alertmanager(tmp_path / "alertmanager") as am:
        am.fire(
            {
                "labels": {"alertname": "HighErrorRate", "service": "checkout", "severity": "page"},
                "annotations": {"summary": "5% of checkouts fail", "runbook_url": "https://rb/1"},
            },
            {"labels": {"alertname": "SlowP99", "service": "checkout", "severity": "ticket"}},
            {"labels": {"alertname": "LedgerLag", "app": "ledger-api", "env": "prod"}},
            {"labels": {"alertname": "LedgerLag", "app": "ledger-api", "env": "staging"}},
            {"labels": {"alertname": "IndexStale", "service": "search"}},
        )
        settings = ObservabilitySettings(alertmanager_url=am.url, observability_timeout=2.0)
        client: Client = await make_client(plugins=[ObservabilityPlugin(settings)])
        assert not (await apply_batch(client.services.db, parse_documents(ORG, "o.yaml"))).errors
        yield client, am


async def _alerts(client: Client, ref: str) -> list[dict[str, Any]]:
    body = await client.gql(ALERTS, {"ref": ref})
    return body["data"]["entity"]["alerts"]  # type: ignore[no-any-return]


async def test_alerts_show_on_their_component_and_team(
    env: tuple[Client, RunningAlertmanager],
) -> None:
    client, _ = env
    checkout = await _alerts(client, "component:checkout")
    assert sorted(a["name"] for a in checkout) == ["HighErrorRate", "SlowP99"]
    high = next(a for a in checkout if a["name"] == "HighErrorRate")
    assert (high["severity"], high["state"], high["summary"], high["runbookUrl"]) == (
        "page",
        "ACTIVE",
        "5% of checkouts fail",
        "https://rb/1",
    )
    # ledger's selector: app="ledger-api" in prod or canary, not staging.
    ledger = await _alerts(client, "component:ledger")
    assert [a["labels"]["env"] for a in ledger] == ["prod"]
    # team-a owns ledger, and checkout through team-a-sre.
    team = await _alerts(client, "group:team-a")
    assert sorted(a["name"] for a in team) == ["HighErrorRate", "LedgerLag", "SlowP99"]
    assert [a["name"] for a in await _alerts(client, "group:team-b")] == ["IndexStale"]


async def test_owners_silence_their_alerts_and_expire_the_silence(
    env: tuple[Client, RunningAlertmanager],
) -> None:
    client, _ = env
    variables = {"ref": "component:checkout", "name": "HighErrorRate", "why": "deploying a fix"}
    denied = await client.gql(SILENCE, variables, user="mallory", expect_errors=True)
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    body = await client.gql(SILENCE, variables, user="bob")
    silence = body["data"]["createSilence"]
    assert silence["createdBy"] == "user:default/bob"
    assert {"name": "service", "value": "checkout", "isRegex": False, "isEqual": True} in silence[
        "matchers"
    ]

    async def states() -> dict[str, tuple[str, list[str]]]:
        found = await _alerts(client, "component:checkout")
        return {a["name"]: (a["state"], a["silencedBy"]) for a in found}

    for _ in range(50):
        if (await states())["HighErrorRate"][0] == "SUPPRESSED":
            break
        await asyncio.sleep(0.05)
    assert (await states())["HighErrorRate"] == ("SUPPRESSED", [silence["id"]])
    assert (await states())["SlowP99"] == ("ACTIVE", [])  # its own alert only

    refused = await client.gql(EXPIRE, {"id": silence["id"]}, user="mallory", expect_errors=True)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    # alice's team-a is above checkout's owner, team-a-sre: not hers to change either.
    above = await client.gql(EXPIRE, {"id": silence["id"]}, user="alice", expect_errors=True)
    assert above["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert (await client.gql(EXPIRE, {"id": silence["id"]}, user="bob"))["data"] == {
        "expireSilence": True
    }
    for _ in range(50):
        if (await states())["HighErrorRate"][0] == "ACTIVE":
            break
        await asyncio.sleep(0.05)
    assert (await states())["HighErrorRate"] == ("ACTIVE", [])

    rows = await client.services.db.fetch(
        "select actor, action, outcome from audit_log order by id"
    )
    assert [(r["actor"], r["action"], r["outcome"]) for r in rows] == [
        ("user:default/mallory", "observability.createSilence", "denied"),
        ("user:default/bob", "observability.createSilence", "allowed"),
        ("user:default/mallory", "observability.expireSilence", "denied"),
        ("user:default/alice", "observability.expireSilence", "denied"),
        ("user:default/bob", "observability.expireSilence", "allowed"),
    ]


async def test_alertmanager_stopped_leaves_the_page_and_says_which_backend(
    env: tuple[Client, RunningAlertmanager],
) -> None:
    client, am = env
    am.stop()
    body = await client.gql(ALERTS, {"ref": "component:checkout"}, expect_errors=True)
    assert body["data"]["entity"] == {"name": "checkout", "alerts": None}
    [error] = body["errors"]
    assert error["extensions"]["code"] == "UNAVAILABLE" and "alertmanager" in error["message"]
