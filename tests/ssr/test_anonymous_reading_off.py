"""With ATRIUM_ANONYMOUS_READ off, nobody reads anything from any face: the console's pages as
/graphql, /api/catalog and a plugin's routes that answer with data (one rule,
``graph.auth.viewer.may_read``). A page for nobody renders nothing and is kept nowhere; a
person the trusted proxy names sees it, privately."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from graph.auth.viewer import ANONYMOUS_READ_OFF
from graph.plugin import PluginBuilder
from sources.auth import create_token
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client, demo_batch
from tests.ssr.test_pages import _build, _plugins

PAGES = (
    "/",
    "/catalog",
    "/catalog?kind=component",
    "/catalog/default/component/checkout",
    "/catalog/default/group/checkout-team",
    "/catalog/default/user/amelia.chen",
    "/catalog/default/api/checkout-api",
    "/workloads/east/shop/checkout",
    "/catalog/default/component/no-such-thing",
)


@pytest.fixture(params=["development", "production"])
async def closed(make_client: AppFactory, tmp_path: Path, request: pytest.FixtureRequest) -> Client:
    client = await make_client(
        plugins=_plugins(), web_dir=_build(tmp_path), anonymous_read=False, mode=request.param
    )
    assert not (await apply_batch(client.services.db, demo_batch())).errors
    return client


async def test_no_page_is_shown_to_nobody(closed: Client) -> None:
    for path in PAGES:
        page = await closed.get(path)
        assert page.status_code == 401, (path, page.status_code, page.text[:300])
        assert page.text == ANONYMOUS_READ_OFF, path
        assert page.headers["cache-control"] == "no-store", path
        assert page.headers["www-authenticate"] == "Bearer"
        assert "etag" not in page.headers
    # The same refusal as the API's, for the same data.
    api = await closed.get("/api/catalog/entities/by-name/group/default/checkout-team")
    assert api.status_code == 401, api.text
    graphql = await closed.post("/graphql", json={"query": "{ viewer { ref } }"})
    assert graphql.status_code == 401, graphql.text


async def test_a_browser_is_told_how_to_get_in_and_shown_nothing_else(closed: Client) -> None:
    browser = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    for path in PAGES:
        page = await closed.get(path, headers=browser)
        assert page.status_code == 401, (path, page.status_code)
        assert page.headers["content-type"].startswith("text/html"), path
        assert page.headers["cache-control"] == "no-store", path
        assert "<title>Sign in · Atrium</title>" in page.text, path
        assert "anonymous reading is off" in page.text and "an API token" in page.text, path
        # Nothing of the page asked for: no team, no people, no script to fetch them.
        assert "Checkout" not in page.text and "amelia" not in page.text, path
        assert "<script" not in page.text, path


async def test_a_person_the_proxy_names_sees_the_page_privately(closed: Client) -> None:
    team = await closed.get(
        "/catalog/default/group/checkout-team", headers={"x-forwarded-user": "amelia.chen"}
    )
    assert team.status_code == 200, team.text[:500]
    assert "Checkout" in team.text
    assert "public" not in team.headers["cache-control"], team.headers["cache-control"]


async def test_where_people_sign_in_a_page_leads_there_and_back(
    make_client: AppFactory, tmp_path: Path
) -> None:
    client = await make_client(
        plugins=_plugins(),
        web_dir=_build(tmp_path),
        anonymous_read=False,
        oidc_issuer="https://login.example",
        oidc_client_id="atrium",
        oidc_client_secret="the client's secret at the provider",
        public_url="http://127.0.0.1:8000",
    )
    page = await client.get("/catalog/default/group/checkout-team?tab=members")
    assert page.status_code == 303, page.text[:300]
    assert page.headers["location"] == (
        "/auth/login?next=%2Fcatalog%2Fdefault%2Fgroup%2Fcheckout-team%3Ftab%3Dmembers"
    )
    assert page.headers["cache-control"] == "no-store"
    assert not page.content


async def test_a_page_read_with_a_token_is_no_one_elses(closed: Client) -> None:
    """A read token that names no one: what it read is private all the same."""
    _, token = await create_token(closed.services.db, "dashboard", ["read"], None)
    team = await closed.get(
        "/catalog/default/group/checkout-team", headers={"authorization": f"Bearer {token}"}
    )
    assert team.status_code == 200, team.text[:500]
    assert team.headers["cache-control"] == "private, no-cache"


class _Reports:
    """A plugin with a route that answers with data (``viewer=True``) and a webhook that
    checks its callers itself."""

    id = "reports"

    def setup(self, builder: PluginBuilder) -> None:
        async def report(request: Request) -> Response:
            return JSONResponse({"for": request.state.viewer.ref})

        async def hook(request: Request) -> Response:
            return JSONResponse({"received": True})

        builder.route("/plugins/reports/latest", report, methods=("GET",), viewer=True)
        builder.route("/hooks/reports", hook)


async def test_a_plugins_route_that_reads_is_refused_to_nobody_by_the_same_rule(
    make_client: AppFactory,
) -> None:
    client = await make_client(plugins=[_Reports()], anonymous_read=False)
    refused = await client.get("/plugins/reports/latest")
    assert refused.status_code == 401, refused.text
    assert refused.json() == {"error": ANONYMOUS_READ_OFF}
    assert refused.headers["cache-control"] == "no-store"
    assert refused.headers["www-authenticate"] == "Bearer"
    forged = await client.get("/plugins/reports/latest", headers={"Authorization": "Bearer atr_x"})
    assert forged.status_code == 401, forged.text
    person = await client.get("/plugins/reports/latest", headers={"x-forwarded-user": "ann"})
    assert person.json() == {"for": "user:default/ann"}
    _, token = await create_token(client.services.db, "reports", ["read"], None)
    reader = await client.get(
        "/plugins/reports/latest", headers={"Authorization": f"Bearer {token}"}
    )
    assert reader.status_code == 200 and reader.json() == {"for": None}
    # A webhook is the plugin's to guard (a signature): Atrium lets its callers through.
    assert (await client.post("/hooks/reports")).json() == {"received": True}
