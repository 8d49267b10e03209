"""The deployments panel in Chromium: a component's pipeline and history come with the page
(server-rendered, no /graphql request), an owner promotes the release waiting for production
and watches it roll out live (the PinApp in the emulated cluster changes image; the panel
follows the deploy over the subscription); anyone else sees no button; the team page shows its
DORA figures."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime

import httpx
from playwright.async_api import Browser, expect

from tests.console.browser import console_page, describe
from tests.console.demo import CLUSTER, NOT_OWNER, OWNER, SCALED, TEAM
from tests.console.server import DEPLOY_SECRET, Served
from tests.kube import Cluster

NAMESPACE, NAME = SCALED  # cart-service's PinApp, owned by the checkout team
COMPONENT = "component:default/cart-service"
PAGE = "/catalog/default/component/cart-service"
PIPELINE = """mutation($c: String!, $s: [StageInput!]!) {
  setPipeline(component: $c, stages: $s) { stages { name } } }"""


async def _event(served: Served, stage: str, version: str, state: str) -> None:
    body = json.dumps(
        {
            "component": COMPONENT,
            "stage": stage,
            "deploy": {"id": f"ci-{stage}-{version}", "state": state, "actor": "ci"},
            "release": {
                "version": version,
                "commitSha": hashlib.sha1(version.encode()).hexdigest(),
                "artifact": f"registry.junipermarket.example/cart-service:{version}",
            },
        }
    ).encode()
    signature = "sha256=" + hmac.new(DEPLOY_SECRET.encode(), body, hashlib.sha256).hexdigest()
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            served.url("/hooks/deployments"),
            content=body,
            headers={"X-Atrium-Delivery": str(uuid.uuid4()), "X-Atrium-Signature-256": signature},
        )
    assert answer.status_code == 200, answer.text


async def _prepared(served: Served) -> None:
    stages = [
        {"name": "staging"},
        {
            "name": "production",
            "production": True,
            "pinAppCluster": CLUSTER,
            "pinAppNamespace": NAMESPACE,
            "pinAppName": NAME,
        },
    ]
    body = await served.gql(PIPELINE, {"c": COMPONENT, "s": stages}, user=OWNER)
    assert "errors" not in body, body
    await _event(served, "production", "7.1.0", "succeeded")
    await _event(served, "staging", "7.1.0", "succeeded")
    await _event(served, "staging", "7.2.0", "succeeded")


async def test_an_owner_promotes_a_release_and_watches_it_roll_out(
    browser: Browser, served: Served, cluster: Cluster
) -> None:
    await _prepared(served)
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(PAGE)
        panel = page.page.locator("#root section[aria-labelledby=deployments]")
        await expect(panel).to_contain_text("waiting: 7.2.0")
        assert not page.recorded.graphql(), [describe(r) for r in page.recorded.graphql()]
        production = panel.locator("li.atrium-stage", has_text="production")
        await production.get_by_role("button", name="Promote 7.2.0").click()
        await expect(production).to_contain_text("in progress")
        app = cluster.get("pinapps", NAMESPACE, NAME)
        assert app["spec"]["image"] == "registry.junipermarket.example/cart-service:7.2.0"

        # The controller reports the rollout done; the panel hears it without a reload.
        replicas = app["spec"]["replicas"]
        await cluster.modify(
            "pinapps",
            NAMESPACE,
            NAME,
            {
                "status": {
                    "replicas": replicas,
                    "updatedReplicas": replicas,
                    "readyReplicas": replicas,
                    "conditions": [
                        {
                            "type": "Available",
                            "status": "True",
                            "lastTransitionTime": datetime.now(UTC).isoformat(),
                        }
                    ],
                }
            },
        )
        await expect(production.locator(".atrium-state")).to_have_text("succeeded")
        await expect(production.locator("p").first).to_have_text("7.2.0")
        await expect(panel.locator("tbody tr").first).to_contain_text("7.2.0")
        assert not page.recorded.errors, page.recorded.errors


async def test_others_see_the_history_without_buttons_and_teams_their_figures(
    browser: Browser, served: Served
) -> None:
    await _event(served, "staging", "7.3.0", "succeeded")
    async with console_page(browser, served, user=NOT_OWNER) as page:
        await page.open(PAGE)
        panel = page.page.locator("#root section[aria-labelledby=deployments]")
        await expect(panel).to_contain_text("staging")
        assert await panel.get_by_role("button").count() == 0
        await page.open(f"/catalog/default/group/{TEAM}")
        dora = page.page.locator("#root section[aria-labelledby=dora]")
        await expect(dora).to_contain_text("Deploys to production")
        assert not page.recorded.errors, page.recorded.errors
    async with console_page(browser, served, user=OWNER, javascript=False) as page:
        await page.open(PAGE, rendered=False)
        html = await page.page.content()
        assert "Deployments" in html and "7.3.0" in html and "Promote 7.3.0" in html
