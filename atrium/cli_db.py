"""What the ``atrium`` commands share: a migrated database, and a connection for a task."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.settings import Settings

__all__ = ["DEMO_PATH", "prepare", "with_database"]

log = logging.getLogger("atrium.cli")

DEMO_PATH = Path(__file__).resolve().parent / "demo"


async def prepare(settings: Settings, *, demo: bool, quiet: bool = False) -> str:
    """Resolve the database, migrate it, and load the demo organisation if asked and empty.
    ``quiet`` leaves the telling to the logs (each migration is logged as it is applied)."""
    from atrium.database import database_url
    from graph.assembly import assemble, core_plugins, discover_plugins
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch
    from sources.db import Database
    from sources.migrations import apply_migrations

    # Plugins' settings are validated first: a bad one stops the start-up before a database
    # is started or the server binds.
    assembly = assemble(settings, [*core_plugins(), *discover_plugins(settings)])
    url = await database_url(settings)
    db = await Database.connect(url, settings.database_options, min_size=1, max_size=2)
    try:
        applied = await apply_migrations(db, assembly.migrations)
        for migration in applied if not quiet else ():
            print(f"applied migration {migration.scope}/{migration.version:04d}_{migration.name}")
        if demo:
            if await db.fetchval("select exists (select 1 from entities)"):
                log.info("the catalog is not empty: the demo organisation was not loaded")
            else:
                result = await apply_batch(db, read_paths([DEMO_PATH]))
                log.info("demo organisation loaded", extra={"entities": len(result.created)})
    finally:
        await db.close()
    return url


async def with_database(settings: Settings, run: Callable[[Any], Awaitable[int]]) -> int:
    from sources.db import Database

    url = await prepare(settings, demo=False, quiet=True)
    db = await Database.connect(url, settings.database_options, min_size=1, max_size=2)
    try:
        return await run(db)
    finally:
        await db.close()
