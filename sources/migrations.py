"""Numbered SQL migrations, applied in order, once, under an advisory lock.

A migration is a file ``NNNN_name.sql``. Each is applied in its own transaction and recorded with
the SHA-256 of its text; a recorded migration whose file has since changed is refused loudly,
because the database no longer matches what the code believes it is.

The lock is transaction-level, taken by each migration's own transaction before it looks at
what is pending: replicas starting together on an empty database apply each migration once,
directly or through a pooler in transaction mode alike (a session lock would be held by a
server session the pooler gives to others).

An *online* migration (its first line ``-- atrium: online``) builds or drops indexes without
stopping writes: ``create index concurrently`` lets inserts and updates go on while it reads
the table, where a plain ``create index`` would hold them for the whole build (seconds on a
catalog of a million entities). PostgreSQL runs ``concurrently`` outside any transaction, so
such a migration holds only indexes built or dropped that way (``create [unique] index
concurrently if not exists``, ``drop index concurrently if exists``) and ``analyze``, run one
at a time, each committed as it ends. No lock is held meanwhile (a build waits for every
transaction older than it, the lock's too), and the migration is recorded under the lock when
they are done. Every statement may run again, by another replica at the same time or at the
next start: a build that was interrupted leaves an invalid index, dropped before it is built
anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Final

import asyncpg

from sources.db import Database, Executor
from sources.errors import DatabaseUnavailable, MigrationError

__all__ = ["Migration", "apply_migrations", "core_migrations", "pending_migrations"]

log = logging.getLogger(__name__)

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
ONLINE: Final = "-- atrium: online"
_BUILD = re.compile(
    r"^create\s+(?:unique\s+)?index\s+concurrently\s+if\s+not\s+exists\s+(\w+)\s", re.I
)
_ONLINE_STATEMENT = re.compile(
    r"^(?:create\s+(?:unique\s+)?index\s+concurrently\s+if\s+not\s+exists\s"
    r"|drop\s+index\s+concurrently\s+if\s+exists\s|analyze\b)",
    re.I,
)
# No statement timeout for a build: a large table takes as long as it takes.
_ONLINE_TIMEOUT: Final = 24 * 3600.0
# An index by name: null when there is none; valid; being built; or invalid and built by no
# one, which is what an interrupted build left.
_BUILD_STATE = """
select case
    when i.indisvalid then 'valid'
    when exists (select 1 from pg_stat_progress_create_index p
                 where p.index_relid = i.indexrelid) then 'building'
    else 'left over'
end
from pg_index i where i.indexrelid = to_regclass($1)
"""
_LOOK_AGAIN: Final = 0.5  # seconds
# Jitter from a generator of Atrium's own: the `random` module's shared state belongs to the
# application (a test framework seeding it, or checking that nothing else draws from it).
_jitter = random.Random()
_SKIPPED_BUILDS: Final = 10  # builds skipped for another replica's that then failed
_COLLISIONS: Final = 10  # tries of a statement that collides with other replicas' each time
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

    @property
    def online(self) -> bool:
        return self.sql.startswith(ONLINE)

    def statements(self) -> list[str]:
        """An online migration's statements: comments left out, one per ``;``."""
        text = "\n".join(
            line for line in self.sql.splitlines() if not line.lstrip().startswith("--")
        )
        return [" ".join(part.split()) for part in text.split(";") if part.strip()]


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
    for migration in found:
        if migration.online:
            for statement in migration.statements():
                if not _ONLINE_STATEMENT.match(statement):
                    raise MigrationError(
                        f"{scope}/{migration.version:04d}_{migration.name} is online: it may "
                        "only create indexes concurrently if not exists, drop them concurrently "
                        f"if exists, and analyze; not {statement[:80]!r}"
                    )
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
    starting together wait on it in turn, and find nothing left to do. An online migration
    runs outside the lock (see the module's docstring) and is recorded under it after."""
    applied: list[Migration] = []
    while True:
        async with db.transaction() as tx:
            await tx.execute("select pg_advisory_xact_lock($1)", _LOCK_KEY)
            await tx.execute(_CREATE_TABLE)
            pending = await pending_migrations(tx, migrations)
            if not pending:
                return applied
            migration = pending[0]
            if not migration.online:
                with _named(migration):
                    await tx.execute(migration.sql)
                await tx.execute(_RECORD, *_record(migration))
        if migration.online:
            with _named(migration):
                await _apply_online(db, migration)
            async with db.transaction() as tx:
                await tx.execute("select pg_advisory_xact_lock($1)", _LOCK_KEY)
                recorded = await tx.execute(
                    _RECORD + " on conflict do nothing", *_record(migration)
                )
            if recorded == "INSERT 0 0":  # another replica ran it too, and recorded it first
                continue
        log.info(
            "applied migration", extra={"scope": migration.scope, "migration": migration.version}
        )
        applied.append(migration)


def _record(migration: Migration) -> tuple[str, int, str, str]:
    return migration.scope, migration.version, migration.name, migration.checksum


@contextlib.contextmanager
def _named(migration: Migration) -> Iterator[None]:
    """A migration's failure as a MigrationError that names it; an unreachable database as
    itself."""
    try:
        yield
    except (DatabaseUnavailable, MigrationError):
        raise
    except Exception as exc:
        raise MigrationError(
            f"migration {migration.scope}/{migration.version:04d}_{migration.name} failed: {exc}"
        ) from exc


async def _apply_online(db: Database, migration: Migration) -> None:
    """An online migration's statements, one at a time, each committed as it ends.

    Replicas starting together may run them at the same time, and no lock keeps them apart: a
    build waits for every transaction older than it, and one waiting for a lock is one, so
    builds would wait for each other. Instead a replica that finds the index being built waits
    for it, by looking again; two builds (or drops of a left-over) that start at once are found
    deadlocked by PostgreSQL, and the one it stops looks again, as does one that collided with
    another replica's statement on the same table (``_collided``); so does one that ``if not
    exists`` skipped, another's build having begun just after it looked. A build that ends
    leaves the index valid (``if not exists`` then skips it); an invalid index that no one is
    building is what an interrupted build left, and is dropped first and built again; one
    skipped for other replicas' failing builds ten times over fails the migration, to be
    applied again at the next start."""
    pooled = db.options.transaction_pooling
    async with db.pool.acquire() as conn:
        if not pooled:  # the session's statement_timeout; the pool resets it on release
            await conn.execute("set statement_timeout = 0")
        for statement in migration.statements():
            build = _BUILD.match(statement)
            if build is None:
                await _again_after_a_collision(conn, statement)
                continue
            name = build[1]
            skipped = 0
            while True:
                state = await conn.fetchval(_BUILD_STATE, name)
                if state == "building":
                    await asyncio.sleep(_LOOK_AGAIN)
                    continue
                try:
                    if state == "left over":
                        # The name is the migration's own (a word: _BUILD matched it), not input.
                        await conn.execute(
                            f"drop index concurrently if exists {name}", timeout=_ONLINE_TIMEOUT
                        )
                    await conn.execute(statement, timeout=_ONLINE_TIMEOUT)
                except asyncpg.PostgresError as exc:
                    if not _collided(exc):
                        raise
                    await asyncio.sleep(_LOOK_AGAIN * (1 + _jitter.random()))
                    continue
                if await conn.fetchval(_BUILD_STATE, name) == "valid":
                    break
                # ``if not exists`` skipped this build: another replica's began between the
                # look and it, and is going on (wait for it) or failed (build it again).
                skipped += 1
                if skipped > _SKIPPED_BUILDS:
                    raise MigrationError(f"the index {name} was left invalid by a failed build")
                await asyncio.sleep(_LOOK_AGAIN * (1 + _jitter.random()))


def _collided(exc: asyncpg.PostgresError) -> bool:
    """Another replica's online statement on the same table at the same moment: a deadlock
    PostgreSQL broke (two builds, or a build and an ANALYZE), or two that each updated the
    table's row in the catalog as they ended (an index build and another, or an ANALYZE:
    "tuple concurrently updated"). Looking again after a pause resolves both."""
    if isinstance(exc, asyncpg.DeadlockDetectedError):
        return True
    return isinstance(exc, asyncpg.InternalServerError) and "concurrently updated" in str(exc)


async def _again_after_a_collision(conn: asyncpg.Connection, statement: str) -> None:
    """An online statement other than a build (ANALYZE, a drop ``if exists``: each may run
    again), run again after a pause while it collides with another replica's."""
    for attempt in range(_COLLISIONS):
        try:
            await conn.execute(statement, timeout=_ONLINE_TIMEOUT)
            return
        except asyncpg.PostgresError as exc:
            if not _collided(exc) or attempt == _COLLISIONS - 1:
                raise
        await asyncio.sleep(_LOOK_AGAIN * (1 + _jitter.random()))
