"""Numbered SQL migrations, applied in order, once, under an advisory lock.

A migration is a file ``NNNN_name.sql``. Each is applied in its own transaction and recorded with
the SHA-256 of its text; a recorded migration whose file has since changed is refused loudly,
because the database no longer matches what the code believes it is.

The lock is transaction-level, taken by each migration's own transaction before it looks at
what is pending: replicas starting together on an empty database apply each migration once,
directly or through a pooler in transaction mode alike (a session lock would be held by a
server session the pooler gives to others).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from sources.db import Database, Executor
from sources.errors import DatabaseUnavailable, MigrationError

__all__ = ["Migration", "apply_migrations", "core_migrations", "pending_migrations"]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
# Any constant works as long as every replica uses the same one.
_LOCK_KEY = 0x41_54_52_49_55_4D  # "ATRIUM"

_CREATE_TABLE = """
create table if not exists atrium_migrations (
    scope text not null,
    version integer not null,
    name text not null,
    checksum text not null,
    applied_at timestamptz not null default now(),
    primary key (scope, version)
)
"""
_APPLIED = "select version, name, checksum from atrium_migrations where scope = $1"
_RECORD = "insert into atrium_migrations (scope, version, name, checksum) values ($1, $2, $3, $4)"


@dataclass(frozen=True, slots=True)
class Migration:
    scope: str  # "core", or a plugin id: each has its own numbering
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def read_migrations(scope: str, directory: Path | Iterable[Path]) -> list[Migration]:
    paths = sorted(directory.iterdir()) if isinstance(directory, Path) else sorted(directory)
    found: list[Migration] = []
    for path in paths:
        match = _NAME.match(path.name)
        if match is None:
            continue
        found.append(Migration(scope, int(match[1]), match[2], path.read_text(encoding="utf-8")))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"{scope}: two migrations share a number in {directory}")
    return found


def core_migrations() -> list[Migration]:
    return read_migrations("core", Path(str(files("migrations"))))


async def pending_migrations(db: Executor, migrations: list[Migration]) -> list[Migration]:
    """Migrations not yet applied; raises if an applied one was changed."""
    exists = await db.fetchval("select to_regclass('atrium_migrations') is not null")
    applied: dict[tuple[str, int], tuple[str, str]] = {}
    if exists:
        for scope in {m.scope for m in migrations}:
            for row in await db.fetch(_APPLIED, scope):
                applied[scope, row["version"]] = (row["name"], row["checksum"])
    pending = []
    for migration in migrations:
        recorded = applied.get((migration.scope, migration.version))
        if recorded is None:
            pending.append(migration)
        elif recorded[1] != migration.checksum:
            raise MigrationError(
                f"migration {migration.scope}/{migration.version:04d}_{migration.name} was changed "
                "after it was applied; write a new migration instead of editing an applied one"
            )
    return pending


async def apply_migrations(db: Database, migrations: list[Migration]) -> list[Migration]:
    """Apply what is pending, one migration per transaction, each under the lock; replicas
    starting together wait on it in turn, and find nothing left to do."""
    applied: list[Migration] = []
    while True:
        async with db.transaction() as tx:
            await tx.execute("select pg_advisory_xact_lock($1)", _LOCK_KEY)
            await tx.execute(_CREATE_TABLE)
            pending = await pending_migrations(tx, migrations)
            if not pending:
                return applied
            migration = pending[0]
            try:
                await tx.execute(migration.sql)
            except DatabaseUnavailable:
                raise
            except Exception as exc:
                raise MigrationError(
                    f"migration {migration.scope}/{migration.version:04d}_{migration.name}"
                    f" failed: {exc}"
                ) from exc
            await tx.execute(
                _RECORD, migration.scope, migration.version, migration.name, migration.checksum
            )
        log.info(
            "applied migration", extra={"scope": migration.scope, "migration": migration.version}
        )
        applied.append(migration)
