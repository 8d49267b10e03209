"""Backstage's placeholders ($text, $json, $yaml) in imported catalog files, and APIs described
by their remotes instead of a definition."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sources.catalog.documents import parse_documents, read_paths
from sources.catalog.placeholders import FetchPolicy, raw_url
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = "openapi: 3.0.0\ninfo: {title: Pets, version: 1.0.0}\npaths: {}\n"
API = """\
apiVersion: backstage.io/v1alpha1
kind: API
metadata:
  name: {name}
spec:
  type: openapi
  lifecycle: production
  owner: team-a
  system: shop
  definition:
    {placeholder}
"""
API_PAGE = """query($ref: String!) { entity(ref: $ref) {
  ref unavailable { field reason }
  ... on API { definition definitionUnavailable owner { ref } ownerRef system { ref } remotes { type url } }
} }"""


class Served:
    """A local HTTP server answering from ``routes``: path → (status, body, headers)."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        self.hits: list[str] = []
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.hits.append(self.path)
                status, body, headers = served.routes.get(self.path, (404, b"no", {}))
                if self.path == "/slow":
                    time.sleep(1.5)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def http() -> Iterator[Served]:
    served = Served()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        served.server.shutdown()
        served.server.server_close()
        thread.join(5)


LOCAL = FetchPolicy(hosts=frozenset({"127.0.0.1"}), timeout=1.0, max_bytes=10_000)


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "catalog"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


async def page(client: Client, ref: str) -> dict[str, Any]:
    body = await client.gql(API_PAGE, {"ref": ref})
    entity: dict[str, Any] = body["data"]["entity"]
    return entity


def test_relative_files_as_text_json_and_yaml(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "apis/pets.yaml": API.format(name="pets", placeholder="$text: ./pets.oas.yaml")
            + "  servers:\n    $json: ./servers.json\n  extra:\n    $yaml: ../shared/extra.yaml\n"
            + "  schema:\n    $ref: '#/definitions/x'\n",
            "apis/pets.oas.yaml": OPENAPI,
            "apis/servers.json": '[{"url": "https://pets.example"}]',
            "shared/extra.yaml": "tier: 1\nsince: 2024-01-01\n",
        },
    )
    batch = read_paths([root])
    assert not batch.errors
    # The definition files are not catalog files: skipped, not rejected.
    assert sorted(Path(s).name for s in batch.skipped) == ["extra.yaml", "pets.oas.yaml"]
    [(_, entity)] = batch.entities
    assert entity.spec["definition"] == OPENAPI
    assert entity.spec["servers"] == [{"url": "https://pets.example"}]
    assert entity.spec["extra"] == {"tier": 1, "since": "2024-01-01"}
    assert entity.spec["schema"] == {"$ref": "#/definitions/x"}  # not a placeholder of ours
    assert entity.unavailable == {}


@pytest.mark.parametrize(
    ("placeholder", "files", "reason"),
    [
        ("$text: ./missing.yaml", {}, "no such file"),
        ("$text: ../../outside.yaml", {"../outside.yaml": OPENAPI}, "outside the tree"),
        ("$text: /etc/hostname", {}, "outside the tree"),
        ("$json: ./bad.json", {"apis/bad.json": "{nope"}, "is not valid JSON"),
        ("$yaml: ./two.yaml", {"apis/two.yaml": "a: 1\n---\nb: 2\n"}, "exactly one YAML"),
        ("$text: file:///etc/hostname", {}, "file: URLs are not read"),
        ("$text: https://example.com/pets.yaml", {}, "reading from example.com is not allowed"),
        ("$text: ''", {}, "expected a relative path"),
    ],
)
def test_what_cannot_be_read_leaves_the_entity_with_a_reason(
    tmp_path: Path, placeholder: str, files: dict[str, str], reason: str
) -> None:
    root = tree(tmp_path, {"apis/pets.yaml": API.format(name="pets", placeholder=placeholder)})
    for name, text in files.items():
        (root / name).write_text(text)
    batch = read_paths([root])
    assert not batch.errors
    [(_, entity)] = batch.entities
    assert entity.owner_ref == "group:default/team-a" and entity.system_ref == "system:default/shop"
    assert "definition" not in entity.spec or entity.spec["definition"] is None
    assert list(entity.unavailable) == ["spec.definition"]
    assert reason in entity.unavailable["spec.definition"]


def test_a_symlink_out_of_the_tree_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    root = tree(tmp_path, {"apis/pets.yaml": API.format(name="pets", placeholder="$text: ./l")})
    (root / "apis" / "l").symlink_to(secret)
    [(_, entity)] = read_paths([root]).entities
    assert "outside the tree" in entity.unavailable["spec.definition"]
    assert "hunter2" not in str(entity.spec)


def test_urls_the_policy_allows_are_read_once_per_import(tmp_path: Path, http: Served) -> None:
    http.routes["/pets.yaml"] = (200, OPENAPI.encode(), {})
    http.routes["/moved"] = (302, b"", {"location": "/pets.yaml"})
    http.routes["/big"] = (200, b"x" * 20_000, {})
    http.routes["/away"] = (302, b"", {"location": "https://example.com/x"})
    placeholders = {
        "a": f"$text: {http.url}/pets.yaml",
        "b": f"$text: {http.url}/pets.yaml",
        "c": f"$text: {http.url}/moved",
        "d": f"$text: {http.url}/big",
        "e": f"$text: {http.url}/gone",
        "f": f"$text: {http.url}/away",
        "g": f"$text: {http.url}/slow",
    }
    root = tree(
        tmp_path, {f"{n}.yaml": API.format(name=n, placeholder=p) for n, p in placeholders.items()}
    )
    entities = {e.name: e for _, e in read_paths([root], LOCAL).entities}
    assert entities["a"].spec["definition"] == entities["b"].spec["definition"] == OPENAPI
    assert entities["c"].spec["definition"] == OPENAPI
    assert http.hits.count("/pets.yaml") == 2  # once directly, once through the redirect
    assert "larger than 10,000 bytes" in entities["d"].unavailable["spec.definition"]
    assert "HTTP 404" in entities["e"].unavailable["spec.definition"]
    assert "reading from example.com is not allowed" in entities["f"].unavailable["spec.definition"]
    assert "1 s" in entities["g"].unavailable["spec.definition"]


def test_an_unreachable_url(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    root = tree(
        tmp_path,
        {"pets.yaml": API.format(name="pets", placeholder=f"$text: http://127.0.0.1:{port}/x")},
    )
    [(_, entity)] = read_paths([root], LOCAL).entities
    assert "could not be read" in entity.unavailable["spec.definition"]


async def test_unavailable_is_visible_and_the_next_import_fills_it_in(
    client: Client, tmp_path: Path
) -> None:
    root = tree(
        tmp_path, {"pets.yaml": API.format(name="pets", placeholder="$text: ./pets.oas.yaml")}
    )
    db = client.services.db
    first = await apply_batch(db, read_paths([root]))
    assert first.created == ["api:default/pets"]
    shown = await page(client, "api:pets")
    assert shown["definition"] is None
    assert "no such file" in shown["definitionUnavailable"]
    assert shown["unavailable"] == [
        {"field": "spec.definition", "reason": shown["definitionUnavailable"]}
    ]
    assert shown["ownerRef"] == "group:default/team-a"

    (root / "pets.oas.yaml").write_text(OPENAPI)
    second = await apply_batch(db, read_paths([root]))
    assert second.updated == ["api:default/pets"]
    await client.services.invalidate(second.affected)
    shown = await page(client, "api:pets")
    assert shown["definition"] == OPENAPI
    assert shown["definitionUnavailable"] is None and shown["unavailable"] == []
    # Unchanged files write nothing; a changed definition file updates the entity.
    assert (await apply_batch(db, read_paths([root]))).unchanged == ["api:default/pets"]
    (root / "pets.oas.yaml").write_text(OPENAPI.replace("1.0.0", "2.0.0"))
    assert (await apply_batch(db, read_paths([root]))).updated == ["api:default/pets"]


async def test_text_sent_through_the_api_can_name_urls_only(
    make_client: AppFactory, http: Served
) -> None:
    http.routes["/pets.yaml"] = (200, OPENAPI.encode(), {})
    client = await make_client(catalog_fetch_hosts="127.0.0.1")
    yaml_text = (
        API.format(name="by-url", placeholder=f"$text: {http.url}/pets.yaml")
        + "---\n"
        + API.format(name="by-path", placeholder="$text: ./pets.oas.yaml")
    )
    body = await client.gql(
        "mutation($y: String!) { applyEntities(yaml: $y) { created errors { message } } }",
        {"y": yaml_text},
        token=await client.admin_token(),
    )
    assert body["data"]["applyEntities"] == {
        "created": ["api:default/by-url", "api:default/by-path"],
        "errors": [],
    }
    assert (await page(client, "api:by-url"))["definition"] == OPENAPI
    by_path = await page(client, "api:by-path")
    assert "only name absolute http(s) URLs" in by_path["definitionUnavailable"]


async def test_an_mcp_server_is_described_by_its_remotes(client: Client) -> None:
    text = """\
apiVersion: backstage.io/v1alpha1
kind: API
metadata: {name: tools}
spec:
  type: mcp-server
  lifecycle: experimental
  owner: team-a
  remotes:
    - type: streamable-http
      url: http://localhost:7007/api/mcp/v1
"""
    result = await apply_batch(client.services.db, parse_documents(text, "mcp.yaml"))
    assert result.created == ["api:default/tools"] and not result.errors
    shown = await page(client, "api:tools")
    assert shown["definition"] is None and shown["definitionUnavailable"] is None
    assert shown["remotes"] == [
        {"type": "streamable-http", "url": "http://localhost:7007/api/mcp/v1"}
    ]
    # An OpenAPI API without its definition describes nothing; newer types may go without.
    bare = parse_documents(
        text.split("  remotes:")[0].replace("mcp-server", "openapi"), "bare.yaml"
    )
    assert [(e.field, e.message) for e in bare.errors] == [("spec.definition", "is required")]
    server = parse_documents(
        text.split("  remotes:")[0].replace("mcp-server", "ai-model-server")
        + "  serverUrl: http://localhost:11434/v1\n",
        "model.yaml",
    )
    assert not server.errors and server.entities[0][1].spec["serverUrl"]
    wrong = parse_documents(text.replace("url:", "href:"), "wrong.yaml")
    assert [e.field for e in wrong.errors] == ["spec.remotes[0].url"]


def test_catalog_import_reports_what_is_unavailable(tmp_path: Path, database_url: str) -> None:
    root = tree(
        tmp_path,
        {
            "pets.yaml": API.format(name="pets", placeholder="$text: ./pets.oas.yaml"),
            "cats.yaml": API.format(name="cats", placeholder="$text: ./nope.yaml"),
            "pets.oas.yaml": OPENAPI,
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    result = subprocess.run(
        [sys.executable, "-m", "graph.cli", "catalog", "import", str(root)],
        cwd=ROOT,
        env={**env, "ATRIUM_DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "created 2, updated 0, unchanged 0, deleted 0, rejected 0" in result.stdout
    assert "1 with fields unavailable (kept)" in result.stdout
    assert "skipped 1 files placeholders read" in result.stdout
    assert "api:default/cats spec.definition: $text './nope.yaml': no such file" in result.stderr


def test_pages_of_files_are_read_as_the_files() -> None:
    assert (
        raw_url("https://github.com/APIs-guru/openapi-directory/blob/dab6854/APIs/x/openapi.yaml")
        == "https://raw.githubusercontent.com/APIs-guru/openapi-directory/dab6854/APIs/x/openapi.yaml"
    )
    assert (
        raw_url("https://gitlab.example/group/repo/-/blob/main/api.yaml?ref_type=heads")
        == "https://gitlab.example/group/repo/-/raw/main/api.yaml?ref_type=heads"
    )
    plain = "https://raw.githubusercontent.com/o/r/main/a.yaml"
    assert raw_url(plain) == plain and raw_url("https://github.com/o/r") == "https://github.com/o/r"
