"""Promoting and rolling back: a PinApp-bound stage rolls its PinApp through PinCompute's
workloads service (merge patch to the emulated cluster) and follows the rollout from the
informer; other stages ask the CD system by a signed webhook and wait for its events."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from tests.conftest import AppFactory
from tests.plugins.deploy_env import CD_SECRET, Env, deploy_env, eventually, free_port

# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


PROMOTE = """mutation($c: String!, $r: String!, $s: String!) {
  promoteRelease(component: $c, release: $r, stage: $s) { id state stage isRollback actor
    release { version artifact } } }"""
ROLLBACK = """mutation($c: String!, $s: String!, $to: String) {
  rollbackStage(component: $c, stage: $s, toRelease: $to) { id state isRollback
    release { version } } }"""


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    async with deploy_env(make_client, tmp_path, deployments_progress_deadline=1.5) as e:
        yield e


async def _release(env: Env, version: str, stage: str = "staging") -> None:
    """A release the CI built and the staging CD deployed (Atrium's own webhook)."""
    event = {
        "component": "component:checkout",
        "stage": stage,
        "deploy": {"id": f"ci-{version}-{stage}", "state": "succeeded"},
        "release": {
            "version": version,
            "commitSha": hashlib.sha1(version.encode()).hexdigest(),
            "artifact": f"registry.example/checkout:{version}",
        },
    }
    assert (await env.hook(event)).json()["outcome"] == "applied"


async def _state(env: Env, deploy_id: str) -> str:
    body = await env.client.gql(f'{{ deploy(id: "{deploy_id}") {{ state message }} }}')
    return str(body["data"]["deploy"]["state"])


def _rolled_out(env: Env, name: str) -> Any:
    """The controller's part: every replica updated and ready (a status written after the
    patch, as the emulated API server keeps no generation)."""
    app = env.east.get("pinapps", "shop", name)
    replicas = app["spec"]["replicas"]
    available = {
        "type": "Available",
        "status": "True",
        "lastTransitionTime": datetime.now(UTC).isoformat(),
    }
    status = {"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas}
    return env.east.modify(
        "pinapps", "shop", name, {"status": {**status, "conditions": [available]}}
    )


async def test_promote_rolls_the_pinapp_and_follows_the_rollout(env: Env) -> None:
    await _release(env, "2.0.0")
    denied = await env.client.gql(
        PROMOTE,
        {"c": "component:checkout", "r": "2.0.0", "s": "production"},
        user="mallory",
        expect_errors=True,
    )
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert env.east.get("pinapps", "shop", "checkout")["spec"]["image"].endswith(":1.0")

    body = await env.client.gql(
        PROMOTE, {"c": "component:checkout", "r": "2.0.0", "s": "production"}, user="bob"
    )
    deploy = body["data"]["promoteRelease"]
    assert (deploy["state"], deploy["stage"], deploy["actor"]) == (
        "IN_PROGRESS",
        "production",
        "user:default/bob",
    )
    app = env.east.get("pinapps", "shop", "checkout")
    assert app["spec"]["image"] == "registry.example/checkout:2.0.0"
    [patch] = [r for r in env.east.requests if r.method == "PATCH"]
    assert patch.content_type == "application/merge-patch+json"
    sent = patch.json()
    assert sent["spec"] == {"image": "registry.example/checkout:2.0.0"}
    assert "resourceVersion" in sent["metadata"]  # the API server refuses a stale write

    # The stage is busy until the rollout ends.
    busy = await env.client.gql(
        PROMOTE,
        {"c": "component:checkout", "r": "2.0.0", "s": "production"},
        user="bob",
        expect_errors=True,
    )
    assert busy["errors"][0]["extensions"]["code"] == "CONFLICT"
    assert await _state(env, deploy["id"]) == "IN_PROGRESS"
    await _rolled_out(env, "checkout")

    async def succeeded() -> bool:
        return await _state(env, deploy["id"]) == "SUCCEEDED"

    await eventually(succeeded)

    rows = await env.client.services.db.fetch(
        "select actor, action, target_ref, outcome from audit_log order by id"
    )
    assert [(r["actor"], r["action"], r["outcome"]) for r in rows] == [
        ("user:default/mallory", "deployments.promote", "denied"),
        ("user:default/bob", "deployments.promote", "allowed"),
        ("user:default/bob", "deployments.promote", "failed"),  # the busy stage
    ]
    assert rows[1]["target_ref"] == "component:default/checkout"


async def test_a_rollout_that_misses_its_deadline_fails(env: Env) -> None:
    await _release(env, "2.1.0")
    body = await env.client.gql(
        PROMOTE, {"c": "component:checkout", "r": "2.1.0", "s": "canary"}, user="alice"
    )
    deploy_id = body["data"]["promoteRelease"]["id"]
    assert env.east.get("pinapps", "shop", "checkout-canary")["spec"]["image"].endswith("2.1.0")

    async def failed() -> bool:
        return await _state(env, deploy_id) == "FAILED"

    await eventually(failed, within=10)
    message = await env.client.gql(f'{{ deploy(id: "{deploy_id}") {{ message finishedAt }} }}')
    assert "deadline" in message["data"]["deploy"]["message"]
    # A late rollout does not bring it back.
    await _rolled_out(env, "checkout-canary")
    await env.client.services.extras["deployments"].check_rollouts()
    assert await _state(env, deploy_id) == "FAILED"


async def test_rollback_deploys_the_last_good_release_and_marks_the_bad_one(env: Env) -> None:
    deploys: dict[str, str] = {}
    for version in ("3.0.0", "3.1.0"):
        await _release(env, version)
        body = await env.client.gql(
            PROMOTE, {"c": "component:checkout", "r": version, "s": "production"}, user="alice"
        )
        deploys[version] = body["data"]["promoteRelease"]["id"]
        await _rolled_out(env, "checkout")

        async def done(version: str = version) -> bool:
            return await _state(env, deploys[version]) == "SUCCEEDED"

        await eventually(done)

    denied = await env.client.gql(
        ROLLBACK, {"c": "component:checkout", "s": "production"}, user="mallory", expect_errors=True
    )
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    body = await env.client.gql(
        ROLLBACK, {"c": "component:checkout", "s": "production"}, user="alice"
    )
    rollback = body["data"]["rollbackStage"]
    assert rollback["isRollback"] is True and rollback["release"]["version"] == "3.0.0"
    assert env.east.get("pinapps", "shop", "checkout")["spec"]["image"].endswith(":3.0.0")
    await _rolled_out(env, "checkout")

    async def restored() -> bool:
        return await _state(env, rollback["id"]) == "SUCCEEDED"

    await eventually(restored)
    assert await _state(env, deploys["3.1.0"]) == "ROLLED_BACK"
    assert await _state(env, deploys["3.0.0"]) == "SUCCEEDED"

    pipeline = await env.client.gql(
        """{ entity(ref: "component:checkout") { ... on Component { pipeline { stages {
            name current { release { version } } waiting { version } } } } } }"""
    )
    stages = {s["name"]: s for s in pipeline["data"]["entity"]["pipeline"]["stages"]}
    assert stages["production"]["current"] == {"release": {"version": "3.0.0"}}
    # 3.1.0 ran in staging and is newer than what production runs: it waits to be promoted.
    assert [r["version"] for r in stages["production"]["waiting"]] == ["3.1.0"]

    nothing = await env.client.gql(
        ROLLBACK, {"c": "component:checkout", "s": "canary"}, user="alice", expect_errors=True
    )
    assert nothing["errors"][0]["extensions"]["code"] == "FAILED_PRECONDITION"


class _CdSystem:
    """A CD system's webhook receiver on a real port: keeps what Atrium sent it."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((dict(self.headers), body))
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.port = free_port()
        self.server = HTTPServer(("127.0.0.1", self.port), Handler)
        Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def test_a_stage_without_a_pinapp_asks_the_cd_system_and_waits_for_its_events(
    make_client: AppFactory, tmp_path: Path
) -> None:
    cd = _CdSystem()
    try:
        async with deploy_env(
            make_client, tmp_path, deployments_cd_url=f"http://127.0.0.1:{cd.port}/deploy"
        ) as env:
            await _release(env, "4.0.0", stage="canary")
            body = await env.client.gql(
                PROMOTE, {"c": "component:checkout", "r": "4.0.0", "s": "staging"}, user="alice"
            )
            deploy = body["data"]["promoteRelease"]
            assert deploy["state"] == "PENDING"
            [(headers, raw)] = cd.received
            expected = "sha256=" + hmac.new(CD_SECRET.encode(), raw, hashlib.sha256).hexdigest()
            assert headers["X-Atrium-Signature-256"] == expected
            sent = json.loads(raw)
            assert sent["stage"] == "staging" and sent["release"]["version"] == "4.0.0"
            assert sent["component"] == "component:default/checkout"
            # The CD system reports back under the id Atrium gave the deploy.
            for state in ("in_progress", "succeeded"):
                answer = await env.hook(
                    {
                        "component": "component:checkout",
                        "stage": "staging",
                        "deploy": {"id": sent["deploy"]["id"], "state": state},
                        "release": {"version": "4.0.0"},
                    }
                )
                assert answer.json()["deploy"] == int(deploy["id"])
            assert await _state(env, deploy["id"]) == "SUCCEEDED"
    finally:
        cd.stop()
