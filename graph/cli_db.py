"""What the ``atrium`` commands share: a migrated database, and a connection for a task."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from graph.settings import Settings

__all__ = ["DEMO_PATH", "prepare", "with_database"]

DEMO_PATH = Path(__file__).resolve().parent.parent / "examples"


async def prepare(settings: Settings, *, demo: bool, quiet: bool = False) -> str:
    """Resolve the database, migrate it, and load the demo organisation if asked and empty."""
    from graph.app import database_url
    from graph.assembly import assemble, core_plugins, discover_plugins
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch
    from sources.db import Database
    from sources.migrations import apply_migrations

    url = await database_url(settings)
    assembly = assemble(settings, [*core_plugins(), *discover_plugins(settings)])
    db = await Database.connect(url, min_size=1, max_size=2)
    try:
        applied = await apply_migrations(db, assembly.migrations)
        for migration in applied:
            name = f"{migration.scope}/{migration.version:04d}_{migration.name}"
            print(f"applied migration {name}", file=sys.stderr if quiet else sys.stdout)
        if demo:
            if await db.fetchval("select exists (select 1 from entities)"):
                print("catalog is not empty; demo organisation not loaded")
            else:
                result = await apply_batch(db, read_paths([DEMO_PATH]))
                print(f"loaded the demo organisation: {len(result.created)} entities")
    finally:
        await db.close()
    return url


async def with_database(settings: Settings, run: Callable[[Any], Awaitable[int]]) -> int:
    from sources.db import Database

    url = await prepare(settings, demo=False, quiet=True)
    db = await Database.connect(url, min_size=1, max_size=2)
    try:
        return await run(db)
    finally:
        await db.close()
