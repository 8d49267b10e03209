"""The test kit's browser (``atrium_browser``), as a plugin's tests read a panel: a bundled
plugin's panel is in the page's root as the server sent it, before any script ran, and still
there once the console rendered."""

from __future__ import annotations

from atrium.testing import AtriumBrowser
from tests.console.demo import OWNER
from tests.console.server import Served

PAGE = "/catalog/default/component/checkout"
PANEL = 'id="deployments"'  # the deployments plugin's section of a component's page


async def test_a_plugins_panel_before_and_after_the_console_starts(
    served: Served, atrium_browser: AtriumBrowser
) -> None:
    snapshot = await atrium_browser.snapshot(served.url(PAGE), user=OWNER)
    assert snapshot.status == 200
    assert PANEL in snapshot.server_html
    assert PANEL in snapshot.before, snapshot.before[:2000]
    assert PANEL in snapshot.after, snapshot.after[:2000]
    assert not snapshot.errors, snapshot.errors


async def test_a_recorded_page_of_the_kit(served: Served, atrium_browser: AtriumBrowser) -> None:
    async with atrium_browser.page(served, user=OWNER) as page:
        await page.open(PAGE)
        probe = await page.probe()
        assert PANEL in probe["serverHTML"] and probe["rendered"] > 0
        assert "Deployments" in await page.text()
        assert page.recorded.graphql() or page.recorded.assets()
