"""The clients people point at Atrium, run for real against a uvicorn-served Atrium.

Apollo Client 4 (npm ``@apollo/client``, run by Node) configured as the console configures it,
and graphql-http's server audit, the GraphQL-over-HTTP conformance suite. Both talk over HTTP
to ``atrium serve`` (uvicorn, uvloop, httptools) started for this module on a database of its
own with the demo organisation loaded. Each Node script runs once per module and prints JSON;
the tests read it. The npm packages come from ``tests/clients/package-lock.json`` (``make test``
runs ``npm ci``). When a test fails, the server's log is printed with it.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import orjson
import pytest

from atrium.testing.databases import new_database_name
from sources.auth import create_token
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.conftest import _admin, _with_database, demo_batch

CLIENTS = Path(__file__).resolve().parent / "clients"
REF = "component:default/checkout"
# What Apollo Client's HttpLink sends on every request unless told otherwise.
APOLLO_ACCEPT = "application/graphql-response+json,application/json;q=0.9"
PREFLIGHT_HEADERS = {
    "apollo-require-preflight",
    "x-apollo-operation-name",
    "graphql-require-preflight",
}
PERSISTED_QUERY_NOT_FOUND = {
    "errors": [
        {"message": "PersistedQueryNotFound", "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"}}
    ]
}
# graphql-http's MAY checks that Atrium does not meet, on purpose: GETs with neither a
# Content-Type nor a preflight header, which CSRF prevention refuses as Apollo Server does.
CSRF_REFUSED_AUDITS = {"5A70", "D6D5", "6A70"}


@dataclass(frozen=True, slots=True)
class Served:
    url: str  # .../graphql
    token: str  # an admin API token
    log: Path

    @contextmanager
    def log_on_failure(self) -> Iterator[None]:
        """Print the server's log (pytest shows it with the failure) if the block fails."""
        try:
            yield
        except BaseException:
            print(f"----- atrium serve's log -----\n{self.log.read_text(errors='replace')}")
            raise

    def post(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """A plain POST, as curl would send it: the reference answer."""
        response = httpx.post(self.url, json={"query": query, "variables": variables})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert "errors" not in body, body
        return body["data"]  # type: ignore[no-any-return]


def node(script: str, *args: str) -> Any:
    """Run one of tests/clients' scripts; its last line of output is JSON."""
    if shutil.which("node") is None or not (CLIENTS / "node_modules").is_dir():
        pytest.fail("Node and tests/clients/node_modules are needed: run `make test`")
    result = subprocess.run(
        ["node", str(CLIENTS / script), *args],
        cwd=CLIENTS,
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = result.stdout.splitlines()
    assert lines, f"{script} printed nothing (exit {result.returncode}): {result.stderr}"
    return orjson.loads(lines[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
async def served(pg_admin_url: str, template_db: str) -> AsyncIterator[Served]:
    """`atrium serve` on a database of this module's own, with the demo organisation."""
    name = new_database_name()
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}" template "{template_db}"')
    url = _with_database(pg_admin_url, name)
    db = await Database.connect(url, min_size=1, max_size=2)
    try:
        result = await apply_batch(db, demo_batch())
        assert not result.errors
        _, token = await create_token(db, "real-clients", ["admin"], None)
    finally:
        await db.close()
    try:
        with atrium_serve(url) as (base, log):
            yield Served(f"{base}/graphql", token, log)
    finally:
        async with _admin(pg_admin_url) as conn:
            await conn.execute(f'drop database if exists "{name}" with (force)')


@contextmanager
def atrium_serve(database_url: str) -> Iterator[tuple[str, Path]]:
    """`atrium serve` on 127.0.0.1 and a free port, ready; its output in a file (printed if it
    does not start); stopped on the way out. Run in a directory of its own, so that no
    atrium.toml of the caller's applies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    env["ATRIUM_DATABASE_URL"] = database_url
    env["ATRIUM_SHUTDOWN_GRACE"] = "0"  # no balancer to leave: SIGTERM stops it at once
    with tempfile.TemporaryDirectory(prefix="atrium-served-") as tmp:
        log = Path(tmp, "server.log")
        for _ in range(3):  # the free port may be taken before the server binds it
            port = _free_port()
            serve = ["serve", "--host", "127.0.0.1", "--port", str(port)]
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [sys.executable, "-m", "atrium.cli", *serve],
                    cwd=tmp,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            try:
                if _wait_ready(process, port, log):
                    yield f"http://127.0.0.1:{port}", log
                    return
            finally:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        pytest.fail(f"atrium serve found no free port:\n{log.read_text()}")


def _wait_ready(process: subprocess.Popen[bytes], port: int, log: Path) -> bool:
    """True once /readyz answers 200; False if the port was taken."""
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            output = log.read_text()
            if "cannot listen" in output:
                return False
            pytest.fail(f"atrium serve exited ({process.returncode}):\n{output}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                return True
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"atrium serve was not ready in 60 s:\n{log.read_text()}")
        time.sleep(0.1)


# ---------------------------------------------------------------------------- Apollo Client 4


@pytest.fixture(scope="module")
def apollo(served: Served) -> dict[str, Any]:
    """The console's scenario, run once by Apollo Client against the server (apollo.mjs)."""
    return node("apollo.mjs", served.url, served.token, REF)  # type: ignore[no-any-return]


def step(out: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """The exchanges of one step of the scenario; fails with Apollo's error if it never ran."""
    steps = out["steps"]
    names = list(steps)
    assert name in steps and names.index(name) + 1 < len(names), (
        f"Apollo stopped before {name!r} ended: {out.get('error')}\n{out.get('stack')}"
    )
    start, end = steps[name], steps[names[names.index(name) + 1]]
    exchanges: list[dict[str, Any]] = out["exchanges"][start:end]
    return exchanges


def params(exchange: dict[str, Any]) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(exchange["url"]).query).items()}


def test_apollo_asks_by_hash_over_get_first_and_hears_not_found(
    served: Served, apollo: dict[str, Any]
) -> None:
    with served.log_on_failure():
        miss, *_ = step(apollo, "first")
        assert (miss["method"], miss["status"]) == ("GET", 200), miss
        query = params(miss)
        assert "query" not in query
        assert query["operationName"] == "EntityPage"
        assert orjson.loads(query["variables"]) == {"ref": REF}
        persisted = orjson.loads(query["extensions"])["persistedQuery"]
        assert persisted["version"] == 1 and len(persisted["sha256Hash"]) == 64
        # Apollo's own headers: a JSON content type even on GET, no preflight header.
        sent = miss["requestHeaders"]
        assert sent["content-type"] == "application/json"
        assert sent["accept"] == APOLLO_ACCEPT
        assert not PREFLIGHT_HEADERS & set(sent)
        assert miss["responseBody"] == PERSISTED_QUERY_NOT_FOUND
        assert miss["responseHeaders"]["cache-control"] == "private, no-cache, must-revalidate"


def test_apollo_then_registers_the_document_over_post(
    served: Served, apollo: dict[str, Any]
) -> None:
    with served.log_on_failure():
        miss, register = step(apollo, "first")
        digest = orjson.loads(params(miss)["extensions"])["persistedQuery"]["sha256Hash"]
        assert (register["method"], register["status"]) == ("POST", 200), register
        body = register["body"]
        assert body["extensions"]["persistedQuery"] == {"version": 1, "sha256Hash": digest}
        assert hashlib.sha256(body["query"].encode()).hexdigest() == digest
        assert body["variables"] == {"ref": REF}
        assert register["requestHeaders"]["content-type"] == "application/json"
        assert register["responseHeaders"]["content-type"].startswith(
            "application/graphql-response+json"
        )
        assert "errors" not in register["responseBody"]
        assert register["responseBody"]["data"]["entity"]["ref"] == REF


def _counters(lines: list[str]) -> dict[str, float]:
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in lines}


def test_a_new_page_load_is_one_get_answered_from_the_response_cache(
    served: Served, apollo: dict[str, Any]
) -> None:
    with served.log_on_failure():
        miss, _ = step(apollo, "first")
        [hit] = step(apollo, "second")
        assert (hit["method"], hit["status"]) == ("GET", 200), hit
        assert hit["url"] == miss["url"]  # the same hash and variables, no text
        assert hit["requestHeaders"]["content-type"] == "application/json"
        assert not PREFLIGHT_HEADERS & set(hit["requestHeaders"])
        headers = hit["responseHeaders"]
        assert headers["content-type"].startswith("application/graphql-response+json")
        assert headers["cache-control"] == "max-age=60, public"
        assert headers["etag"].startswith('"') and headers["etag"].endswith('"')
        assert headers["vary"] == "Accept, Authorization, X-Forwarded-User, Cookie"
        assert "errors" not in hit["responseBody"]
        # Answered from the response cache: one more hit there, nothing else.
        counters = apollo["results"]["counters"]
        before, after = _counters(counters["before"]), _counters(counters["after"])
        key = 'atrium_cache_lookups{level="response",outcome="hit"}'
        assert after.get(key, 0) - before.get(key, 0) == 1, counters
        # A browser holding the answer revalidates it for nothing.
        again = httpx.get(
            hit["url"],
            headers={
                "accept": APOLLO_ACCEPT,
                "content-type": "application/json",
                "if-none-match": headers["etag"],
            },
        )
        assert again.status_code == 304 and again.content == b""


def test_apollo_gets_the_data_a_plain_post_gets(served: Served, apollo: dict[str, Any]) -> None:
    with served.log_on_failure():
        _, register = step(apollo, "first")
        [hit] = step(apollo, "second")
        # The document as Apollo sent it (it adds __typename to every selection).
        expected = served.post(register["body"]["query"], {"ref": REF})
        assert expected["entity"]["owner"]["ref"] == "group:default/checkout-team"
        assert expected["entity"]["dependencies"]
        results = apollo["results"]
        assert results["first"] == expected
        assert results["second"] == expected
        assert hit["responseBody"]["data"] == expected


def test_a_mutation_through_the_same_client_goes_over_post_and_runs(
    served: Served, apollo: dict[str, Any]
) -> None:
    with served.log_on_failure():
        exchanges = step(apollo, "mutation")
        assert [e["method"] for e in exchanges] == ["POST", "POST"], exchanges
        by_hash, with_text = exchanges
        assert "query" not in by_hash["body"] and by_hash["body"]["extensions"]["persistedQuery"]
        assert by_hash["responseBody"] == PERSISTED_QUERY_NOT_FOUND
        assert with_text["status"] == 200 and "errors" not in with_text["responseBody"]
        for exchange in exchanges:
            assert exchange["requestHeaders"]["authorization"] == f"Bearer {served.token}"
        made = "component:default/made-by-apollo"
        assert apollo["results"]["mutation"]["applyEntities"]["created"] == [made]
        assert served.post("query($r: String!) { entity(ref: $r) { ref } }", {"r": made}) == {
            "entity": {"ref": made}
        }


@pytest.mark.parametrize(
    ("name", "by_hash"),
    [("hashOverGet", True), ("textOverGet", False)],
    ids=["by hash", "with its text"],
)
def test_a_mutation_forced_over_get_is_refused_and_does_not_run(
    served: Served, apollo: dict[str, Any], name: str, by_hash: bool
) -> None:
    with served.log_on_failure():
        [refused] = step(apollo, name)
        assert refused["method"] == "GET"
        assert ("query" in params(refused)) is not by_hash
        assert refused["status"] == 405, refused
        assert refused["responseHeaders"]["allow"] == "POST"
        assert "data" not in refused["responseBody"]
        # Apollo Client reports the refusal as the GraphQL error it carries.
        error = apollo["results"][name].get("error")
        assert error and "POST" in error["message"], apollo["results"][name]
        ref = f"component:default/refused-{'hash' if by_hash else 'text'}-over-get"
        query = "query($r: String!) { entity(ref: $r) { ref } }"
        assert served.post(query, {"r": ref}) == {"entity": None}


# --------------------------------------------------------------------- graphql-http's audit


@pytest.fixture(scope="module")
def audit(served: Served) -> dict[str, Any]:
    """graphql-http's auditServer run once against the server (audit.mjs)."""
    return node("audit.mjs", served.url)  # type: ignore[no-any-return]


def _level(result: dict[str, Any]) -> str:
    return str(result["name"].split()[0])


def test_every_must_and_should_of_the_audit_passes(
    served: Served, audit: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    results = audit["audits"]
    passed: dict[str, int] = {}
    total: dict[str, int] = {}
    for r in results:
        total[_level(r)] = total.get(_level(r), 0) + 1
        passed[_level(r)] = passed.get(_level(r), 0) + (r["status"] == "ok")
    summary = ", ".join(f"{level} {passed[level]}/{total[level]}" for level in sorted(total))
    with capsys.disabled():
        print(f"\ngraphql-http audit of atrium serve: {summary} passed")
    with served.log_on_failure():
        assert set(total) == {"MUST", "SHOULD", "MAY"} and total["MUST"] >= 10, summary
        failed = {
            r["id"]: f"{r['name']}: {r['reason']} (answered {r['answer']})"
            for r in results
            if r["status"] != "ok" and _level(r) in ("MUST", "SHOULD")
        }
        assert failed == {}


def test_audit_80d8_passes_because_fetch_sends_accept_star(
    served: Served, audit: dict[str, Any]
) -> None:
    """80D8 ("SHOULD assume application/json when accept is missing") tests the pre-2025
    rule; the current draft answers a request with no Accept in
    application/graphql-response+json, and so does Atrium. The audit's request has no Accept
    only as written: Node's fetch sends it with `Accept: */*`, which both answer as
    application/json. Should fetch stop adding it, 80D8 fails here, and this says why."""
    with served.log_on_failure():
        [check] = [r for r in audit["audits"] if r["id"] == "80D8"]
        assert audit["fetchAccept"] == "*/*"
        assert check["status"] == "ok", check
        # No Accept header at all on the wire (http.client adds none): the current draft's rule.
        split = urlsplit(served.url)
        conn = http.client.HTTPConnection("127.0.0.1", split.port, timeout=10)
        try:
            conn.request(
                "POST",
                split.path,
                body=b'{"query": "{ __typename }"}',
                headers={"content-type": "application/json"},
            )
            response = conn.getresponse()
            body = orjson.loads(response.read())
        finally:
            conn.close()
        assert response.status == 200
        assert response.getheader("content-type", "").startswith(
            "application/graphql-response+json"
        )
        assert body == {"data": {"__typename": "Query"}}


def test_audit_checks_not_met_are_only_gets_refused_by_csrf_prevention(
    served: Served, audit: dict[str, Any]
) -> None:
    """Three MAY checks send GETs with no Content-Type and no preflight header: a request a
    browser sends cross-site unpreflighted, refused by Apollo's CSRF rule. Nothing else may
    fall short; and with a preflight header those same GETs work."""
    with served.log_on_failure():
        not_met = {r["id"]: r for r in audit["audits"] if r["status"] != "ok"}
        assert set(not_met) == CSRF_REFUSED_AUDITS, {
            i: f"{r['name']}: {r['reason']}" for i, r in not_met.items()
        }
        for result in not_met.values():
            assert _level(result) == "MAY" and result["status"] == "notice"
            answer = result["answer"]
            assert answer["status"] == 400, result
            error = orjson.loads(answer["body"])["errors"][0]
            assert error["extensions"]["code"] == "CSRF_PREVENTED", result
        typename = {"query": "{ __typename }"}
        with_variables = {
            "query": "query Type($name: String!) { __type(name: $name) { name } }",
            "variables": '{"name":"sometype"}',
        }
        for query, accept in [
            (typename, None),
            (with_variables, "application/graphql-response+json"),
            (with_variables, "application/json"),
        ]:
            headers = {"graphql-require-preflight": "1"}
            if accept:
                headers["accept"] = accept
            response = httpx.get(served.url, params=query, headers=headers)
            assert response.status_code == 200, response.text
            assert "errors" not in response.json()
