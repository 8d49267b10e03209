"""Every page of the console: React's first render does not move what the server's HTML laid
out (a layout-shift score under 0.1, landmark by landmark, and the browser's own cumulative
layout shift under 0.1 too), and axe-core finds no serious or critical accessibility
violation."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.async_api import Browser

from tests.conftest import ROOT
from tests.console.browser import console_page
from tests.console.demo import CLUSTER, OWNER
from tests.console.layout import landmarks, shift_score
from tests.console.server import Served
from tests.console.test_console_pages import ENTITY_PATH, TEAM_PATH

AXE = ROOT / "tests" / "clients" / "node_modules" / "axe-core" / "axe.min.js"
PAGES = {
    "home": "/",
    "catalog": "/catalog",
    "entity": ENTITY_PATH,
    "team": TEAM_PATH,
    "workload": f"/workloads/{CLUSTER}/shop/checkout",
}
MAX_CLS = 0.1


@pytest.mark.parametrize("name", list(PAGES))
async def test_react_does_not_shift_the_server_layout(
    browser: Browser, served: Served, name: str
) -> None:
    async with console_page(browser, served, user=OWNER, javascript=False) as server_html:
        await server_html.open(PAGES[name], rendered=False)
        before = await landmarks(server_html.page)
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(PAGES[name])
        after = await landmarks(page.page)
        # React's render against the server's HTML, landmark by landmark...
        score, moved = shift_score(before, after)
        assert score < MAX_CLS, f"{name}: React's render shifts the layout by {score:.3f}: {moved}"
        # ...and what the browser itself counted as shifts since the page began.
        probe = await page.probe()
        assert probe["cls"] < MAX_CLS, (
            f"{name}: cumulative layout shift {probe['cls']:.3f} >= {MAX_CLS}: {probe['shifts']}"
        )
        assert not page.recorded.errors, page.recorded.errors


AXE_RUN = """async () => {
  const result = await axe.run(document);
  return {passes: result.passes.length, violations: result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' '))}))};
}"""


@pytest.mark.parametrize("name", list(PAGES))
async def test_axe_finds_no_serious_violation(browser: Browser, served: Served, name: str) -> None:
    assert AXE.is_file(), "axe-core is missing: `make test` installs tests/clients' packages"
    # axe is injected as a script, which the page's Content-Security-Policy forbids: this
    # context (and only this one) bypasses it.
    async with console_page(browser, served, user=OWNER, bypass_csp=True) as page:
        await page.open(PAGES[name])
        await page.page.add_script_tag(path=AXE)
        result: dict[str, Any] = await page.page.evaluate(AXE_RUN)
        assert result["passes"] > 10, f"axe checked next to nothing on {name}: {result}"
        serious = [v for v in result["violations"] if v["impact"] in {"serious", "critical"}]
        assert not serious, f"{name} ({PAGES[name]}):\n" + "\n".join(map(str, serious))
