"""Catalog files with placeholders, imported and read back through GraphQL: what was read, what
could not be and why, and the next import filling in what has been mended."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sources.catalog.documents import read_paths
from sources.catalog.placeholders import FetchPolicy
from sources.catalog.store import ApplyResult, apply_batch
from tests.conftest import AppFactory, Client
from tests.http_files import Served, free_port, http_server

PETSHOP = Path(__file__).resolve().parents[1] / "fixtures" / "petshop"
PAGE = """query($ref: String!) { entity(ref: $ref) {
  ref labels links { url title } unavailable { field reason }
  ... on API { ownerRef definition definitionUnavailable system { ref } providers { ref } remotes { type url } }
} }"""
REMOTE_OAS = "openapi: 3.0.3\ninfo: {title: Vets, version: 2.0.0}\npaths: {}\n"
LOCAL = FetchPolicy(hosts=frozenset({"127.0.0.1"}), timeout=1.0)


@pytest.fixture
def http() -> Iterator[Served]:
    with http_server() as served:
        yield served


@pytest.fixture
def root(tmp_path: Path) -> Path:
    copy = tmp_path / "petshop"
    shutil.copytree(PETSHOP, copy)
    return copy


async def page(client: Client, ref: str) -> dict[str, Any]:
    entity: dict[str, Any] = (await client.gql(PAGE, {"ref": ref}))["data"]["entity"]
    return entity


async def imported(client: Client, root: Path, fetch: FetchPolicy = LOCAL) -> ApplyResult:
    """What ``atrium catalog import ROOT`` does (reading in a thread), then the app's caches
    told."""
    batch = await asyncio.to_thread(read_paths, [root], fetch)
    result = await apply_batch(client.services.db, batch)
    assert result.errors == []
    await client.services.invalidate(result.affected)
    return result


async def test_the_petshop_reads_as_written(client: Client, root: Path) -> None:
    result = await imported(client, root)
    assert len(result.created) == 6 and result.unavailable == []
    pets = await page(client, "api:pets-api")
    assert pets["definition"] == (root / "apis/pets.oas.yaml").read_text()
    assert pets["definitionUnavailable"] is None and pets["unavailable"] == []
    assert pets["links"] == [{"url": "https://pets.example.org/docs", "title": "Pets guide"}]
    assert pets["providers"] == [{"ref": "component:default/pet-store"}]
    orders = await page(client, "api:orders-api")
    assert orders["definition"].startswith("asyncapi: 2.6.0\n")
    assert orders["labels"] == {"tier": "2", "domain": "commerce"}
    # An MCP server has no definition, and needs none: its remotes say where it is reached.
    helper = await page(client, "api:pet-helper")
    assert helper["definition"] is None and helper["definitionUnavailable"] is None
    assert helper["remotes"] == [
        {"type": "streamable-http", "url": "https://pets.example.org/mcp"},
        {"type": "stdio", "url": "npx pet-helper-mcp"},
    ]
    assert helper["system"] == {"ref": "system:default/petshop"}


OAS = (PETSHOP / "apis/pets.oas.yaml").read_text()
PETS_API = "apis/pets-api.yaml"


def write(root: Path, name: str, text: str) -> None:
    (root / name).unlink(missing_ok=True)  # a symlink is replaced, not written through
    (root / name).write_text(text)


def repoint(root: Path, target: str) -> None:
    """The pets API's definition read from ``target`` instead of ./pets.oas.yaml."""
    write(root, PETS_API, (PETSHOP / PETS_API).read_text().replace("./pets.oas.yaml", target))


def as_shipped(root: Path, http: Served) -> None:
    shutil.rmtree(root)
    shutil.copytree(PETSHOP, root)


def remove_definition(root: Path, http: Served, outside: Path) -> None:
    (root / "apis/pets.oas.yaml").unlink()


def climb_out(root: Path, http: Served, outside: Path) -> None:
    repoint(root, "../../outside/pets.oas.yaml")


def link_out(root: Path, http: Served, outside: Path) -> None:
    (root / "apis/pets.oas.yaml").unlink()
    (root / "apis/pets.oas.yaml").symlink_to(outside / "pets.oas.yaml")


def break_json(root: Path, http: Served, outside: Path) -> None:
    write(root, "apis/pets-links.json", '[{"url": ')


def break_yaml(root: Path, http: Served, outside: Path) -> None:
    write(root, "shared/labels.yaml", "tier: [2\n")


def url_unavailable(root: Path, http: Served, outside: Path) -> None:
    repoint(root, http.serve("/vets.yaml", "try later", status=503))


def url_available(root: Path, http: Served) -> None:
    repoint(root, http.serve("/vets.yaml", REMOTE_OAS))


def url_unreachable(root: Path, http: Served, outside: Path) -> None:
    repoint(root, f"http://127.0.0.1:{free_port()}/vets.yaml")


# How to break the petshop, the entity and field that go missing, the reason shown, and how to
# mend it. The mended tree is imported again, YAML unchanged where only a file was mended.
Breaks = Callable[[Path, Served, Path], None]
Mends = Callable[[Path, Served], None]
CASES: dict[str, tuple[Breaks, str, str, str, Mends]] = {
    "missing file": (
        remove_definition,
        "api:default/pets-api",
        "spec.definition",
        "$text './pets.oas.yaml': no such file",
        as_shipped,
    ),
    "climbing out of the tree": (
        climb_out,
        "api:default/pets-api",
        "spec.definition",
        "$text '../../outside/pets.oas.yaml': lies outside the tree being imported",
        as_shipped,
    ),
    "a symlink out of the tree": (
        link_out,
        "api:default/pets-api",
        "spec.definition",
        "$text './pets.oas.yaml': lies outside the tree being imported",
        as_shipped,
    ),
    "invalid JSON": (
        break_json,
        "api:default/pets-api",
        "metadata.links",
        "$json './pets-links.json': is not valid JSON",
        as_shipped,
    ),
    "invalid YAML": (
        break_yaml,
        "api:default/orders-api",
        "metadata.labels",
        "$yaml '../shared/labels.yaml': is not valid YAML: ",
        as_shipped,
    ),
    "a URL answering 503": (
        url_unavailable,
        "api:default/pets-api",
        "spec.definition",
        "/vets.yaml': answered HTTP 503 Service Unavailable",
        url_available,
    ),
    "an unreachable URL": (
        url_unreachable,
        "api:default/pets-api",
        "spec.definition",
        "/vets.yaml': could not connect",
        url_available,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_what_cannot_be_read_is_shown_and_the_next_import_fills_it_in(
    client: Client, root: Path, http: Served, tmp_path: Path, case: str
) -> None:
    break_it, ref, field, reason, mend = CASES[case]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "pets.oas.yaml").write_text("openapi: secret\n")
    await imported(client, root)
    break_it(root, http, outside)

    result = await imported(client, root)
    [missing] = result.unavailable
    assert (missing.ref, missing.field) == (ref, field) and reason in missing.reason
    assert ref in result.updated
    shown = await page(client, ref)
    # Kept, with its owner, system and relations; the field empty, and why.
    assert shown["ownerRef"] == "group:default/pet-team"
    assert shown["system"] == {"ref": "system:default/petshop"}
    assert shown["providers"] == [{"ref": "component:default/pet-store"}]
    assert [u["field"] for u in shown["unavailable"]] == [field]
    assert reason in shown["unavailable"][0]["reason"]
    if field == "spec.definition":
        assert shown["definition"] is None
        assert shown["definitionUnavailable"] == shown["unavailable"][0]["reason"]
    else:
        assert shown["definition"] and shown["definitionUnavailable"] is None
        assert shown["links" if field == "metadata.links" else "labels"] in ([], {})
    assert "secret" not in str(shown)

    mend(root, http)
    again = await imported(client, root)
    assert ref in again.updated and again.unavailable == []
    shown = await page(client, ref)
    assert shown["unavailable"] == [] and shown["definitionUnavailable"] is None
    if field == "spec.definition":
        assert shown["definition"] == (REMOTE_OAS if "URL" in case else OAS)
    elif field == "metadata.links":
        assert shown["links"] == [{"url": "https://pets.example.org/docs", "title": "Pets guide"}]
    else:
        assert shown["labels"] == {"tier": "2", "domain": "commerce"}


async def test_a_host_not_allowed_is_read_once_it_is(
    client: Client, root: Path, http: Served
) -> None:
    http.serve("/vets.yaml", REMOTE_OAS)
    url = f"http://localhost:{http.port}/vets.yaml"
    repoint(root, url)
    await imported(client, root)
    shown = await page(client, "api:pets-api")
    assert shown["definition"] is None
    assert shown["definitionUnavailable"] == (
        f"$text '{url}': reading from localhost is not allowed "
        "(ATRIUM_CATALOG_FETCH_HOSTS names the hosts imports may read)"
    )
    assert http.count("/vets.yaml") == 0
    await imported(client, root, FetchPolicy(hosts=frozenset({"localhost"})))
    shown = await page(client, "api:pets-api")
    assert shown["definition"] == REMOTE_OAS and shown["definitionUnavailable"] is None


async def test_apply_entities_reads_urls_and_says_a_path_has_no_tree(
    make_client: AppFactory, http: Served
) -> None:
    client = await make_client(catalog_fetch_hosts="127.0.0.1")
    url = http.serve("/vets.yaml", REMOTE_OAS)
    yaml_text = "---\n".join(
        (PETSHOP / "apis/pets-api.yaml")
        .read_text()
        .replace("pets-api", name)
        .replace("./pets.oas.yaml", target)
        .replace("  links:\n    $json: ./pets-links.json\n", "")
        for name, target in (("by-url", url), ("by-path", "./pets.oas.yaml"))
    )
    body = await client.gql(
        """mutation($y: String!) { applyEntities(yaml: $y, location: "ci") {
            created errors { message } unavailable { ref location document field reason } } }""",
        {"y": yaml_text},
        token=await client.admin_token(),
    )
    assert body["data"]["applyEntities"] == {
        "created": ["api:default/by-url", "api:default/by-path"],
        "errors": [],
        "unavailable": [
            {
                "ref": "api:default/by-path",
                "location": "ci",
                "document": 2,
                "field": "spec.definition",
                "reason": "$text './pets.oas.yaml': a relative path needs a catalog file to be "
                "relative to; text sent through the API has none, so it can only name absolute "
                "http(s) URLs",
            }
        ],
    }
    assert (await page(client, "api:by-url"))["definition"] == REMOTE_OAS
    by_path = await page(client, "api:by-path")
    assert by_path["definition"] is None and "has none" in by_path["definitionUnavailable"]
    assert by_path["ownerRef"] == "group:default/pet-team"
