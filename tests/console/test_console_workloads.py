"""The workload page against the emulated cluster: an owner scales a PinApp and sees its new
replica count; anyone else sees no scale button and is refused by the API if they try anyway.
Who is asking comes from the trusted proxy's X-Forwarded-User, as in production."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from playwright.async_api import Browser, expect

from tests.console.browser import ConsolePage, console_page, describe
from tests.console.demo import CLUSTER, NOT_OWNER, OWNER, SCALED
from tests.console.server import Served
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


async def test_an_owner_scales_a_workload_and_sees_the_new_count(
    browser: Browser, served: Served, cluster: Cluster
) -> None:
    before = replicas(cluster)
    wanted = before + 2
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(WORKLOAD_PATH)
        root = page.page.locator("#root")
        await expect(root).to_contain_text(NAME)
        await page.page.get_by_role("button", name=SCALE_BUTTON).first.click()
        field = page.page.get_by_role("spinbutton", name=re.compile("replicas", re.IGNORECASE))
        await field.first.fill(str(wanted))
        page.recorded.clear()
        await page.page.get_by_role("dialog").get_by_role("button", name=SCALE_BUTTON).click()
        for _ in range(100):
            if replicas(cluster) == wanted:
                break
            await asyncio.sleep(0.05)
        sent = [describe(r) for r in page.recorded.graphql()]
        assert replicas(cluster) == wanted, f"the cluster still has {replicas(cluster)}: {sent}"
        await expect(root).to_contain_text(
            re.compile(rf"\b{wanted}\b.*replicas|replicas\D*{wanted}\b", re.I | re.S)
        )
        assert not page.recorded.errors, page.recorded.errors


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
