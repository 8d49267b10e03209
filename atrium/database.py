"""Which database Atrium uses: the one ATRIUM_DATABASE_URL names, else an embedded PostgreSQL
under the data directory. A module of its own so that the commands that only need a database
(``atrium migrate``, ``atrium token``, ``atrium catalog import``...) do not import the server
(``atrium.app``) to find it."""

from __future__ import annotations

import asyncio

from graph.settings import Settings
from sources.db import embedded_database_url

__all__ = ["database_url"]


async def database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    return await asyncio.to_thread(embedded_database_url, settings.data_dir)
