"""The ``atrium`` command, run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def atrium(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atrium.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["serve"],
        ["migrate"],
        ["catalog"],
        ["catalog", "import"],
        ["schema"],
        ["schema", "print"],
        ["schema", "check"],
        ["sync", "ldap"],
        ["token", "create"],
        ["token", "list"],
        ["token", "revoke"],
        ["persisted", "load"],
        ["plugins"],
    ],
)
def test_every_command_has_help(command: list[str]) -> None:
    result = atrium(*command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: atrium")


def test_schema_print_matches_the_committed_schema() -> None:
    # Atrium's own (the core's and the bundled plugins'), whatever else is installed.
    result = atrium("schema", "print")
    assert result.returncode == 0
    assert result.stdout == (ROOT / "schema.graphql").read_text()


def test_catalog_import_reports_and_is_idempotent(database_url: str, tmp_path: Path) -> None:
    env = {"ATRIUM_DATABASE_URL": database_url}
    first = atrium("catalog", "import", str(ROOT / "atrium" / "demo"), env=env)
    assert first.returncode == 0, first.stderr
    assert "created 190, updated 0, unchanged 0, deleted 0, rejected 0" in first.stdout
    again = atrium("catalog", "import", str(ROOT / "atrium" / "demo"), env=env)
    assert "created 0, updated 0, unchanged 190" in again.stdout

    bad = tmp_path / "catalog-info.yaml"
    bad.write_text(
        "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {name: x}\nspec: {type: service}\n"
    )
    rejected = atrium("catalog", "import", str(bad), env=env)
    assert rejected.returncode == 1
    assert f"rejected: {bad} document 1: spec.lifecycle: is required" in rejected.stderr


def test_catalog_import_of_a_missing_path_fails_clearly(database_url: str) -> None:
    result = atrium(
        "catalog", "import", "/no/such/place", env={"ATRIUM_DATABASE_URL": database_url}
    )
    assert result.returncode == 1
    assert "no such file or directory: /no/such/place" in result.stderr


def test_an_unreachable_database_is_a_clear_error() -> None:
    result = atrium("migrate", env={"ATRIUM_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"})
    assert result.returncode == 1
    assert "cannot connect to PostgreSQL" in result.stderr


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_demo_on_the_embedded_database(embedded_home: Path) -> None:
    """What `make run` does: no database configured, an embedded one under ./.atrium."""
    import time

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    env["ATRIUM_SHUTDOWN_GRACE"] = "0"  # no balancer to leave: SIGTERM stops it at once
    process = subprocess.Popen(
        [sys.executable, "-m", "atrium.cli", "serve", "--demo", "--port", str(port)],
        cwd=embedded_home,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.stdout.read() if process.stdout else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become ready"
            time.sleep(0.2)
        query = '{ entity(ref: "component:checkout") { ... on Component { owner { ref } system { ref } dependencies { ref } providesApis { ref } } } }'
        body = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": query}).json()
        entity = body["data"]["entity"]
        assert entity["owner"]["ref"] == "group:default/checkout-team"
        assert entity["dependencies"] and entity["providesApis"]
        assert (embedded_home / ".atrium" / "pgdata" / "PG_VERSION").exists()
        # The demo's emulated cluster, with a workload for each of the demo's services.
        workloads = "{ clusters { name synced healthy } pinApps(first: 1) { totalCount } }"
        while True:
            answer = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": workloads})
            data = answer.json()["data"]
            if data["clusters"] and data["clusters"][0]["synced"]:
                break
            assert time.monotonic() < deadline, data
            time.sleep(0.2)
        assert data["clusters"] == [{"name": "demo (emulated)", "synced": True, "healthy": True}]
        assert data["pinApps"]["totalCount"] > 20
        kubeconfig = yaml.safe_load(
            (embedded_home / ".atrium" / "demo-kubeconfig.yaml").read_text()
        )
        cluster_url = kubeconfig["clusters"][0]["cluster"]["server"]
        assert httpx.get(f"{cluster_url}/api/v1/pods").status_code == 200
        # The demo's Prometheus and Alertmanager: a service's metrics and its firing alert.
        observed = """{ entity(ref: "component:cart-service") { ... on Component {
            metrics(names: ["request_rate"]) { points } alerts { name severity } } } }"""
        answer = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": observed})
        cart = answer.json()["data"]["entity"]
        assert cart["alerts"] == [{"name": "HighErrorRatio", "severity": "critical"}], answer.text
        [rate] = cart["metrics"]
        assert len(rate["points"]) > 200 and all(v for _, v in rate["points"]), rate
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0]
    lines = output.splitlines()
    # Quiet: one plain line saying where to go; the rest JSON logs, none of them the embedded
    # PostgreSQL's start-up steps or uvicorn's banner.
    plain = [line for line in lines if not line.startswith("{")]
    assert plain == [
        f"Atrium is serving the console at http://127.0.0.1:{port}/ and the API at /graphql; "
        "Ctrl+C stops it"
    ], output
    logs = [orjson.loads(line) for line in lines if line.startswith("{")]
    assert not [entry for entry in logs if entry["logger"] in ("pgserver", "uvicorn.error")]
    loaded = [entry for entry in logs if entry["message"] == "demo organisation loaded"]
    assert loaded and loaded[0]["entities"] == 190
    # The demo says where its metrics and alerts come from (make test installs both servers).
    [observability] = [e for e in logs if e["message"] == "demo metrics and alerts serving"]
    assert observability["alerts"] == ["HighErrorRatio", "HighLatency"], observability
    assert observability["services"] == 35, observability
    assert observability["series"] == 35 * 10, observability  # requests by code, latency buckets
    # Besides a line per migration, per plugin's demo and per request, only these say anything.
    expected = (
        "embedded PostgreSQL running",
        "demo organisation loaded",
        "demo cluster serving",
        "demo deploy history written",
        "the console is not built",
        "demo metrics and alerts serving",
        "demo metrics history written",
    )
    routine = ("applied migration", "graphql request", "demo started", "ready", "stopping now")
    said = [entry["message"] for entry in logs if entry["message"] not in routine]
    assert all(message.startswith(expected) for message in said), output
    # Stopping the server stops the embedded PostgreSQL it started, the demo's cluster, its
    # Prometheus and its Alertmanager.
    assert not (embedded_home / ".atrium" / "pgdata" / "postmaster.pid").exists()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{cluster_url}/api/v1/pods")
    for backend in ("prometheus", "alertmanager"):
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{observability[backend]}/-/ready")


def test_persisted_load_trusts_a_manifest_that_fits_the_schema(
    database_url: str, tmp_path: Path
) -> None:
    import json

    from sources.persisted import document_hash

    good = 'query Page { entity(ref: "component:checkout") { ref } }'
    manifest = tmp_path / "manifest.json"
    manifest.write_text(
        json.dumps(
            {
                "format": "apollo-persisted-query-manifest",
                "version": 1,
                "operations": [
                    {"id": document_hash(good), "name": "Page", "type": "query", "body": good}
                ],
            }
        )
    )
    env = {"ATRIUM_DATABASE_URL": database_url}
    loaded = atrium("persisted", "load", str(manifest), env=env)
    assert loaded.returncode == 0, loaded.stderr
    assert "trusted 1 operations" in loaded.stdout

    stale = "query Old { gone }"
    manifest.write_text(
        json.dumps(
            {
                "format": "apollo-persisted-query-manifest",
                "version": 1,
                "operations": [
                    {"id": document_hash(stale), "name": "Old", "type": "query", "body": stale}
                ],
            }
        )
    )
    refused = atrium("persisted", "load", str(manifest), env=env)
    assert refused.returncode == 1
    assert (
        "'Old': Cannot query field 'gone'" in refused.stderr and "nothing loaded" in refused.stderr
    )


VETS_API = """\
apiVersion: backstage.io/v1alpha1
kind: API
metadata:
  name: vets-api
spec:
  type: openapi
  lifecycle: production
  owner: pet-team
  system: petshop
  definition:
    $text: {url}
"""
VETS_OAS = "openapi: 3.0.3\ninfo: {title: Vets, version: 1.0.0}\npaths: {}\n"


async def test_catalog_import_reads_placeholders_and_tries_again_what_it_could_not(
    database_url: str, tmp_path: Path, make_client: Any
) -> None:
    import asyncio
    import shutil

    from tests.http_files import http_server

    root = tmp_path / "petshop"
    shutil.copytree(ROOT / "tests/fixtures/petshop", root)
    definition = (root / "apis/pets.oas.yaml").read_text()
    (root / "apis/pets.oas.yaml").unlink()
    env = {"ATRIUM_DATABASE_URL": database_url, "ATRIUM_CATALOG_FETCH_HOSTS": "127.0.0.1"}

    async def run() -> subprocess.CompletedProcess[str]:
        done = await asyncio.to_thread(atrium, "catalog", "import", str(root), env=env)
        assert done.returncode == 0, done.stderr
        return done

    with http_server() as http:
        (root / "apis/vets-api.yaml").write_text(
            VETS_API.format(url=http.serve("/vets.yaml", VETS_OAS))
        )
        first = await run()
        assert (
            "created 7, updated 0, unchanged 0, deleted 0, rejected 0; "
            "1 stored with fields unavailable" in first.stdout
        )
        assert "skipped 2 YAML files that declare no entity" in first.stdout
        pets_api = (root / "apis/pets-api.yaml").resolve()
        # What it says to a person (the JSON lines are logs: migrations it applied, say).
        said = [line for line in first.stderr.splitlines() if not line.startswith("{")]
        assert said == [
            f"unavailable: {pets_api} document 1 (api:default/pets-api): spec.definition: "
            "$text './pets.oas.yaml': no such file"
        ]
        # Nothing changed, but what failed is tried again, and reported again.
        second = await run()
        assert "created 0, updated 1, unchanged 6" in second.stdout
        assert "unavailable:" in second.stderr

        (root / "apis/pets.oas.yaml").write_text(definition)
        third = await run()
        assert "created 0, updated 1, unchanged 6, deleted 0, rejected 0\n" in third.stdout
        assert "skipped 3 YAML files" in third.stdout and third.stderr == ""
        assert http.count("/vets.yaml") == 3  # once per import

        client = await make_client()
        body = await client.gql(
            """{ pets: entity(ref: "api:pets-api") { ... on API { definition definitionUnavailable } }
                 vets: entity(ref: "api:vets-api") { ... on API { definition owner { ref } } } }"""
        )
        assert body["data"] == {
            "pets": {"definition": definition, "definitionUnavailable": None},
            "vets": {"definition": VETS_OAS, "owner": {"ref": "group:default/pet-team"}},
        }
        fourth = await run()
        assert "created 0, updated 0, unchanged 7" in fourth.stdout
