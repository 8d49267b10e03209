"""A plugin's console part shipped in its own package (``builder.console``): its operations
checked at start-up and trusted, its panel rendered by the server from them, its module served
under the plugin's path with the page's import map and policy; on the console's real build
(web/dist, which `make test` builds first). In a browser: tests/console/."""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from graphql import DocumentNode, FragmentDefinitionNode, OperationDefinitionNode, parse, print_ast

from atrium.app import create_app
from graph.plugin import PluginBuilder
from graph.settings import Settings
from sources.catalog.store import apply_batch
from ssr.plugin_console import InvalidConsole, with_typenames
from tests.conftest import ROOT, AppFactory, Client, demo_batch

WEB_DIST = ROOT / "web" / "dist"
EXAMPLE = ROOT / "tests" / "example_plugin"


@pytest.fixture
def hello() -> Iterator[Any]:
    """The example plugin, imported from its folder (tests/graph/test_plugins.py installs it)."""
    sys.path.insert(0, str(EXAMPLE))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module("atrium_hello").plugin
    finally:
        sys.path.remove(str(EXAMPLE))
        sys.modules.pop("atrium_hello", None)


@pytest.fixture
async def served(make_client: AppFactory, hello: Any) -> Client:
    assert (WEB_DIST / ".vite" / "manifest.json").is_file(), "the console is not built: make web"
    client: Client = await make_client(plugins=[hello], web_dir=WEB_DIST, mode="production")
    assert not (await apply_batch(client.services.db, demo_batch())).errors
    return client


def _embedded(html: str, element: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', html, re.S)
    assert found, f"no {element} in the page"
    return json.loads(found[1])


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


async def test_a_plugins_panel_is_rendered_from_its_own_operation_in_a_hydratable_frame(
    served: Client,
) -> None:
    response = await served.get("/catalog/default/component/checkout")
    assert response.status_code == 200, response.text
    html = response.text
    results = {r["operationName"]: r for r in _embedded(html, "apollo-results")}
    # Run in-process with the page's own, in production (trusted documents only).
    assert results["HelloPanel"]["data"] == {
        "entity": {
            "id": results["EntityPage"]["data"]["entity"]["id"],
            "kind": "Component",
            "__typename": "Component",
        },
        "greeting": "Hello, Checkout Service!",
    }
    panel = re.search(
        r'<div class="atrium-plugin-panel" data-atrium-panel="hello:HelloPanel">(.*?)</div>\n',
        html,
        re.S,
    )
    assert panel, "the panel is not in its frame"
    # Its template, without the blanks between tags (React renders none).
    assert panel[1].startswith('<section class="atrium-section" id="hello"')
    assert "Hello, Checkout Service!" in panel[1]
    assert not re.search(r">\s+<", panel[1])
    # Its section is among the page's tabs, and the client learns of its module.
    page = _embedded(html, "atrium-page")
    module = page["plugins"][0]
    assert module["plugin"] == "hello" and module["pages"] == ["entity"]
    assert re.fullmatch(r"/plugins/hello/console/[0-9a-f]{16}/panels\.js", module["module"])
    assert "HelloPanel" in page["panels"]
    assert 'href="#hello"' in html


async def test_the_import_map_is_allowed_by_its_hash_and_nothing_inline_else(
    served: Client,
) -> None:
    response = await served.get("/catalog/default/component/checkout")
    found = re.search(r'<script type="importmap">(.*?)</script>', response.text, re.S)
    assert found, "no import map"
    imports = json.loads(found[1])["imports"]
    assert set(imports) == {"@atrium/console", "react", "react/jsx-runtime"}
    for url in imports.values():
        asset = await served.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"].startswith("text/javascript")
    policy = response.headers["content-security-policy"]
    script = re.search(r"script-src ([^;]*)", policy)
    assert script
    assert _sha256(found[1]) in script[1].split()
    assert "unsafe-inline" not in script[1] and "unsafe-eval" not in policy


async def test_the_module_is_served_immutable_as_javascript_and_nothing_else_is(
    served: Client,
) -> None:
    page = _embedded((await served.get("/catalog/default/component/checkout")).text, "atrium-page")
    url = page["plugins"][0]["module"]
    response = await served.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/javascript; charset=utf-8"
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert response.headers["x-content-type-options"] == "nosniff"
    shipped = EXAMPLE / "atrium_hello" / "console" / "panels.js"
    assert response.content == shipped.read_bytes()
    base = url.rsplit("/", 1)[0]
    # Another version (an older page's), the operations' sources, paths out of the folder.
    for missing in (
        re.sub(r"/[0-9a-f]{16}/", "/0000000000000000/", url),
        f"{base}/HelloPanel.graphql",
        f"{base}/../../../../pyproject.toml",
        "/plugins/other/console/0000000000000000/panels.js",
    ):
        assert (await served.get(missing)).status_code == 404, missing


async def test_the_clients_manifest_has_the_plugins_operations_and_production_runs_them(
    served: Client,
) -> None:
    manifest = (await served.get("/assets/persisted-query-manifest.json")).json()
    operations = {o["name"]: o for o in manifest["operations"]}
    assert "EntityPage" in operations  # the console's own
    hello = operations["HelloPanel"]
    assert hello["type"] == "query"
    assert hello["id"] == hashlib.sha256(hello["body"].encode()).hexdigest()
    response = await served.get(
        "/graphql",
        params={
            "operationName": "HelloPanel",
            "variables": json.dumps({"ref": "component:default/checkout"}),
            "extensions": json.dumps({"persistedQuery": {"version": 1, "sha256Hash": hello["id"]}}),
        },
        headers={"apollo-require-preflight": "true"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["greeting"] == "Hello, Checkout Service!"


def test_operations_are_printed_as_the_consoles_build_prints_its_own() -> None:
    """The client asks with __typename everywhere below the root (Apollo's cache adds it):
    the server's bodies of the console's own operations, printed here from their sources, are
    the build's, byte for byte."""
    manifest = json.loads((WEB_DIST / "persisted-query-manifest.json").read_text())
    built = {o["name"]: o["body"] for o in manifest["operations"]}
    sources = [*ROOT.glob("web/src/plugins/deployments/*.graphql")]
    fragments = [
        d
        for path in sources
        for d in parse(path.read_text()).definitions
        if isinstance(d, FragmentDefinitionNode)
    ]
    compared = 0
    for path in sources:
        operations = [
            d for d in parse(path.read_text()).definitions if isinstance(d, OperationDefinitionNode)
        ]
        if not operations:
            continue
        text = path.read_text()
        used = [f for f in fragments if f"...{f.name.value}" in text]
        document = DocumentNode(definitions=(*operations, *used))
        assert print_ast(with_typenames(document)) == built[path.stem], path.name
        compared += 1
    assert compared >= 3


class Broken:
    id = "broken"

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def setup(self, builder: PluginBuilder) -> None:
        builder.console(self.folder)


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        (
            {"BrokenPanel.graphql": "query BrokenPanel { nothingHere }"},
            r"plugin broken's console: BrokenPanel\.graphql: Cannot query field 'nothingHere' "
            r"on type 'Query'\. \(line 1, column 21\)",
        ),
        (
            {"BrokenPanel.graphql": "query BrokenPanel { entity(ref: "},
            r"plugin broken's console: BrokenPanel\.graphql: Syntax Error: .*\(line 1",
        ),
        (
            {"BrokenPanel.graphql": "query Other { viewer { ref } }"},
            r"plugin broken's console: BrokenPanel\.graphql: a file holds one operation, named "
            r"as the file \(BrokenPanel\)",
        ),
        (
            {"EntityPanel.graphql": "query EntityPanel { viewer { ...Missing } }"},
            r"plugin broken's console: EntityPanel\.graphql: Unknown fragment 'Missing'",
        ),
    ],
)
def test_an_invalid_operation_stops_the_start_up_naming_plugin_file_and_problem(
    tmp_path: Path, files: dict[str, str], problem: str
) -> None:
    (tmp_path / "panels.js").write_text("export const panels = [];\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(InvalidConsole, match=problem):
        create_app(Settings(web_dir=tmp_path / "no-build"), plugins=[Broken(tmp_path)])


def test_a_console_without_its_module_fails_at_setup(tmp_path: Path) -> None:
    with pytest.raises(Exception, match=r"plugin broken: console module .*panels\.js is missing"):
        create_app(Settings(web_dir=tmp_path / "no-build"), plugins=[Broken(tmp_path)])
