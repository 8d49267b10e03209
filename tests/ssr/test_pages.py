"""The server-rendered pages, on a build made here from the client's own operation files
(web/src/operations) and a Vite manifest shaped as Vite writes it; the real build, in a real
browser, is tests/console/."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from graphql import parse, print_ast

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.settings import DeploymentSettings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from sources.persisted import document_hash
from tests.conftest import AppFactory, Client

WEB_SRC = Path(__file__).parents[2] / "web" / "src"
# The console's operations and its plugins' (web/src/plugins/<plugin>/).
OPERATIONS = [*WEB_SRC.glob("operations/*.graphql"), *WEB_SRC.glob("plugins/*/*.graphql")]
SECRET = "a deploy hook's secret"
GQL = "application/graphql-response+json"


def _build(root: Path) -> Path:
    build = root / "dist"
    (build / ".vite").mkdir(parents=True)
    chunks: dict[str, Any] = {
        "src/main.tsx": {
            "file": "main-AAAAAAAA.js",
            "isEntry": True,
            "imports": ["_vendor-BBBBBBBB.js"],
            "css": ["main-CCCCCCCC.css"],
            "dynamicImports": ["src/routes/Entity.tsx", "src/routes/Team.tsx"],
        },
        "_vendor-BBBBBBBB.js": {"file": "vendor-BBBBBBBB.js", "css": ["vendor-DDDDDDDD.css"]},
        "_late-EEEEEEEE.js": {"file": "late-EEEEEEEE.js"},
    }
    for route in ("Home", "Catalog", "Entity", "Team", "Workload"):
        chunks[f"src/routes/{route}.tsx"] = {
            "file": f"{route}-{route[:4].upper():X<8}.js",
            "isDynamicEntry": True,
            "imports": ["_vendor-BBBBBBBB.js"],
            "dynamicImports": ["_late-EEEEEEEE.js"],
        }
    (build / ".vite" / "manifest.json").write_text(json.dumps(chunks))
    for name in ("main-AAAAAAAA.js", "vendor-BBBBBBBB.js", "main-CCCCCCCC.css"):
        (build / name).write_text("/* built */")
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
    ]


@pytest.fixture
async def console(make_client: AppFactory, tmp_path: Path) -> Client:
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch
    from tests.conftest import EXAMPLES

    client = await make_client(plugins=_plugins(), web_dir=_build(tmp_path))
    assert not (await apply_batch(client.services.db, read_paths([EXAMPLES]))).errors
    return client


def _embedded(html: str, element: str) -> Any:
    found = re.search(rf'<script type="application/json" id="{element}">(.*?)</script>', html, re.S)
    assert found, f"no {element} in the page"
    return json.loads(found[1])


async def test_an_entity_page_is_rendered_with_its_data_embedded(console: Client) -> None:
    response = await console.get("/catalog/default/component/checkout")
    assert response.status_code == 200, response.text
    html = response.text
    results = _embedded(html, "apollo-results")
    assert [r["operationName"] for r in results] == [
        "EntityPage",
        "EntityWorkloads",
        "EntityDeployments",
    ]
    page = results[0]
    assert page["variables"] == {"ref": "component:default/checkout"}
    entity = page["data"]["entity"]
    assert entity["ref"] == "component:default/checkout"
    assert (
        f'<h1 class="atrium-title" elementtiming="entity-name">{entity["title"] or entity["name"]}</h1>'
        in html
    )
    # What the page shows is what the data says: its owner and every dependency, as links.
    owner = entity["owner"]
    assert f'href="/catalog/default/group/{owner["name"]}"' in html
    assert entity["dependencies"], "the demo's checkout has dependencies"
    for dependency in entity["dependencies"]:
        kind, _, rest = dependency["ref"].partition(":")
        namespace, _, name = rest.partition("/")
        assert f'href="/catalog/{namespace}/{kind}/{name}"' in html
    # Assets from the manifest: the entry, its imports and the route's, never dynamic ones.
    assert '<script type="module" src="/assets/main-AAAAAAAA.js"></script>' in html
    assert '<link rel="modulepreload" href="/assets/vendor-BBBBBBBB.js">' in html
    assert '<link rel="modulepreload" href="/assets/Entity-ENTIXXXX.js">' in html
    assert "Team-" not in html and "late-EEEEEEEE" not in html
    assert '<link rel="stylesheet" href="/assets/vendor-DDDDDDDD.css">' in html
    assert '<link rel="stylesheet" href="/assets/main-CCCCCCCC.css">' in html
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "<script>" not in html and " on" not in re.sub(
        r"<[^>]*>", lambda m: m[0].split('"')[0], ""
    )


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
    results = _embedded(response.text, "apollo-results")
    assert [r["operationName"] for r in results] == ["TeamPage", "TeamWorkloads", "TeamDora"]
    team = results[0]["data"]
    assert team["entity"]["ref"] == "group:default/checkout-team"
    assert team["owned"]["totalCount"] > 0
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
    assert html.count("</script>") == 3  # the two data elements and the entry
    [page, *_] = _embedded(html, "apollo-results")
    assert page["data"]["entity"]["description"].startswith("</script><script>alert(1)")
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in html  # shown as text by the template


async def test_unknown_entities_are_404_pages_the_client_can_render(console: Client) -> None:
    response = await console.get("/catalog/default/component/no-such-thing")
    assert response.status_code == 404
    [page, *_] = _embedded(response.text, "apollo-results")
    assert page["data"] == {"entity": None}


async def test_pages_are_cached_whole_with_etags_and_change_when_their_data_does(
    console: Client,
) -> None:
    first = await console.get("/catalog/default/system/checkout")
    etag = first.headers["etag"]
    assert first.headers["cache-control"] == "max-age=60, public"
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
    assert mine.headers["cache-control"] == "max-age=60, private"
    anonymous = await console.get(path)
    assert mine.headers["etag"] != anonymous.headers["etag"]
    assert _embedded(mine.text, "atrium-page")["viewer"]["ref"] == "user:default/alice"


async def test_the_demo_user_cookie_signs_in_only_in_development(
    console: Client, make_client: AppFactory, tmp_path: Path
) -> None:
    page = _embedded(
        (await console.get("/", headers={"cookie": "atrium_demo_user=grace.okafor"})).text,
        "atrium-page",
    )
    assert page["viewer"] == {"ref": "user:default/grace.okafor", "via": "demo"}
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
    client = await make_client(plugins=_plugins(), web_dir=_build(tmp_path), mode="production")
    response = await client.get("/catalog/default/group/admins")
    results = _embedded(response.text, "apollo-results")
    assert [r["operationName"] for r in results] == ["TeamPage", "TeamWorkloads", "TeamDora"]


async def test_assets_are_immutable_and_the_build_manifest_is_not_served(console: Client) -> None:
    asset = await console.get("/assets/main-AAAAAAAA.js")
    assert asset.status_code == 200
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert (await console.get("/assets/.vite/manifest.json")).status_code == 404
    manifest = await console.get("/assets/persisted-query-manifest.json")
    assert manifest.headers["cache-control"] == "no-cache"


async def test_client_rendered_routes_are_shells(console: Client) -> None:
    for path in ("/catalog", "/workloads/demo%20(emulated)/shop/checkout"):
        response = await console.get(path)
        assert response.status_code == 200
        assert _embedded(response.text, "apollo-results") == []
        assert 'id="root"' in response.text


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
    assert "Loading" in response.text and '<h1 class="atrium-title">' not in response.text


async def test_pages_are_counted_like_the_apis_requests(console: Client) -> None:
    await console.get("/catalog/default/system/checkout")
    await console.get("/catalog/default/component/no-such-thing")
    metrics = (await console.get("/metrics")).text
    assert 'operation="page:entity",status="200"' in metrics
    assert 'operation="page:entity",status="404"' in metrics


async def test_a_deploy_event_changes_the_pages_showing_that_component(console: Client) -> None:
    """The component page embeds its deployments panel's answer and shows it in HTML; a deploy
    event drops that answer, so the page's ETag changes and the new deploy shows."""
    import hashlib
    import hmac

    path = "/catalog/default/component/checkout"
    first = await console.get(path)
    assert 'aria-labelledby="deployments"' in first.text
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
