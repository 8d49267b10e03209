"""Webhooks into the deployments plugin, over real HTTP to uvicorn, signed as GitHub signs them:
histories built from deployment events, replays, reordering, bad signatures, unknown
components, oversized and malformed bodies, and Atrium's own JSON for other CD systems."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from tests.conftest import AppFactory
from tests.plugins.deploy_env import (
    LATE_COMPONENT,
    WEBHOOK_SECRET,
    Env,
    GitHub,
    deploy_env,
    eventually,
    github_event,
    signed,
)

# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    async with deploy_env(make_client, tmp_path) as environment:
        yield environment


async def _untried(env: Env) -> bool:
    """The plugin tried the waiting events since the catalog last changed."""
    return not env.client.services.extras["deployments"].catalog_changed


async def _events(env: Env) -> int:
    return int(await env.client.services.db.fetchval("select count(*) from deployment_events"))


async def test_a_github_deployment_and_its_statuses_make_one_deploy(env: Env) -> None:
    ping = await env.github.send("ping", {"zen": "Keep it logically awesome.", "hook_id": 1})
    assert ping.status_code == 200 and ping.json() == {"outcome": "pong"}

    payload = {
        "version": "2.4.0",
        "commit_time": "2026-11-20T14:00:00Z",
        "artifact": "registry.example/checkout@sha256:" + "a" * 64,
        "build_url": "https://ci.example/builds/77",
    }
    created = await env.github.send("deployment", github_event("deployment", payload=payload))
    assert created.status_code == 200, created.text
    assert created.json()["outcome"] == "applied" and created.json()["state"] == "pending"
    [deploy] = await env.deploys()
    assert deploy["state"] == "PENDING" and deploy["stage"] == "production"
    assert deploy["release"] == {
        "version": "2.4.0",
        "commitSha": "f95f852bd8fca8fcc58a9a2d6c842781e32a215e",
        "commitTime": "2026-11-20T14:00:00+00:00",
        "artifact": "registry.example/checkout@sha256:" + "a" * 64,
        "buildUrl": "https://ci.example/builds/77",
        "createdBy": "octo-deployer",
    }
    for state, expected in (("queued", "PENDING"), ("in_progress", "IN_PROGRESS")):
        await env.github.send(
            "deployment_status", github_event("deployment_status", state=state, payload=payload)
        )
        assert (await env.deploys())[0]["state"] == expected
    done = await env.github.send(
        "deployment_status",
        github_event(
            "deployment_status", state="success", payload=payload, at="2026-11-20T15:30:00Z"
        ),
    )
    assert done.json()["state"] == "succeeded"
    [deploy] = await env.deploys()
    assert deploy["state"] == "SUCCEEDED" and deploy["actor"] == "octo-deployer"
    assert deploy["finishedAt"] == "2026-11-20T15:30:00+00:00"
    assert deploy["startedAt"] == "2026-11-20T15:20:53+00:00"
    assert deploy["url"] == "https://github.com/juniper/checkout-service/actions/runs/8812345"
    assert deploy["source"] == "github" and deploy["isRollback"] is False

    pipeline = await env.client.gql(
        """{ entity(ref: "component:checkout") { ... on Component { pipeline { source stages {
            name production workload { cluster namespace name } current { release { version } } } } } } }"""
    )
    stages = pipeline["data"]["entity"]["pipeline"]
    assert stages["source"] == "CATALOG"
    assert [(s["name"], s["production"]) for s in stages["stages"]] == [
        ("canary", False),
        ("staging", False),
        ("production", True),
    ]
    assert stages["stages"][2]["current"] == {"release": {"version": "2.4.0"}}
    assert stages["stages"][0]["workload"] == {
        "cluster": "east",
        "namespace": "shop",
        "name": "checkout-canary",
    }
    # Every accepted delivery is kept raw; the ping and its kind are not deploy events.
    rows = await env.client.services.db.fetch(
        "select event, body, component_ref, outcome from deployment_events order by id"
    )
    assert [r["event"] for r in rows] == ["deployment", *["deployment_status"] * 3]
    assert {r["component_ref"] for r in rows} == {"component:default/checkout"}
    assert json.loads(rows[0]["body"])["deployment"]["payload"]["version"] == "2.4.0"


async def test_a_replayed_delivery_changes_nothing_and_late_events_never_move_back(
    env: Env,
) -> None:
    success = github_event("deployment_status", state="success", at="2026-11-20T15:30:00Z")
    first = await env.github.send("deployment_status", success, delivery="d-1")
    assert first.json()["outcome"] == "applied"
    again = await env.github.send("deployment_status", success, delivery="d-1")
    assert again.status_code == 200 and again.json() == {"outcome": "duplicate"}
    assert await _events(env) == 1

    # Arriving after the success: the deployment itself, and a stale in_progress.
    late = await env.github.send("deployment", github_event("deployment"), delivery="d-2")
    stale = await env.github.send(
        "deployment_status",
        github_event("deployment_status", state="in_progress", at="2026-11-20T15:21:00Z"),
        delivery="d-3",
    )
    assert late.json()["outcome"] == stale.json()["outcome"] == "unchanged"
    [deploy] = await env.deploys()
    assert deploy["state"] == "SUCCEEDED" and deploy["finishedAt"] == "2026-11-20T15:30:00+00:00"
    # GitHub marks a deploy inactive when a newer one replaces it: a finished one stays as it is.
    inactive = await env.github.send(
        "deployment_status", github_event("deployment_status", state="inactive")
    )
    assert inactive.json()["outcome"] == "unchanged"
    # While in flight, inactive is a cancellation.
    await env.github.send("deployment", github_event("deployment", deployment_id=7, ref="v2"))
    await env.github.send(
        "deployment_status", github_event("deployment_status", deployment_id=7, state="inactive")
    )
    states = {d["release"]["version"]: d["state"] for d in await env.deploys()}
    assert states == {"main": "SUCCEEDED", "v2": "CANCELLED"}
    assert await _events(env) == 6


async def test_bad_signatures_are_refused_and_store_nothing(env: Env) -> None:
    body = json.dumps(github_event("deployment")).encode()
    wrong = GitHub(env.base, secret="not the secret")
    try:
        assert (await wrong.send("deployment", body)).status_code == 401
    finally:
        await wrong.close()
    headers = env.github.headers("deployment", body)
    tampered = body.replace(b"checkout-service", b"checkout-servicf")
    answer = await env.github.http.post(env.github.url, content=tampered, headers=headers)
    assert answer.status_code == 401 and "X-Hub-Signature-256" in answer.json()["error"]
    del headers["X-Hub-Signature-256"]  # the SHA-1 signature alone is not enough
    answer = await env.github.http.post(env.github.url, content=body, headers=headers)
    assert answer.status_code == 401
    # Atrium's own endpoint checks its own secret, not GitHub's.
    own = await env.github.http.post(
        f"{env.base}/hooks/deployments",
        content=body,
        headers={
            "X-Atrium-Delivery": "x",
            "X-Atrium-Signature-256": env.github.headers("deployment", body)["X-Hub-Signature-256"],
        },
    )
    assert own.status_code == 401
    assert await _events(env) == 0 and await env.deploys() == []


async def test_oversized_and_malformed_bodies_are_refused_with_reasons(env: Env) -> None:
    big = github_event("deployment", payload={"notes": "x" * 70_000})
    answer = await env.github.send("deployment", big)
    assert answer.status_code == 413 and "65536" in answer.json()["error"]

    for raw, why in (
        (b"{not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"deployment": {"id": 1}}).encode(), "no repository"),
        (
            json.dumps(github_event("deployment_status", state="exploded")).encode(),
            "exploded",
        ),
        (
            json.dumps(github_event("deployment", ref="ma\u0000in"))
            .encode()
            .replace(b"ma\\u0000in", b"ma\\u0000in"),
            "NUL",
        ),
    ):
        answer = await env.github.send("deployment_status", raw)
        assert answer.status_code == 400, raw[:60]
        assert why in answer.json()["error"], answer.json()
    missing = await env.github.http.post(
        env.github.url,
        content=b"{}",
        headers={
            k: v for k, v in env.github.headers("deployment", b"{}").items() if "Delivery" not in k
        },
    )
    assert missing.status_code == 400 and "X-GitHub-Delivery" in missing.json()["error"]
    assert await _events(env) == 0

    # Other events are acknowledged, not kept; a form-encoded hook is read like a JSON one.
    push = await env.github.send("push", {"ref": "refs/heads/main"})
    assert push.status_code == 200 and push.json()["outcome"] == "ignored"
    form = urlencode({"payload": json.dumps(github_event("deployment"))}).encode()
    headers = env.github.headers("deployment", form)
    headers["Content-Type"] = "application/x-www-form-urlencoded"
    answer = await env.github.http.post(env.github.url, content=form, headers=headers)
    assert answer.status_code == 200 and answer.json()["outcome"] == "applied"
    assert await _events(env) == 1


async def test_an_event_for_an_unknown_component_waits_for_it(env: Env) -> None:
    body = github_event("deployment_status", state="success", repository="juniper/ledger")
    answer = await env.github.send("deployment_status", body)
    assert answer.status_code == 202 and answer.json() == {"outcome": "waiting"}
    await env.client.gql('{ entity(ref: "component:ledger") { ref } }')
    assert await _events(env) == 1

    db = env.client.services.db
    await eventually(lambda: _untried(env))  # tried once: nothing to attach it to yet
    token = await env.client.admin_token()
    await env.client.gql(
        "mutation($y: String!) { applyEntities(yaml: $y) { created } }",
        {"y": LATE_COMPONENT},
        token=token,
    )

    async def attached() -> bool:
        return [d["state"] for d in await env.deploys("component:ledger")] == ["SUCCEEDED"]

    await eventually(attached)  # the plugin's job attaches it (every 0.1 s here)
    row = await db.fetchrow("select component_ref, attached_at, outcome from deployment_events")
    assert row["component_ref"] == "component:default/ledger" and row["attached_at"] is not None


async def test_other_cd_systems_post_atriums_own_json(env: Env) -> None:
    event = {
        "component": "component:default/checkout",
        "stage": "staging",
        "deploy": {"id": "argo-4711", "state": "in_progress", "actor": "argo-cd"},
        "release": {"version": "2.5.0", "commitSha": "9f2c", "artifact": "reg/checkout:2.5.0"},
    }
    assert (await env.hook(event)).json()["state"] == "in_progress"
    event["deploy"] |= {"state": "succeeded", "at": "2026-11-21T10:00:00Z"}
    assert (await env.hook(event)).json()["state"] == "succeeded"
    [deploy] = await env.deploys()
    assert (deploy["stage"], deploy["state"], deploy["actor"]) == (
        "staging",
        "SUCCEEDED",
        "argo-cd",
    )
    assert deploy["release"]["artifact"] == "reg/checkout:2.5.0"

    bad = await env.hook({**event, "deploy": {"id": "x", "state": "exploded"}})
    assert bad.status_code == 400 and "deploy.state" in bad.json()["error"]
    raw = json.dumps(event).encode()
    unsigned = await env.github.http.post(
        f"{env.base}/hooks/deployments", content=raw, headers={"X-Atrium-Delivery": "u"}
    )
    assert unsigned.status_code == 401
    good = signed(WEBHOOK_SECRET, raw)
    assert (
        await env.github.http.post(
            f"{env.base}/hooks/deployments",
            content=raw,
            headers={"X-Atrium-Delivery": "v", "X-Atrium-Signature-256": good},
        )
    ).json()["outcome"] == "unchanged"
    unknown = await env.hook({**event, "component": "component:default/nothing-here"})
    assert unknown.status_code == 202


async def test_many_deliveries_at_once_are_all_applied(env: Env) -> None:
    """More concurrent deliveries than the pool has connections: each transaction holds one
    connection and waits for no other, so none starves."""
    pool = env.client.services.settings.database_pool_max
    count = pool * 4
    sending = asyncio.gather(
        *(
            env.github.send(
                "deployment_status",
                github_event(
                    "deployment_status", deployment_id=1000 + n, ref=f"r{n}", state="success"
                ),
            )
            for n in range(count)
        )
    )
    answers = await asyncio.wait_for(sending, 30)  # a starved pool would hang, not fail
    assert [a.status_code for a in answers] == [200] * count
    deploys = await env.deploys()
    assert len(deploys) == count and {d["state"] for d in deploys} == {"SUCCEEDED"}
