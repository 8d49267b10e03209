"""Fixtures: a real PostgreSQL (the local one, or an embedded one), one database per test."""

from __future__ import annotations

import os
import socket
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import orjson
import pytest
from starlette.applications import Starlette

from atrium.app import create_app
from graph.plugin import Plugin
from graph.settings import Settings
from sources.db import Database, DatabaseOptions
from sources.migrations import apply_migrations, core_migrations

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _port_answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """An admin URL of a PostgreSQL server that tests may create databases on."""
    url = os.environ.get("ATRIUM_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if _port_answers("127.0.0.1", 5432):
        yield "postgresql://postgres@127.0.0.1:5432/postgres"
        return
    from sources.db import embedded_database_url

    with tempfile.TemporaryDirectory(prefix="atrium-pg-") as tmp:
        yield embedded_database_url(Path(tmp))


def _with_database(url: str, name: str) -> str:
    """The same server URL pointing at another database (URLs may carry ?host=socket)."""
    base, sep, query = url.partition("?")
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}{sep}{query}"


@asynccontextmanager
async def _admin(url: str) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A Redis for tests: ATRIUM_TEST_REDIS_URL, the local one, or our own redis-server.
    Tests keep apart by key prefix (see ``cache_prefix``)."""
    url = os.environ.get("ATRIUM_TEST_REDIS_URL")
    if url:
        yield url
        return
    if _port_answers("127.0.0.1", 6379):
        yield "redis://127.0.0.1:6379/0"
        return
    with redis_server() as started:
        yield started


@contextmanager
def redis_server() -> Iterator[str]:
    """A redis-server of our own on a free port, stopped on the way out."""
    import subprocess
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not _port_answers("127.0.0.1", port):
            assert process.poll() is None and time.monotonic() < deadline, (
                "redis-server did not start"
            )
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def cache_prefix() -> str:
    return f"atrium-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
async def template_db(pg_admin_url: str) -> AsyncIterator[str]:
    """A migrated database that each test's database is copied from."""
    name = f"atrium_tmpl_{uuid.uuid4().hex[:10]}"
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}"')
    db = await Database.connect(_with_database(pg_admin_url, name), min_size=1, max_size=2)
    await apply_migrations(db, core_migrations())
    await db.close()
    yield name
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture
async def database_url(pg_admin_url: str, template_db: str) -> AsyncIterator[str]:
    """A fresh, migrated database of this test's own."""
    name = f"atrium_t_{uuid.uuid4().hex[:12]}"
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}" template "{template_db}"')
    yield _with_database(pg_admin_url, name)
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'drop database if exists "{name}" with (force)')


# The longest modules first: run on several processes (make test), they then run beside the
# others instead of after them.
_LONGEST_FIRST = (
    "tests/test_bench_replicas.py",
    "tests/test_bench_console.py",
    "tests/production/test_deploy_image.py",
    "tests/test_bench_domains.py",
    "tests/test_bench_serving.py",
    "tests/test_bench.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        module = item.nodeid.partition("::")[0]
        return _LONGEST_FIRST.index(module) if module in _LONGEST_FIRST else len(_LONGEST_FIRST)

    items.sort(key=rank)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked ``pgbouncer`` run twice: on the database directly, and with ``db`` and
    ``make_client`` going through PgBouncer in transaction pooling mode."""
    if metafunc.definition.get_closest_marker("pgbouncer") and (
        "database_pooling" in metafunc.fixturenames
    ):
        metafunc.parametrize(
            "database_pooling",
            ["session", "transaction"],
            indirect=True,
            ids=["unpooled", "pgbouncer"],
        )


@pytest.fixture
def database_pooling(request: pytest.FixtureRequest) -> str:
    """How ``db`` and ``make_client`` reach the test's database: ``session`` (directly) or
    ``transaction`` (through ``pgbouncer``)."""
    return str(getattr(request, "param", "session"))


@pytest.fixture(scope="session")
def pgbouncer(pg_admin_url: str) -> Iterator[Any]:
    """Debian's PgBouncer in transaction pooling mode in front of the tests' PostgreSQL."""
    from tests.production.pgbouncer import pgbouncer as start

    with start(pg_admin_url) as started:
        yield started


def _through(request: pytest.FixtureRequest, url: str, pooling: str) -> str:
    """``url``, or the same database through ``pgbouncer`` for transaction pooling."""
    if pooling == "session":
        return url
    bouncer = request.getfixturevalue("pgbouncer")
    return str(bouncer.url(url))


@pytest.fixture
async def db(
    request: pytest.FixtureRequest, database_url: str, database_pooling: str
) -> AsyncIterator[Database]:
    url = _through(request, database_url, database_pooling)
    options = DatabaseOptions(transaction_pooling=database_pooling == "transaction")
    database = await Database.connect(url, options, min_size=1, max_size=4)
    yield database
    await database.close()


class Client(httpx.AsyncClient):
    """An HTTP client bound to one running app, with a GraphQL shortcut."""

    app: Starlette

    @property
    def services(self) -> Any:
        return self.app.state.services

    async def gql(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        expect_errors: bool = False,
        user: str | None = None,
        token: str | None = None,
    ) -> dict[str, Any]:
        """Post a query as nobody, as a user (through the trusted proxy header), or a token."""
        headers = {}
        if user is not None:
            headers["X-Forwarded-User"] = user
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        response = await self.post(
            "/graphql", json={"query": query, "variables": variables}, headers=headers
        )
        body: dict[str, Any] = response.json()
        if not expect_errors:
            assert "errors" not in body, body["errors"]
            assert response.status_code == 200
        return body

    async def persisted_get(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """GET a document by its hash as Apollo Client does, registering it (APQ) first if
        the server does not know it."""
        from sources.persisted import document_hash

        extensions = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(query)}}
        params = {
            "extensions": orjson.dumps(extensions).decode(),
            "variables": orjson.dumps(variables or {}).decode(),
        }
        headers = {"apollo-require-preflight": "true", **(headers or {})}
        response = await self.get("/graphql", params=params, headers=headers)
        if response.status_code == 200 and "PersistedQueryNotFound" in response.text:
            registered = await self.post(
                "/graphql",
                json={"query": query, "variables": variables, "extensions": extensions},
                headers=headers,
            )
            assert registered.status_code < 500, registered.text
            response = await self.get("/graphql", params=params, headers=headers)
        return response

    async def admin_token(self) -> str:
        from sources.auth import create_token

        if not getattr(self, "_admin_token", None):
            _, self._admin_token = await create_token(self.services.db, "tests", ["admin"], None)
        return self._admin_token


AppFactory = Callable[..., Any]


@pytest.fixture
async def make_client(
    request: pytest.FixtureRequest, database_url: str, database_pooling: str
) -> AsyncIterator[AppFactory]:
    """Start apps on this test's database; each is stopped when the test ends."""
    stack: list[tuple[Starlette, Any, Client]] = []
    url = _through(request, database_url, database_pooling)

    async def start(plugins: list[Plugin] | None = None, **overrides: Any) -> Client:
        defaults = {
            "database_url": url,
            "database_pooling": database_pooling,
            # httpx's ASGI transport calls from 127.0.0.1: the tests' "proxy".
            "trusted_proxies": ["127.0.0.1"],
            "admin_group": "group:default/admins",
            # No console unless a test builds one (tests/ssr/): its documents are not wanted.
            "web_dir": Path(__file__).parent / "no-console-build",
        }
        settings = Settings(**{**defaults, **overrides})
        app = create_app(settings, plugins=plugins if plugins is not None else [])
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        # As GraphQL-over-HTTP clients ask (httpx's own default, */*, is answered as JSON).
        client = Client(
            transport=httpx.ASGITransport(app=app),
            base_url="http://atrium.test",
            headers={"accept": "application/graphql-response+json, application/json;q=0.9"},
        )
        client.app = app
        stack.append((app, lifespan, client))
        return client

    yield start
    for _, lifespan, client in reversed(stack):
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest.fixture
async def client(make_client: AppFactory) -> Client:
    return await make_client()  # type: ignore[no-any-return]


@pytest.fixture
async def demo_client(client: Client) -> Client:
    """An app with the demo organisation imported."""
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch

    result = await apply_batch(client.services.db, read_paths([EXAMPLES]))
    assert not result.errors and len(result.created) > 150
    return client
