"""A throw-away database for one benchmark run, on whatever PostgreSQL is at hand.

The benchmark creates a uniquely named database, so it never touches anyone's data and two
runs can share a server; it drops it at the end, also when the run fails. The server is,
in order: ``ATRIUM_BENCH_DATABASE_URL`` (an admin URL), the local server at 127.0.0.1:5432 if
it answers, or an embedded one (pgserver) in a temporary directory deleted afterwards.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import tempfile
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import asyncpg

__all__ = ["ScratchDatabase", "admin_url", "scratch_database"]

ENV_URL: Final = "ATRIUM_BENCH_DATABASE_URL"
LOCAL_URL: Final = "postgresql://postgres@127.0.0.1:5432/postgres"
_SAFE_NAME: Final = re.compile(r"^[a-z0-9_]+$")


@dataclass(frozen=True, slots=True)
class ScratchDatabase:
    url: str
    name: str
    server: str  # where it lives, for the report

    def __str__(self) -> str:
        return f"scratch database {self.name} on the {self.server}"


def _with_database(url: str, name: str) -> str:
    """``url`` pointing at database ``name``; query parameters (a socket ``host``) are kept."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


async def _answers(url: str) -> bool:
    try:
        conn = await asyncpg.connect(url, timeout=3)
    except (OSError, asyncpg.PostgresError, TimeoutError):
        return False
    await conn.close()
    return True


@contextlib.contextmanager
def _embedded_server() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="atrium-bench-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import pgserver

        server: Any = pgserver.get_server(tmp, cleanup_mode="delete")  # type: ignore[attr-defined]
        try:
            yield str(server.get_uri())
        finally:
            server.cleanup()


@contextlib.asynccontextmanager
async def admin_url() -> AsyncIterator[tuple[str, str]]:
    configured = os.environ.get(ENV_URL)
    if configured:
        yield configured, f"${ENV_URL}"
    elif await _answers(LOCAL_URL):
        yield LOCAL_URL, "local server at 127.0.0.1:5432"
    else:
        with _embedded_server() as url:
            yield url, "embedded pgserver"


@contextlib.asynccontextmanager
async def scratch_database() -> AsyncIterator[ScratchDatabase]:
    """Create a fresh database and drop it on the way out, whatever happened in between."""
    async with admin_url() as (server_url, server):
        name = f"atrium_bench_{os.getpid()}_{secrets.token_hex(4)}"
        assert _SAFE_NAME.match(name)  # generated here, never from input: safe to quote as is
        admin = await asyncpg.connect(server_url)
        try:
            await admin.execute(f'create database "{name}"')
            try:
                yield ScratchDatabase(_with_database(server_url, name), name, server)
            finally:
                # FORCE (PostgreSQL 13+) ends sessions a failed run may have left behind.
                await admin.execute(f'drop database if exists "{name}" with (force)')
        finally:
            await admin.close()
