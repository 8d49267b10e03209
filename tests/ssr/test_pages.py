"""The server-rendered pages, on a build made here from the client's own operation files
(web/src/operations), the kit's templates and critical CSS of the real build (web/dist/.server,
which `make test` builds first) and a Vite manifest shaped as Vite writes it; the real build, in
a real browser, is tests/console/."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import brotli
import pytest
from graphql import parse, print_ast

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.settings import DeploymentSettings
from plugins.observability.plugin import ObservabilityPlugin
from plugins.observability.settings import ObservabilitySettings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from sources.persisted import document_hash
from tests.conftest import ROOT, AppFactory, Client, demo_batch
from tests.ssr.markup import assert_well_formed

WEB = ROOT / "web"
# The console's operations and its plugins' (web/src/plugins/<plugin>/).
OPERATIONS = [*WEB.glob("src/operations/*.graphql"), *WEB.glob("src/plugins/*/*.graphql")]
SECRET = "a deploy hook's secret"


def _build(root: Path) -> Path:
    build = root / "dist"
    (build / ".vite").mkdir(parents=True)
    chunks: dict[str, Any] = {
        "src/boot.ts": {
            "file": "boot-AAAAAAAA.js",
            "isEntry": True,
            "dynamicImports": ["src/main.tsx", "src/routes/Entity.tsx"],
        },
        "src/main.tsx": {"file": "main-BBBBBBBB.js", "isDynamicEntry": True},
    }
    for route in ("Home", "Catalog", "Entity", "Team", "Workload", "Missing"):
        chunks[f"src/routes/{route}.tsx"] = {
            "file": f"{route}-{route[:4].upper():X<8}.js",
            "isDynamicEntry": True,
        }
    (build / ".vite" / "manifest.json").write_text(json.dumps(chunks))
    (build / "boot-AAAAAAAA.js").write_text("/* built */" * 200)
    (build / "boot-AAAAAAAA.js.br").write_bytes(brotli.compress(b"/* built */" * 200))
    server = WEB / "dist" / ".server"
    assert (server / "kit.json").is_file(), "the console is not built: `make web` (make test does)"
    shutil.copytree(server, build / ".server")
    shutil.copy(WEB / "public" / "logo.svg", build / "logo.svg")
    operations = []
    for path in sorted(OPERATIONS):
        body = print_ast(parse(path.read_text()))
        kind = body.split(" ", 1)[0]
        operations.append(
            {"id": document_hash(body), "name": path.stem, "type": kind, "body": body}
        )
    manifest = {"format": "apollo-persisted-query-manifest", "version": 1, "operations": operations}
    (build / "persisted-query-manifest.json").write_text(json.dumps(manifest))
    return build


def _plugins() -> list[Any]:
    return [
        PinComputePlugin(ComputeSettings()),  # no cluster: workloads answer empty
        DeploymentsPlugin(DeploymentSettings(deployments_webhook_secret=SECRET)),
        # No Prometheus, no Alertmanager: their sections say so.
        ObservabilityPlugin(ObservabilitySettings()),
    ]


@pytest.fixture
async def console(make_client: AppFactory, tmp_path: Path) -> Client:
    from sources.catalog.store import apply_batch

    client = await make_client(plugins=_plugins(), web_dir=_build(tmp_path))
    assert not (await apply_batch(client.services.db, demo_batch())).errors
    return client


def _embedded(html: str, element: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', html, re.S)
    assert found, f"no {element} in the page"
    return json.loads(found[1])


def _title(html: str) -> str:
    found = re.search(r"<title>(.*?)</title>", html)
    assert found, "the page has no title"
    return found[1]


def _description(html: str) -> str:
    found = re.search(r'<meta name="description" content="([^"]*)">', html)
    assert found, "the page has no description"
    return found[1]


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


async def test_an_entity_page_is_rendered_with_its_data_embedded(console: Client) -> None:
    response = await console.get("/catalog/default/component/checkout")
    assert response.status_code == 200, response.text
    html = response.text
    assert_well_formed(html)
    results = _embedded(html, "apollo-results")
    assert [r["operationName"] for r in results] == [
        "EntityPage",
        "EntityWorkloads",
        "EntityDeployments",
        "EntityMetrics",
        "EntityAlerts",
    ]
    page = results[0]
    assert page["variables"] == {"ref": "component:default/checkout"}
    entity = page["data"]["entity"]
    assert entity["ref"] == "component:default/checkout"
    # Its title, as the page shows it (not its name), in the tab and the heading.
    assert _title(html) == f"{entity['title']} · Atrium" == "Checkout Service · Atrium"
    assert _description(html) == entity["description"]
    assert re.search(rf"<h1 [^>]*>{entity['title']}</h1>", html)
    # What the page shows is what the data says: its owner and every dependency, as links;
    # its sections as tabs, the deployments panel's among them.
    owner = entity["owner"]
    assert f'href="/catalog/default/group/{owner["name"]}"' in html
    assert entity["dependencies"], "the demo's checkout has dependencies"
    for dependency in entity["dependencies"]:
        kind, _, rest = dependency["ref"].partition(":")
        namespace, _, name = rest.partition("/")
        assert f'href="/catalog/{namespace}/{kind}/{name}"' in html
    tabs = re.findall(r'href="#([a-z-]+)"', html)
    assert tabs[:5] == ["main", "overview", "deployments", "metrics", "alerts"], tabs
    assert "workloads" in tabs, tabs
    for section in tabs[1:]:
        assert f'<section class="atrium-section" id="{section}"' in html, section
    # Members of the owning team are counted, not listed with their e-mail addresses.
    shown = html.partition('<script type="application/json"')[0]
    assert f"{len(owner['members'])} members" in shown
    assert "amelia.chen@" not in shown
    # The entry alone: the route's chunk and the app load after the first paint.
    assert '<script type="module" src="/assets/boot-AAAAAAAA.js"></script>' in html
    assert "modulepreload" not in html and 'rel="stylesheet"' not in html


async def test_a_backend_not_configured_is_said_on_the_page(console: Client) -> None:
    response = await console.get("/catalog/default/component/checkout")
    assert response.status_code == 200
    html = response.text
    page = _embedded(html, "atrium-page")
    assert "ATRIUM_PROMETHEUS_URL" in page["unavailable"]["EntityMetrics"]
    assert "ATRIUM_ALERTMANAGER_URL" in page["unavailable"]["EntityAlerts"]
    shown = html.partition('<script type="application/json"')[0]
    assert "Unavailable: prometheus: not configured" in shown, shown[-3000:]
    assert "Unavailable: alertmanager: not configured" in shown
    team = await console.get("/catalog/default/group/checkout-team")
    assert team.status_code == 200 and "Unavailable:" in team.text
    assert_well_formed(team.text)


async def test_the_page_inlines_its_critical_css_and_theme_script_by_their_hashes(
    console: Client,
) -> None:
    response = await console.get("/catalog/default/component/checkout")
    html = response.text
    style = re.search(r"<style>(.*?)</style>", html, re.S)
    script = re.search(r"<script>(.*?)</script>", html, re.S)
    assert style and script
    assert ":root{color-scheme:light;" in style[1] and 'data-color-scheme="dark"' in style[1]
    csp = response.headers["content-security-policy"]
    directives = dict(part.strip().split(" ", 1) for part in csp.split(";"))
    assert directives["script-src"] == f"'self' {_sha256(script[1])}"
    assert directives["style-src"] == f"'self' {_sha256(style[1])}"
    assert "unsafe" not in directives["script-src"] + directives["style-src"]
    # No inline event handler anywhere.
    assert not re.search(r"<[^>]+\son[a-z]+=", html)


async def test_the_embedded_results_are_the_answers_a_get_of_the_same_operation_gives(
    console: Client,
) -> None:
    html = (await console.get("/catalog/default/component/checkout")).text
    [page, *_] = _embedded(html, "apollo-results")
    digest = console.services.console.operations["EntityPage"]
    api = await console.get(
        "/graphql",
        params={
            "operationName": "EntityPage",
            "variables": json.dumps(page["variables"]),
            "extensions": json.dumps({"persistedQuery": {"version": 1, "sha256Hash": digest}}),
        },
        headers={"content-type": "application/json"},
    )
    assert api.status_code == 200, api.text
    assert api.json()["data"] == page["data"]


async def test_a_team_page_and_the_teams_redirect(console: Client) -> None:
    moved = await console.get("/teams/checkout-team")
    assert (
        moved.status_code == 308
        and moved.headers["location"] == "/catalog/default/group/checkout-team"
    )
    response = await console.get("/catalog/default/group/checkout-team")
    assert response.status_code == 200, response.text
    assert_well_formed(response.text)
    results = _embedded(response.text, "apollo-results")
    assert [r["operationName"] for r in results] == [
        "TeamPage",
        "TeamWorkloads",
        "TeamDora",
        "TeamAlerts",
        "TeamErrorRatios",
    ]
    team = results[0]["data"]
    assert team["entity"]["ref"] == "group:default/checkout-team"
    assert team["owned"]["totalCount"] > 0
    assert _title(response.text) == "Checkout · Atrium"  # the team's display name
    for member in team["entity"]["members"]:
        assert f'href="/catalog/default/user/{member["name"]}"' in response.text


async def test_hostile_text_cannot_end_the_embedded_script(console: Client) -> None:
    yaml = """apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: evil
  description: "</script><script>alert(1)</script> & \u2028 <!--"
spec: {type: service, lifecycle: production, owner: group:default/checkout-team}
"""
    token = await console.admin_token()
    done = await console.gql(
        "mutation($y: String!) { applyEntities(yaml: $y) { created } }",
        {"y": yaml},
        token=token,
    )
    assert done["data"]["applyEntities"]["created"] == ["component:default/evil"]
    html = (await console.get("/catalog/default/component/evil")).text
    assert "<script>alert(1)" not in html
    # The theme's inline script, the two data elements and the entry.
    assert html.count("</script>") == 4
    [page, *_] = _embedded(html, "apollo-results")
    assert page["data"]["entity"]["description"].startswith("</script><script>alert(1)")
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in html  # shown as text by the template
    assert_well_formed(html)


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/catalog/default/component/no-such-thing", 404, "Not found"),
        ("/catalog/default/nope/x", 404, "The catalog has no kind “nope”."),
        ("/nope/at/all", 404, "No page of the console is at this address."),
        ("/catalog/default/component/bad%21name", 400, "No entity can be named so."),
        ("/catalog/default/component/checkout%0A", 400, "No entity can be named so."),
        ("/catalog?after=not-a-cursor", 400, "Not a valid address"),
    ],
)
async def test_addresses_that_lead_nowhere_are_pages_in_the_consoles_frame(
    console: Client, path: str, status: int, says: str
) -> None:
    response = await console.get(path, headers={"accept": "text/html"})
    assert response.status_code == status, response.text[:500]
    html = response.text
    assert_well_formed(html)
    assert says in html
    assert _title(html) == (
        "Not found · Atrium" if status == 404 else "Not a valid address · Atrium"
    )
    # The frame, and a way on: the catalog searched for the address's last word, and home.
    assert 'class="atrium-header"' in html and 'href="/"' in html
    assert re.search(r'href="/catalog\?q=[^"]+"', html) or 'href="/catalog"' in html
    assert response.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("path", "href"),
    [
        ("/nope/caf%C3%A9", "/catalog?q=caf%C3%A9"),
        ("/nope/what%20is%20this/", "/catalog?q=what+is+this"),
        # Decoded once, as the client decodes location.pathname: "%41", not "A".
        ("/nope/100%2541", "/catalog?q=100%2541"),
        ("/nope/%20/", "/catalog"),
    ],
)
async def test_the_way_on_searches_for_the_addresss_last_word(
    console: Client, path: str, href: str
) -> None:
    html = (await console.get(path, headers={"accept": "text/html"})).text
    assert f'href="{href}"' in html


async def test_unknown_entities_are_404_pages_the_client_can_render(console: Client) -> None:
    response = await console.get("/catalog/default/component/no-such-thing")
    assert response.status_code == 404
    [page, *_] = _embedded(response.text, "apollo-results")
    assert page["data"] == {"entity": None}


async def test_an_api_client_gets_a_plain_404(console: Client) -> None:
    response = await console.get("/nope", headers={"accept": "application/json"})
    assert response.status_code == 404 and response.text == "Not Found"


async def test_pages_are_cached_whole_with_etags_and_change_when_their_data_does(
    console: Client,
) -> None:
    first = await console.get("/catalog/default/system/checkout")
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "public, no-cache"
    again = await console.get("/catalog/default/system/checkout", headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b""
    db = console.services.db
    before = db.queries
    kept = await console.get("/catalog/default/system/checkout")
    assert kept.content == first.content and db.queries == before, "a kept page runs no SQL"
    token = await console.admin_token()
    await console.gql(
        "mutation($y: String!) { applyEntities(yaml: $y) { created updated } }",
        {
            "y": "apiVersion: backstage.io/v1alpha1\nkind: System\nmetadata: {name: checkout, "
            "description: Renamed today}\nspec: {owner: group:default/checkout-team}\n"
        },
        token=token,
    )
    changed = await console.get("/catalog/default/system/checkout", headers={"if-none-match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert "Renamed today" in changed.text


async def test_the_page_cache_is_keyed_by_the_address(console: Client) -> None:
    """Two addresses never share a kept page, even when they run the same answers: the title
    (and whatever else the page reads from its address) differs."""
    one = await console.get("/catalog?q=checkout")
    two = await console.get("/catalog?q=cart")
    assert one.headers["etag"] != two.headers["etag"]
    assert _title(one.text) == "“checkout” in the catalog · Atrium"
    assert _title(two.text) == "“cart” in the catalog · Atrium"
    again = await console.get("/catalog?q=checkout")
    assert again.content == one.content
    missing = [await console.get(f"/workloads/q/r/{name}") for name in ("first", "second")]
    assert [m.status_code for m in missing] == [404, 404]


async def test_the_catalog_page_reads_its_state_from_the_address(console: Client) -> None:
    response = await console.get(
        "/catalog",
        params=[("kind", "component"), ("owner", "group:default/checkout-team"), ("sort", "-name")],
    )
    assert response.status_code == 200, response.text[:500]
    html = response.text
    assert_well_formed(html)
    [rows, facets] = _embedded(html, "apollo-results")
    assert rows["variables"] == {
        "filter": {"kind": ["component"], "owner": ["group:default/checkout-team"]},
        "search": None,
        "orderBy": "TITLE_DESC",
        "first": 25,
        "after": None,
    }
    titles = [n["title"] or n["name"] for n in rows["data"]["entities"]["nodes"]]
    assert titles and titles == sorted(titles, key=str.lower, reverse=True)
    assert all(n["kind"] == "Component" for n in rows["data"]["entities"]["nodes"])
    assert facets["operationName"] == "CatalogFacets"
    # Each title links to its page, in the order of the answer; sorting by name again goes
    # ascending; the filters' form holds the choices.
    links = re.findall(r'href="(/catalog/default/component/[^"]+)"', html)
    assert links, html[:2000]
    assert (
        'href="/catalog?kind=component&amp;owner=group%3Adefault%2Fcheckout-team&amp;sort=name"'
        in html
    )
    assert '<option value="component" selected="">' in html


async def test_pages_are_compressed_as_the_browser_accepts(console: Client) -> None:
    path = "/catalog/default/component/checkout"
    plain = await console.get(path, headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers
    for encoding, decode in (("br", brotli.decompress), ("gzip", gzip.decompress)):
        # httpx would decompress; ask for the raw bytes.
        async with console.stream("GET", path, headers={"accept-encoding": encoding}) as raw:
            assert raw.headers["content-encoding"] == encoding
            assert "Accept-Encoding" in raw.headers["vary"]
            body = b"".join([chunk async for chunk in raw.aiter_raw()])
        assert decode(body) == plain.content
        assert len(body) < len(plain.content) / 3


async def test_a_page_showing_cluster_state_is_revalidated_each_time(console: Client) -> None:
    """Cluster state may not be kept, so the team page (its workloads) is stored by the
    browser but checked on every use: 304 while nothing it shows has changed."""
    first = await console.get("/catalog/default/group/checkout-team")
    assert first.headers["cache-control"] == "public, no-cache"
    again = await console.get(
        "/catalog/default/group/checkout-team", headers={"if-none-match": first.headers["etag"]}
    )
    assert again.status_code == 304


async def test_a_signed_in_viewers_page_is_private(console: Client) -> None:
    path = "/catalog/default/system/checkout"
    mine = await console.get(path, headers={"x-forwarded-user": "alice"})
    assert mine.headers["cache-control"] == "private, no-cache"
    anonymous = await console.get(path)
    assert mine.headers["etag"] != anonymous.headers["etag"]
    assert _embedded(mine.text, "atrium-page")["viewer"]["ref"] == "user:default/alice"


async def test_the_demo_user_cookie_signs_in_only_in_development(
    console: Client, make_client: AppFactory, tmp_path: Path
) -> None:
    html = (await console.get("/", headers={"cookie": "atrium_demo_user=grace.okafor"})).text
    page = _embedded(html, "atrium-page")
    assert page["viewer"]["ref"] == "user:default/grace.okafor"
    assert page["viewer"]["via"] == "demo"
    # Named as people call them, in the header too.
    assert page["viewer"]["name"] == "Grace Okafor"
    assert any(u["ref"] == "user:default/grace.okafor" for u in page["demoUsers"])
    production = await make_client(
        plugins=_plugins(), web_dir=_build(tmp_path / "production"), mode="production"
    )
    body = await production.get("/graphql", params={"query": "{ viewer { ref } }"})
    assert body.status_code == 400  # production runs trusted documents only
    page = _embedded(
        (await production.get("/", headers={"cookie": "atrium_demo_user=grace.okafor"})).text,
        "atrium-page",
    )
    assert page["viewer"]["ref"] is None and "demoUsers" not in page


async def test_production_runs_the_console_from_its_trusted_documents(
    make_client: AppFactory, tmp_path: Path
) -> None:
    from sources.catalog.store import apply_batch

    client = await make_client(plugins=_plugins(), web_dir=_build(tmp_path), mode="production")
    assert not (await apply_batch(client.services.db, demo_batch())).errors
    response = await client.get("/catalog/default/group/checkout-team")
    results = _embedded(response.text, "apollo-results")
    assert [r["operationName"] for r in results] == [
        "TeamPage",
        "TeamWorkloads",
        "TeamDora",
        "TeamAlerts",
        "TeamErrorRatios",
    ]
    signed_in = await client.get(
        "/catalog/default/group/checkout-team", headers={"x-forwarded-user": "grace.okafor"}
    )
    assert _embedded(signed_in.text, "atrium-page")["viewer"]["name"] == "Grace Okafor"


async def test_assets_are_immutable_compressed_and_the_build_manifest_is_not_served(
    console: Client,
) -> None:
    asset = await console.get("/assets/boot-AAAAAAAA.js", headers={"accept-encoding": "identity"})
    assert asset.status_code == 200
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert "content-encoding" not in asset.headers
    async with console.stream(
        "GET", "/assets/boot-AAAAAAAA.js", headers={"accept-encoding": "gzip, br"}
    ) as raw:
        assert raw.headers["content-encoding"] == "br"
        assert raw.headers["content-type"].startswith("text/javascript")
        assert raw.headers["cache-control"] == "public, max-age=31536000, immutable"
        body = b"".join([chunk async for chunk in raw.aiter_raw()])
    assert brotli.decompress(body) == asset.content
    assert (await console.get("/assets/boot-AAAAAAAA.js.br")).status_code == 404
    assert (await console.get("/assets/.vite/manifest.json")).status_code == 404
    assert (await console.get("/assets/.server/kit.json")).status_code == 404
    manifest = await console.get("/assets/persisted-query-manifest.json")
    assert manifest.headers["cache-control"] == "no-cache"


async def test_without_a_build_the_pages_say_how_to_make_one(client: Client) -> None:
    response = await client.get("/catalog/default/component/checkout")
    assert response.status_code == 503 and "make web" in response.text
    assert (await client.gql("{ viewer { ref } }"))["data"] == {"viewer": {"ref": None}}


async def test_with_ssr_off_every_page_is_the_shell(
    make_client: AppFactory, tmp_path: Path
) -> None:
    client = await make_client(plugins=_plugins(), web_dir=_build(tmp_path), ssr=False)
    response = await client.get("/catalog/default/system/checkout")
    assert response.status_code == 200 and _embedded(response.text, "apollo-results") == []
    assert "Loading" in response.text and "<h1" not in response.text


async def test_pages_are_counted_like_the_apis_requests(console: Client) -> None:
    await console.get("/catalog/default/system/checkout")
    await console.get("/catalog/default/component/no-such-thing")
    metrics = (await console.get("/metrics")).text
    assert 'operation="page:entity",status="200"' in metrics
    assert 'operation="page:entity",status="404"' in metrics


async def test_a_deploy_event_changes_the_pages_showing_that_component(console: Client) -> None:
    """The component page embeds its deployments panel's answer and shows it in HTML; a deploy
    event drops that answer, so the page's ETag changes and the new deploy shows."""
    import hmac

    path = "/catalog/default/component/checkout"
    first = await console.get(path)
    assert '<section class="atrium-section" id="deployments"' in first.text
    assert "No pipeline and no deploys yet." in first.text
    assert "EntityDeployments" in first.text  # its answer is embedded for the client
    etag = first.headers["etag"]
    assert (await console.get(path, headers={"if-none-match": etag})).status_code == 304

    event = json.dumps(
        {
            "component": "component:checkout",
            "stage": "production",
            "deploy": {"id": "cd-1", "state": "succeeded", "actor": "argo-cd"},
            "release": {"version": "9.9.9"},
        }
    ).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), event, hashlib.sha256).hexdigest()
    hook = await console.post(
        "/hooks/deployments",
        content=event,
        headers={"X-Atrium-Delivery": "1", "X-Atrium-Signature-256": signature},
    )
    assert hook.status_code == 200, hook.text
    changed = await console.get(path, headers={"if-none-match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    assert "9.9.9" in changed.text and "argo-cd" in changed.text
    assert_well_formed(changed.text)
