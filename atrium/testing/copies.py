"""Databases as fresh as a template, one per test (``DatabaseCopies``), made and cleared away
on a loop of their own while the tests run, so that a test waits for neither."""

from __future__ import annotations

import asyncio
import contextlib
import io
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from atrium.testing.databases import _name_of, admin_connection, new_database_name, with_database
from atrium.testing.loops import LoopThread

if TYPE_CHECKING:
    import asyncpg

__all__ = ["DatabaseCopies"]

# What a database is made of besides its rows: every object defined in it (an oid past the
# built-in ones) and what a test could change of each, and the database's own settings. Two
# databases with the same fingerprint differ only in their rows and sequences, which
# ``_Contents.refill`` puts back; what VACUUM and ANALYZE change (sizes, statistics) is left
# out.
_FINGERPRINT = """
select md5(coalesce(string_agg(line, ',' order by line), '')) from (
  select concat_ws('|', 'class', oid, relnamespace, relname, relkind, relnatts, relacl,
      relhastriggers, relrowsecurity, relforcerowsecurity, relpersistence, reloptions) as line
    from pg_class where oid >= 16384
  union all select concat_ws('|', 'column', attrelid, attnum, attname, atttypid, atttypmod,
      attnotnull, atthasdef, attisdropped, attgenerated, attidentity, attcollation)
    from pg_attribute where attrelid >= 16384
  union all select concat_ws('|', 'default', adrelid, adnum, pg_get_expr(adbin, adrelid))
    from pg_attrdef
  union all select concat_ws('|', 'function', oid, proname, md5(prosrc), proconfig)
    from pg_proc where oid >= 16384
  union all select concat_ws('|', 'trigger', oid, tgrelid, tgname, tgenabled)
    from pg_trigger where oid >= 16384
  union all select concat_ws('|', 'constraint', oid, conname, convalidated)
    from pg_constraint where oid >= 16384
  union all select concat_ws('|', 'index', indexrelid, indisvalid, indisready, indislive)
    from pg_index where indexrelid >= 16384
  union all select concat_ws('|', 'sequence', seqrelid, seqtypid, seqstart, seqincrement,
      seqmax, seqmin, seqcache, seqcycle)
    from pg_sequence where seqrelid >= 16384
  union all select concat_ws('|', 'schema', oid, nspname, nspacl)
    from pg_namespace where oid >= 16384
  union all select concat_ws('|', 'type', oid, typname) from pg_type where oid >= 16384
  union all select concat_ws('|', 'label', oid, enumtypid, enumlabel)
    from pg_enum where oid >= 16384
  union all select concat_ws('|', 'rule', oid, rulename, ev_enabled)
    from pg_rewrite where oid >= 16384
  union all select concat_ws('|', 'policy', oid, polname) from pg_policy
  union all select concat_ws('|', 'statistics', oid, stxname) from pg_statistic_ext
  union all select concat_ws('|', 'extension', extname, extversion) from pg_extension
  union all select concat_ws('|', 'event trigger', evtname, evtenabled) from pg_event_trigger
  union all select concat_ws('|', 'large object', oid) from pg_largeobject_metadata
  union all select concat_ws('|', 'setting', setrole, setconfig) from pg_db_role_setting
    where setdatabase = (select oid from pg_database where datname = current_database())
  union all select concat_ws('|', 'database', datallowconn, datconnlimit, datacl)
    from pg_database where datname = current_database()
) as definitions
"""


_INSUFFICIENT_PRIVILEGE = "42501"  # SQLSTATE: session_replication_role is a superuser's


@dataclass(frozen=True)
class _Table:
    qualified: str  # as SQL names it
    schema: str
    name: str
    columns: tuple[str, ...]  # those one can write: generated columns left out
    rows: bytes  # binary COPY
    count: int


# Of each table of a database, the transactions that wrote the rows it holds as fresh: the
# template's, or the last refill's (xmin, 32 bits).
Written = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class _Contents:
    """What a fresh copy of the template holds: the fingerprint of its definitions, each
    table's rows and each sequence's position."""

    fingerprint: str
    tables: tuple[_Table, ...]
    sequences: tuple[tuple[str, int, bool], ...]
    written: Written  # in the template

    @classmethod
    async def read(cls, conn: asyncpg.Connection) -> _Contents:
        tables, written = [], {}
        for table in await conn.fetch(
            "select c.oid, n.nspname, c.relname, format('%I.%I', n.nspname, c.relname) as q "
            "from pg_class c join pg_namespace n on n.oid = c.relnamespace "
            "where c.relkind = 'r' and c.oid >= 16384 order by c.oid"
        ):
            columns = tuple(
                r["attname"]
                for r in await conn.fetch(
                    "select attname from pg_attribute where attrelid = $1 and attnum > 0 "
                    "and not attisdropped and attgenerated = '' order by attnum",
                    table["oid"],
                )
            )
            rows = io.BytesIO()
            status = await conn.copy_from_table(
                table["relname"], schema_name=table["nspname"], columns=list(columns),
                output=rows, format="binary",
            )  # fmt: skip
            count = int(status.rpartition(" ")[2])
            qualified = table["q"]
            tables.append(
                _Table(
                    qualified, table["nspname"], table["relname"], columns, rows.getvalue(), count
                )
            )
            written[qualified] = tuple(
                await conn.fetchval(
                    "select coalesce(array_agg(distinct xmin::text::bigint), '{}') "
                    f"from {qualified}"
                )
            )
        sequences = tuple(
            (r["name"], r["value"], r["called"])
            for r in await conn.fetch(
                "select format('%I.%I', schemaname, sequencename) as name, "
                "coalesce(last_value, start_value) as value, last_value is not null as called "
                "from pg_sequences order by 1"
            )
        )
        return cls(await conn.fetchval(_FINGERPRINT), tuple(tables), sequences, written)

    async def refill(self, conn: asyncpg.Connection, written: Written) -> Written:
        """Put the rows of every table a test changed, and every sequence, back as they were;
        in one transaction, with triggers (foreign keys' included) not firing: the rows put
        back were consistent already. Most tests change a few tables, many none. ``written``
        says which transactions wrote the rows the database held fresh; the answer, which
        wrote those it holds now."""
        checks = ", ".join(f"({_changed_sql(t, written[t.qualified])})" for t in self.tables)
        async with conn.transaction():
            await conn.execute("set local session_replication_role = replica")
            changes = await conn.fetchval(f"select array[{checks}]") if checks else []
            changed = [t for t, change in zip(self.tables, changes, strict=True) if change]
            for table in changed:
                await conn.execute(f"delete from {table.qualified}")
            for table in changed:
                if table.count:
                    await conn.copy_to_table(
                        table.name, schema_name=table.schema, columns=list(table.columns),
                        source=io.BytesIO(table.rows), format="binary",
                    )  # fmt: skip
            if self.sequences:
                await conn.executemany("select setval($1::regclass, $2, $3)", self.sequences)
            now = await conn.fetchval("select pg_current_xact_id()::text::bigint % 4294967296")
        return written | {t.qualified: (now,) for t in changed}


def _changed_sql(table: _Table, written: tuple[int, ...]) -> str:
    """Whether a test changed a table's rows: it holds another number of rows, or a row
    written (inserted or updated) by a transaction other than those in ``written``."""
    if not table.count:
        return f"select exists (select from {table.qualified})"
    return (
        f"select count(*) <> {table.count} or coalesce(bool_or(xmin::text::bigint "
        f"not in ({', '.join(map(str, written))})), false) from {table.qualified}"
    )


class DatabaseCopies:
    """Databases as fresh as a template, one per test, on a loop of their own so that a test
    waits for neither the making nor the clearing away.

    A copy (``create database ... template``) costs the server a third of a second of CPU
    here (every file of the database written and synced), far more than most tests take. So a
    database given back is made fresh again instead, where the test changed only rows: whoever
    is still connected is disconnected, the database is renamed (a client that connects again
    by the old name finds nothing, as it would had the database been dropped), and if its
    definitions are the template's (``_FINGERPRINT``) its rows and sequences are put back as a
    fresh copy holds them; it then waits for the next test. A database whose definitions a test
    changed (a plugin's migrations, a table of its own) is dropped, and a copy made instead.
    Where the admin role may not set ``session_replication_role`` (not a superuser), every
    database is dropped after its test.

    The first copy is made when first asked for, and another ahead whenever none is coming; one
    admin connection makes, renames and drops them, in turn (a copy cannot be made while another
    session uses the template)."""

    def __init__(self, admin_url: str, template: str) -> None:
        self.admin_url = admin_url
        self.template = template
        self._thread = LoopThread("atrium-test-databases")
        self._conn: asyncpg.Connection | None = None
        self._turn: asyncio.Lock | None = None
        self._contents: _Contents | None = None
        self._written: dict[str, Written] = {}  # of the databases refilled, by name
        self._refills = True  # until the server refuses
        # Databases on their way to the next test: copies being made, databases being made
        # fresh again; each gives a database's name.
        self._coming: list[asyncio.Future[str]] = []
        self.made = 0  # copies made (tests read it)
        self.refilled = 0  # databases made fresh again

    def start(self) -> Self:
        self._thread.start()
        return self

    def take(self) -> str:
        """The URL of a database as fresh as the template, the test's own until
        ``give_back``."""
        name = self._thread.run_sync(self._take())
        return with_database(self.admin_url, name)

    def give_back(self, url: str) -> None:
        """The database ``url`` names is the test's no more: it is made fresh again for another
        test, or dropped (whoever is still connected), without waiting."""
        self._thread.call_soon(self._recycle_later, _name_of(url))

    def close(self) -> None:
        """Wait for what is under way, drop every database that was coming, close the
        connection."""
        try:
            self._thread.run_sync(self._close())
        finally:
            self._thread.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # On the loop.

    async def _take(self) -> str:
        if not self._coming:
            self._coming.append(asyncio.ensure_future(self._create()))
        # The first that is ready, else the first asked for.
        coming = next((f for f in self._coming if f.done()), self._coming[0])
        self._coming.remove(coming)
        if not self._coming:  # the next test's, made while this one runs
            self._coming.append(asyncio.ensure_future(self._create()))
        try:
            return await coming
        except Exception:  # it failed (the server was away): a copy once more, now
            return await self._create()

    def _recycle_later(self, name: str) -> None:
        self._coming.append(asyncio.ensure_future(self._recycle(name)))

    async def _execute(self, sql: str, *args: Any) -> Any:
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            if self._conn is None or self._conn.is_closed():
                import asyncpg

                self._conn = await asyncpg.connect(self.admin_url)
            return await self._conn.fetchval(sql, *args)

    async def _create(self) -> str:
        name = new_database_name()
        await self._execute(f'create database "{name}" template "{self.template}"')
        self.made += 1
        if self._contents is None and self._refills:
            # What a fresh copy holds, read from the first, which no test has used yet.
            try:
                async with admin_connection(with_database(self.admin_url, name)) as conn:
                    self._contents = await _Contents.read(conn)
            except Exception as exc:  # the copy is good: only making databases fresh is lost
                self._refills = False
                warnings.warn(
                    f"databases given back will be dropped, not made fresh again: {exc!r}",
                    stacklevel=1,
                )
        return name

    async def _recycle(self, name: str) -> str:
        """``name`` made fresh again under a new name, or dropped and a copy made instead."""
        fresh = await self._refilled(name)
        if fresh is not None:
            return fresh
        return await self._create()

    async def _refilled(self, name: str) -> str | None:
        contents = self._contents
        written = self._written.pop(name, None)
        if contents is None or not self._refills:
            await self._drop(name)
            return None
        renamed = new_database_name()
        try:
            # pg_terminate_backend waits (up to 5 s) for each to be gone.
            await self._execute(
                "select count(pg_terminate_backend(pid, 5000)) from pg_stat_activity "
                "where datname = $1 and pid <> pg_backend_pid()",
                name,
            )
            await self._execute(f'alter database "{name}" rename to "{renamed}"')
        except Exception:  # someone connected again, or the test dropped it
            await self._drop(name)
            return None
        try:
            async with admin_connection(with_database(self.admin_url, renamed)) as conn:
                if await conn.fetchval(_FINGERPRINT) != contents.fingerprint:
                    raise _Changed
                self._written[renamed] = await contents.refill(conn, written or contents.written)
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == _INSUFFICIENT_PRIVILEGE:
                self._refills = False
            await self._drop(renamed)
            return None
        self.refilled += 1
        return renamed

    async def _drop(self, name: str) -> None:
        await self._execute(f'drop database if exists "{name}" with (force)')

    async def _close(self) -> None:
        for name in await asyncio.gather(*self._coming, return_exceptions=True):
            if isinstance(name, str):
                with contextlib.suppress(Exception):
                    await self._drop(name)
        self._coming.clear()
        if self._conn is not None:
            await self._conn.close()


class _Changed(Exception):
    """A test changed a database's definitions: it cannot be made fresh by its rows."""
