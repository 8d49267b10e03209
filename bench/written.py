"""Rows written, counted by PostgreSQL itself: pg_stat_user_tables before and after a step.

The server's count is the honest one for "an unchanged directory writes nothing": it sees
every insert, update and delete, whoever issued it (triggers included), not only those the app
meant to make. Its counters are reliable only once flushed: each backend keeps its own until
the end of a transaction, and publishes them at most once a second (else after ten idle
seconds). So before reading, every connection of the pool is asked to publish at once
(``pg_stat_force_next_flush()``, PostgreSQL 15+, which takes effect as the connection goes idle,
before it answers); holding all of the pool's connections at the same time reaches each of
them. Older servers cannot be asked: there the figure is unavailable rather than a guess.
"""

from __future__ import annotations

from typing import Final

from sources.db import Database

__all__ = ["BOOKKEEPING", "CATALOG_TABLES", "WriteCounter"]

CATALOG_TABLES: Final = ("entities", "relations", "facet_counts", "search_terms", "search_trigrams")
BOOKKEEPING: Final = "ldap_sync_runs"

_FLUSH: Final = "select pg_stat_force_next_flush()"
_WRITTEN: Final = """
select relname::text as name, n_tup_ins + n_tup_upd + n_tup_del as written
from pg_stat_user_tables where relid = any($1::regclass[])
"""


class WriteCounter:
    """Rows written to the catalog tables and the sync bookkeeping table, as the server saw."""

    def __init__(self, db: Database, available: bool) -> None:
        self._db = db
        self.available = available

    @classmethod
    async def for_database(cls, db: Database) -> WriteCounter:
        version = int(await db.fetchval("select current_setting('server_version_num')"))
        return cls(db, version >= 150_000)

    async def _flush(self) -> None:
        pool = self._db.pool
        held = []
        try:
            for _ in range(pool.get_max_size()):
                held.append(await pool.acquire())
            for conn in held:
                await conn.execute(_FLUSH)
        finally:
            for conn in held:
                await pool.release(conn)

    async def snapshot(self) -> dict[str, int]:
        """Rows written so far per table; empty when the server cannot say reliably."""
        if not self.available:
            return {}
        await self._flush()
        rows = await self._db.fetch(_WRITTEN, [*CATALOG_TABLES, BOOKKEEPING])
        found = {r["name"]: int(r["written"]) for r in rows}
        missing = {*CATALOG_TABLES, BOOKKEEPING} - found.keys()
        if missing:
            raise RuntimeError(f"pg_stat_user_tables has no row for {', '.join(sorted(missing))}")
        return found
