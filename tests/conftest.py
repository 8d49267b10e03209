"""Fixtures: a real PostgreSQL (the local one, or an embedded one), one database per test.

They come from Atrium's test kit (``atrium.testing``, a pytest plugin installed with Atrium),
under the names Atrium's tests have always used; what is Atrium's own (PgBouncer in front of
the database, the demo organisation) stays here."""

from __future__ import annotations

import functools
import tempfile
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from atrium.testing.client import AppStack
from atrium.testing.client import AtriumClient as Client
from atrium.testing.copies import DatabaseCopies
from atrium.testing.databases import admin_connection as _admin
from atrium.testing.databases import redis_server
from atrium.testing.databases import with_database as _with_database
from graph.plugin import Plugin
from sources.db import Database, DatabaseOptions

if TYPE_CHECKING:
    from sources.catalog.documents import ParsedBatch

__all__ = [
    "EXAMPLES",
    "ROOT",
    "AppFactory",
    "Client",
    "_admin",
    "_with_database",
    "demo_batch",
    "redis_server",
]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "atrium" / "demo"


@pytest.fixture(scope="session")
def pg_admin_url(atrium_pg_admin_url: str) -> str:
    """An admin URL of a PostgreSQL server that tests may create databases on."""
    return atrium_pg_admin_url


@pytest.fixture(scope="session")
def redis_url(atrium_redis_url: str) -> str:
    """A Redis for tests: ATRIUM_TEST_REDIS_URL, the local one, or our own redis-server.
    Tests keep apart by key prefix (see ``cache_prefix``)."""
    return atrium_redis_url


@pytest.fixture
def cache_prefix() -> str:
    return f"atrium-test-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def template_db(atrium_template_database: str) -> str:
    """A migrated database that each test's database is copied from."""
    return atrium_template_database


@pytest.fixture
def embedded_home() -> Iterator[Path]:
    """A working directory for a server on the embedded PostgreSQL (under its ``.atrium/``),
    outside pytest's temporary root: pgserver's postgres runs as a user of its own, and every
    pytest session that starts makes that root private to its owner again."""
    with tempfile.TemporaryDirectory(prefix="atrium-embedded-") as home:
        yield Path(home)


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh, migrated database of this test's own; for a test of ``demo_client`` or
    ``demo_database``, a copy of one with the demo organisation imported (``demo_template``)."""
    if not {"demo_client", "demo_database"} & set(request.fixturenames):
        yield request.getfixturevalue("atrium_database_url")
        return
    copies: DatabaseCopies = request.getfixturevalue("demo_copies")
    url = copies.take()
    yield url
    copies.give_back(url)


@pytest.fixture(scope="session")
def demo_template(pg_admin_url: str, template_db: str) -> Iterator[str]:
    """A copy of the template with the demo organisation imported, made once a process: the
    tests of ``demo_client`` (some 120) each imported it (a fifth of a second each)."""
    from atrium.testing.databases import _run, create_database, drop_database
    from sources.catalog.store import apply_batch

    url = create_database(pg_admin_url, template_db)

    async def load() -> None:
        db = await Database.connect(url, min_size=1, max_size=1)
        try:
            result = await apply_batch(db, demo_batch())
            assert not result.errors and len(result.created) > 150
        finally:
            await db.close()  # a database is copied only when no one is connected to it

    _run(load)
    yield url.partition("?")[0].rpartition("/")[2]
    drop_database(pg_admin_url, url)


@pytest.fixture(scope="session")
def demo_copies(pg_admin_url: str, demo_template: str) -> Iterator[DatabaseCopies]:
    """Databases as fresh as ``demo_template``, made as the kit makes its own."""
    with DatabaseCopies(pg_admin_url, demo_template) as copies:
        yield copies


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first (tests/scheduling.py): on several processes (make test) they
    then run beside the others instead of after them."""
    from tests.scheduling import module_rank

    def module(item: pytest.Item) -> str:
        return item.nodeid.partition("::")[0]

    tests = Counter(module(item) for item in items)
    items.sort(key=lambda item: module_rank(module(item), tests[module(item)]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the longest modules first, one module at a time a process."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.scheduling import LongestFirst

    return LongestFirst(config, log)


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


AppFactory = Callable[..., Any]


@pytest.fixture
async def make_client(
    request: pytest.FixtureRequest, database_url: str, database_pooling: str
) -> AsyncIterator[AppFactory]:
    """Start apps on this test's database (with no plugin unless given); each is stopped when
    the test ends. The kit's ``atrium_app`` with the database reached as ``database_pooling``
    says."""
    stack = AppStack(
        _through(request, database_url, database_pooling), database_pooling=database_pooling
    )

    async def start(plugins: list[Plugin] | None = None, **overrides: Any) -> Client:
        return await stack.start(plugins if plugins is not None else [], **overrides)

    yield start
    await stack.aclose()


@pytest.fixture
async def client(make_client: AppFactory) -> Client:
    return await make_client()  # type: ignore[no-any-return]


@functools.cache
def demo_batch() -> ParsedBatch:
    """The demo organisation (atrium/demo) read and checked, once a process: tests import it
    by the hundred, and reading it is most of an import's time. ``apply_batch`` only reads
    what it is given."""
    from sources.catalog.documents import read_paths

    return read_paths([EXAMPLES])


@pytest.fixture
def demo_database() -> None:
    """Asked for by a test that starts its own apps (``make_client``) on the demo organisation:
    their database is then a copy of ``demo_template``, as ``demo_client``'s is."""


@pytest.fixture
async def demo_client(client: Client) -> Client:
    """An app with the demo organisation imported: its database a copy of ``demo_template``
    (``database_url``)."""
    assert await client.services.db.fetchval("select count(*) from entities") > 150
    return client
