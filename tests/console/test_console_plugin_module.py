"""A plugin's panel from its own package (builder.console), with the console's build untouched:
the example plugin installed like any package, `atrium serve` puts its panel in the page's
HTML, and React hydrates it: the same node after React starts, no error, the policy kept."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser

from tests.artifacts import EXAMPLE_PLUGIN, example_plugin_site
from tests.conftest import ROOT
from tests.console.browser import console_page
from tests.console.server import Served, atrium_serve, build_digest, demo_database
from tests.kube import Cluster

EXAMPLE = EXAMPLE_PLUGIN
PAGE = "/catalog/default/component/checkout"
# The server's panel node, kept before any module runs; React's first render comes later.
KEEP = """
document.addEventListener('readystatechange', () => {
  if (document.readyState === 'interactive') window.__served = document.getElementById('hello');
});
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin pip-installed, as any package is."""
    return example_plugin_site(tmp_path_factory)


@pytest.fixture(scope="module")
async def with_plugin(
    site: Path, pg_admin_url: str, template_db: str, cluster: Cluster
) -> AsyncIterator[Served]:
    assert (site / "atrium_hello" / "console" / "panels.js").is_file()
    before = build_digest()
    async with (
        demo_database(pg_admin_url, template_db) as url,
        atrium_serve(url, (cluster,), extra={"PYTHONPATH": f"{ROOT}:{site}"}) as server,
    ):
        yield server
    assert build_digest() == before, "web/dist changed"


async def test_the_plugins_panel_is_served_then_hydrated_in_place(
    browser: Browser, with_plugin: Served
) -> None:
    async with console_page(browser, with_plugin) as page:
        await page.page.add_init_script(KEEP)
        response = await page.page.goto(with_plugin.url(PAGE), wait_until="load")
        assert response is not None and response.status == 200
        policy = response.headers["content-security-policy"]
        assert "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";", 1)[0]
        assert "'unsafe-eval'" not in policy
        await page.react_rendered()
        state = await page.page.evaluate(
            """() => {
              const now = document.getElementById('hello');
              return {
                served: !!window.__served,
                same: now !== null && now === window.__served,
                connected: !!now && now.isConnected,
                hydrated: !!now && Object.keys(now).some((k) => k.startsWith('__reactFiber')),
                framed: !!now && now.parentElement.matches('.atrium-plugin-panel'),
                text: now ? now.innerText : null,
              };
            }"""
        )
        assert state["served"], "the panel is not in the server's HTML"
        assert state["same"] and state["connected"], "React replaced the panel"
        assert state["hydrated"], "React did not hydrate the panel"
        assert state["framed"]
        assert "Hello, Checkout Service!" in state["text"]
        assert page.recorded.errors == []
        modules = [r.url for r in page.recorded.requests if "/plugins/hello/console/" in r.url]
        assert len(modules) == 1 and modules[0].endswith("/panels.js")
        # Its tab is in the page's navigation, after React too.
        assert await page.page.locator('a[href="#hello"]').count() == 1


async def test_a_client_side_navigation_renders_the_plugins_panel(
    browser: Browser, with_plugin: Served
) -> None:
    async with console_page(browser, with_plugin) as page:
        await page.open("/catalog")
        await page.page.locator('a[href="/catalog/default/component/checkout"]').first.click()
        await page.page.wait_for_selector("#hello")
        text = await page.page.inner_text("#hello")
        assert "Hello, Checkout Service!" in text
        assert page.recorded.errors == []


def test_the_committed_module_is_built_from_its_source(tmp_path: Path) -> None:
    vite = ROOT / "web" / "node_modules" / ".bin" / "vite"
    config = EXAMPLE / "console-src" / "vite.config.mjs"
    subprocess.run(
        [str(vite), "build", "--config", str(config.relative_to(ROOT))],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "HELLO_CONSOLE_OUT": str(tmp_path)},
        check=True,
        capture_output=True,
    )
    committed = EXAMPLE / "atrium_hello" / "console" / "panels.js"
    assert (tmp_path / "panels.js").read_text() == committed.read_text()
