"""The workload page against the emulated cluster: an owner scales a PinApp and sees its new
replica count; anyone else sees no scale button and is refused by the API if they try anyway.
Who is asking comes from the trusted proxy's X-Forwarded-User, as in production."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from tests.console.browser import ConsolePage, console_page, describe
from tests.console.demo import CLUSTER, NOT_OWNER, OWNER, SCALED
from tests.console.server import Served
from tests.console.test_console_navigation import build
from tests.kube import Cluster

NAMESPACE, NAME = SCALED
WORKLOAD_PATH = f"/workloads/{CLUSTER}/{NAMESPACE}/{NAME}"
SCALE_BUTTON = re.compile(r"^scale", re.IGNORECASE)
SCALE = """mutation Scale($cluster: String!, $namespace: String!, $name: String!, $replicas: Int) {
  scaleWorkload(cluster: $cluster, namespace: $namespace, name: $name, replicas: $replicas) {
    desiredReplicas
  }
}"""


def replicas(cluster: Cluster) -> int:
    found = cluster.get("pinapps", NAMESPACE, NAME)
    assert found is not None, f"{NAMESPACE}/{NAME} is gone from the cluster"
    return int(found["spec"]["replicas"])


async def post_from_page(page: ConsolePage, query: str, variables: dict[str, Any]) -> Any:
    """POST a document from the page itself: its origin, its user header, its cookies."""
    return await page.page.evaluate(
        """async ([query, variables]) => {
          const r = await fetch('/graphql', {method: 'POST', body: JSON.stringify({query, variables}),
            headers: {'content-type': 'application/json', accept: 'application/graphql-response+json'}});
          return {status: r.status, body: await r.json()};
        }""",
        [query, variables],
    )


async def test_an_owner_scales_a_workload_after_confirming_and_sees_the_new_count(
    browser: Browser, served: Served, cluster: Cluster
) -> None:
    _, ids = build()
    before = replicas(cluster)
    wanted = before + 2
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(WORKLOAD_PATH)
        shown = page.page.locator("#root .atrium-card", has_text="Replicas")
        await expect(shown).to_contain_text(f"{before} (fixed)")
        await page.page.get_by_role("button", name="Scale…").click()
        dialog = page.page.get_by_role("alertdialog")
        # No PinScaler: the replicas themselves, from what it runs to what is asked.
        await expect(dialog).to_contain_text(f"Scale {NAME}?")
        await expect(dialog).to_contain_text(f"It runs {before} replicas, with no PinScaler.")
        await dialog.get_by_label("Replicas").fill(str(wanted))
        await expect(dialog).to_contain_text(f"New count: {wanted}.")
        page.recorded.clear()
        await dialog.get_by_role("button", name="Scale", exact=True).click()
        await expect(page.page.locator("#root").get_by_role("status")).to_contain_text(
            f"{NAME} now runs {wanted} replicas."
        )
        await expect(shown).to_contain_text(f"{wanted} (fixed)")
        assert replicas(cluster) == wanted, f"the cluster has {replicas(cluster)}"
        # The console's own mutation, by hash (POST: a mutation is never a GET).
        [sent] = [r for r in page.recorded.graphql() if "ScaleWorkload" in (r.post_data or "")]
        body = json.loads(sent.post_data or "{}")
        assert sent.method == "POST" and "query" not in body, describe(sent)
        assert body["extensions"]["persistedQuery"]["sha256Hash"] == ids["ScaleWorkload"], body
        assert not page.recorded.errors, page.recorded.errors


@pytest.mark.parametrize("width", [1440, 390])
async def test_a_restart_asks_first_and_cancelling_sends_nothing(
    browser: Browser, served: Served, width: int
) -> None:
    async with console_page(browser, served, user=OWNER, width=width) as page:
        await page.open(WORKLOAD_PATH)
        await page.page.get_by_role("button", name="Restart…").click()
        dialog = page.page.get_by_role("alertdialog")
        await expect(dialog).to_contain_text(f"Restart {NAME}?")
        await expect(dialog).to_contain_text("pods are replaced one at a time")
        page.recorded.clear()
        await page.page.keyboard.press("Escape")
        await expect(dialog).to_have_count(0)
        assert not [r for r in page.recorded.graphql() if r.method == "POST"]
        # The dialog, its text and its buttons fit the screen (a phone's too).
        await page.page.get_by_role("button", name="Restart…").click()
        box = await dialog.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box
        await dialog.get_by_role("button", name="Cancel").click()


async def test_a_non_owner_sees_no_scale_button_and_is_refused(
    browser: Browser, served: Served, cluster: Cluster
) -> None:
    before = replicas(cluster)
    async with console_page(browser, served, user=NOT_OWNER) as page:
        await page.open(WORKLOAD_PATH)
        await expect(page.page.locator("#root")).to_contain_text(NAME)
        buttons = page.page.get_by_role("button", name=SCALE_BUTTON)
        assert await buttons.count() == 0, (
            f"{NOT_OWNER} is offered {await buttons.all_inner_texts()}"
        )
        assert not page.recorded.errors, page.recorded.errors
        # Trying anyway, from the page as that user.
        variables = {"cluster": CLUSTER, "namespace": NAMESPACE, "name": NAME, "replicas": 9}
        answer = await post_from_page(page, SCALE, variables)
        codes = [e.get("extensions", {}).get("code") for e in answer["body"].get("errors", [])]
        assert codes == ["FORBIDDEN"], answer
    assert replicas(cluster) == before
