"""The pytest plugin of Atrium's test kit, registered by Atrium's ``pytest11`` entry point: any
project with Atrium installed has these fixtures, without a conftest.py.

Importing it costs nothing: Atrium's modules, asyncpg, httpx and Playwright are imported when a
fixture is first used. Its async fixtures need pytest-asyncio (``pip install
'atrium[testing]'``); they run on whatever loop scope the project configures.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from atrium.testing.browser import AtriumBrowser
    from atrium.testing.client import AtriumClient
    from atrium.testing.copies import DatabaseCopies

__all__ = [
    "atrium_app",
    "atrium_browser",
    "atrium_database_copies",
    "atrium_database_url",
    "atrium_pg_admin_url",
    "atrium_plugin_names",
    "atrium_redis_url",
    "atrium_template_database",
]

AppFactory = Callable[..., Awaitable["AtriumClient"]]

try:
    import pytest_asyncio
except ImportError:  # pragma: no cover - the kit's async fixtures say what is missing
    pytest_asyncio = None  # type: ignore[assignment]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "atrium_plugins",
        "Atrium plugins (entry-point names) atrium_app starts by default; unset: every "
        "installed plugin",
        type="args",
        default=[],
    )
    group = parser.getgroup("atrium", "Atrium's test kit")
    group.addoption(
        "--atrium-plugin",
        action="append",
        dest="atrium_plugins",
        default=[],
        metavar="ID",
        help="a plugin (entry-point name) atrium_app starts by default; repeat for more "
        "(overrides the atrium_plugins ini option)",
    )


def _async_fixture(**kwargs: Any) -> Callable[[Any], Any]:
    if pytest_asyncio is not None:
        return pytest_asyncio.fixture(**kwargs)

    def missing(function: Any) -> Any:
        def fixture() -> None:
            raise pytest.UsageError(
                f"{function.__name__} is an async fixture of Atrium's test kit: it needs "
                "pytest-asyncio (pip install 'atrium[testing]')"
            )

        fixture.__name__ = function.__name__
        return pytest.fixture(**kwargs)(fixture)

    return missing


@pytest.fixture(scope="session")
def atrium_pg_admin_url() -> Iterator[str]:
    """An admin URL of the PostgreSQL server tests make their databases on:
    ATRIUM_TEST_DATABASE_URL, else 127.0.0.1:5432, else an embedded PostgreSQL."""
    from atrium.testing.databases import postgres_admin_url

    with postgres_admin_url() as url:
        yield url


@pytest.fixture(scope="session")
def atrium_template_database(atrium_pg_admin_url: str) -> Iterator[str]:
    """The name of a database with Atrium's core migrations, copied for each test."""
    from atrium.testing.databases import create_template, drop_database

    name = create_template(atrium_pg_admin_url)
    yield name
    drop_database(atrium_pg_admin_url, name)


@pytest.fixture(scope="session")
def atrium_database_copies(
    atrium_pg_admin_url: str, atrium_template_database: str
) -> Iterator[DatabaseCopies]:
    """Where ``atrium_database_url`` takes its databases: copies of the template made one
    ahead, and databases tests gave back made fresh again, on a loop of their own."""
    from atrium.testing.copies import DatabaseCopies

    with DatabaseCopies(atrium_pg_admin_url, atrium_template_database) as copies:
        yield copies


@pytest.fixture
def atrium_database_url(atrium_database_copies: DatabaseCopies) -> Iterator[str]:
    """A fresh database of this test's own, with Atrium's core migrations; made fresh again
    for another test after, or dropped (``DatabaseCopies``)."""
    url = atrium_database_copies.take()
    yield url
    atrium_database_copies.give_back(url)


@pytest.fixture(scope="session")
def atrium_redis_url() -> Iterator[str]:
    """A Redis: ATRIUM_TEST_REDIS_URL, else 127.0.0.1:6379, else a redis-server of its own.
    Shared by the session's tests: keep apart by key prefix (``cache_prefix`` setting)."""
    from atrium.testing.databases import redis_url

    with redis_url() as url:
        yield url


@pytest.fixture(scope="session")
def atrium_plugin_names(pytestconfig: pytest.Config) -> list[str] | None:
    """The plugins atrium_app starts when not told: ``--atrium-plugin`` options, else the
    ``atrium_plugins`` ini option, else None (every installed plugin)."""
    named: list[str] = pytestconfig.getoption("atrium_plugins") or []
    if not named:
        named = list(pytestconfig.getini("atrium_plugins") or [])
    return named or None


@_async_fixture()
async def atrium_app(
    atrium_database_url: str, atrium_plugin_names: list[str] | None
) -> AsyncIterator[AppFactory]:
    """``client = await atrium_app(plugins=None, **settings)``: an app started on this test's
    database with Atrium's core and ``plugins`` (plugin objects or entry-point names; by
    default those of ``--atrium-plugin``/``atrium_plugins``, else every installed one), their
    migrations applied; an ``AtriumClient``. ``settings`` are ``Settings`` fields
    (``compiled_plans=False``, ``redis_url=...``). Apps of one test share its database, as
    replicas do; each is stopped when the test ends."""
    from atrium.testing.client import AppStack
    from atrium.testing.plugins import select_plugins

    stack = AppStack(atrium_database_url)

    async def start(plugins: list[Any] | None = None, **settings: Any) -> AtriumClient:
        chosen = select_plugins(plugins if plugins is not None else atrium_plugin_names)
        return await stack.start(chosen, **settings)

    try:
        yield start
    finally:
        await stack.aclose()


@_async_fixture()
async def atrium_browser() -> AsyncIterator[AtriumBrowser]:
    """Chromium (Debian's /usr/bin/chromium, or ATRIUM_TEST_CHROMIUM, else Playwright's own):
    ``await atrium_browser.snapshot(url)`` gives a page's root as the server sent it, as
    parsed before any script ran, and after the console rendered; ``atrium_browser.page(...)``
    a recorded page to drive."""
    from atrium.testing.browser import launch

    async with launch() as browser:
        yield browser
