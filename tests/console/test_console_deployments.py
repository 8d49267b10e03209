"""The deployments panel in Chromium: a component's pipeline and history come with the page
(server-rendered, no /graphql request), an owner promotes the release waiting for production
and watches it roll out live (the PinApp in the emulated cluster changes image; the panel
follows the deploy over the subscription); anyone else sees no button; the team page shows its
DORA figures."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
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

ROLLED_OUT = 20_000  # ms: how long a finished rollout may take to show


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


async def test_an_owner_promotes_a_release_after_confirming_and_watches_it_roll_out(
    browser: Browser, served: Served, cluster: Cluster
) -> None:
    await _prepared(served)
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(PAGE)
        panel = page.page.locator("#root section#deployments")
        production = panel.locator("ol.atrium-stages > li", has_text="production")
        staging = panel.locator("ol.atrium-stages > li", has_text="staging")
        await expect(production).to_contain_text("Waiting: 7.2.0")
        assert not page.recorded.graphql(), [describe(r) for r in page.recorded.graphql()]
        # Staging is bound to no workload and no CD system is configured: nothing is offered.
        await expect(staging).to_contain_text("Atrium cannot deploy here")
        assert await staging.get_by_role("button").count() == 0
        # Promote asks first, naming what changes; cancelling changes nothing.
        await production.get_by_role("button", name="Promote 7.2.0…").click()
        dialog = page.page.get_by_role("alertdialog")
        await expect(dialog).to_contain_text("Promote 7.2.0 to production?")
        await expect(dialog).to_contain_text("production goes from 7.1.0 to 7.2.0.")
        page.recorded.clear()
        await dialog.get_by_role("button", name="Cancel").click()
        await expect(dialog).to_have_count(0)
        assert not [r for r in page.recorded.graphql() if r.method == "POST"]

        await production.get_by_role("button", name="Promote 7.2.0…").click()
        await (
            page.page.get_by_role("alertdialog").get_by_role("button", name="Promote 7.2.0").click()
        )
        status = panel.get_by_role("status").filter(has_text="Promote 7.2.0 to production")
        await expect(status).to_contain_text("in progress")
        app = cluster.get("pinapps", NAMESPACE, NAME)
        assert app["spec"]["image"] == "registry.junipermarket.example/cart-service:7.2.0"

        # The controller reports the rollout done; the panel hears it without a reload, and the
        # status line says so too (it never keeps saying "in progress").
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
        # Informer, rollout check, commit, announcement, subscription, render: on a machine
        # busy with the rest of the suite, more than expect's default 5 s at times.
        try:
            await expect(production).to_contain_text("succeeded: 7.2.0", timeout=ROLLED_OUT)
        except AssertionError as exc:  # what the server did meanwhile, for whoever reads it
            raise AssertionError(f"{exc}\nthe server's log:\n{served.log_text()[-4000:]}") from None
        await expect(status).to_contain_text("succeeded")
        await expect(production).to_contain_text(re.compile(r"Runs\W*7\.2\.0"))
        await expect(panel.locator("tbody tr").first).to_contain_text("7.2.0")

        # Rolling back names the release it goes back to, from what runs now.
        await production.get_by_role("button", name="Roll back to 7.1.0…").click()
        dialog = page.page.get_by_role("alertdialog")
        await expect(dialog).to_contain_text("Roll back production?")
        await expect(dialog).to_contain_text("production goes from 7.2.0 back to 7.1.0.")
        await dialog.get_by_role("button", name="Cancel").click()
        assert not page.recorded.errors, page.recorded.errors


async def test_others_see_the_history_without_buttons_and_teams_their_figures(
    browser: Browser, served: Served
) -> None:
    await _event(served, "staging", "7.3.0", "succeeded")
    async with console_page(browser, served, user=NOT_OWNER) as page:
        await page.open(PAGE)
        panel = page.page.locator("#root section#deployments")
        await expect(panel).to_contain_text("staging")
        assert await panel.get_by_role("button").count() == 0
        await page.open(f"/catalog/default/group/{TEAM}")
        delivery = page.page.locator("#root section#delivery")
        await expect(delivery).to_contain_text("Deploys to production")
        assert not page.recorded.errors, page.recorded.errors
    async with console_page(browser, served, user=OWNER, javascript=False) as page:
        await page.open(PAGE, rendered=False)
        html = await page.page.content()
        assert "Deployments" in html and "7.3.0" in html and "Promote 7.3.0…" in html
