from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from sources.db import Database
from sources.errors import MigrationError
from sources.migrations import Migration, apply_migrations, pending_migrations, read_migrations


def write(directory: Path, name: str, sql: str) -> None:
    (directory / name).write_text(sql)


async def applied_together(
    database_url: str, migrations: list[Migration], replicas: int, *queries: str
) -> tuple[list[list[Migration]], list[Any]]:
    """``replicas`` replicas, a pool each, applying ``migrations`` at once: what each said it
    applied, and the value of each of ``queries`` after."""
    pools = [await Database.connect(database_url, min_size=1, max_size=2) for _ in range(replicas)]
    try:
        results = await asyncio.gather(*(apply_migrations(p, migrations) for p in pools))
        values = [await pools[0].fetchval(query) for query in queries]
    finally:
        for pool in pools:
            await pool.close()
    return results, values


async def test_migrations_apply_in_order_once(db: Database, tmp_path: Path) -> None:
    write(tmp_path, "0002_second.sql", "insert into things values (2);")
    write(tmp_path, "0001_first.sql", "create table things (n int);")
    write(tmp_path, "README.md", "not a migration")
    migrations = read_migrations("demo", tmp_path)
    assert [m.version for m in migrations] == [1, 2]

    applied = await apply_migrations(db, migrations)
    assert [m.name for m in applied] == ["first", "second"]
    assert await apply_migrations(db, migrations) == []
    assert await db.fetchval("select count(*) from things") == 1


async def test_replicas_starting_together_apply_once(database_url: str, tmp_path: Path) -> None:
    write(tmp_path, "0001_slow.sql", "select pg_sleep(0.2); create table once (n int);")
    migrations = read_migrations("race", tmp_path)
    results, _ = await applied_together(database_url, migrations, 3)
    assert sorted(len(r) for r in results) == [0, 0, 1]


async def test_a_changed_applied_migration_is_refused(db: Database, tmp_path: Path) -> None:
    write(tmp_path, "0001_first.sql", "create table things (n int);")
    await apply_migrations(db, read_migrations("demo", tmp_path))
    write(tmp_path, "0001_first.sql", "create table things (n bigint);")
    with pytest.raises(MigrationError, match="demo/0001_first was changed"):
        await pending_migrations(db, read_migrations("demo", tmp_path))


async def test_a_failing_migration_names_itself_and_leaves_nothing(
    db: Database, tmp_path: Path
) -> None:
    write(tmp_path, "0001_bad.sql", "create table half (n int); select no_such_function();")
    with pytest.raises(MigrationError, match="demo/0001_bad failed"):
        await apply_migrations(db, read_migrations("demo", tmp_path))
    assert await db.fetchval("select to_regclass('half') is null")
    assert len(await pending_migrations(db, read_migrations("demo", tmp_path))) == 1


def test_two_migrations_with_one_number_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "0001_a.sql", "")
    write(tmp_path, "0001_b.sql", "")
    with pytest.raises(MigrationError, match="share a number"):
        read_migrations("demo", tmp_path)


ONLINE_BUILD = """-- atrium: online
-- A comment; then the statements, one per semicolon.
create index concurrently if not exists things_n on things (n);
analyze things;
"""


async def test_an_online_migration_builds_its_index_outside_a_transaction(
    db: Database, tmp_path: Path
) -> None:
    write(tmp_path, "0001_table.sql", "create table things (n int); insert into things values (1);")
    write(tmp_path, "0002_index.sql", ONLINE_BUILD)
    migrations = read_migrations("demo", tmp_path)
    assert [m.online for m in migrations] == [False, True]
    assert migrations[1].statements() == [
        "create index concurrently if not exists things_n on things (n)",
        "analyze things",
    ]
    # Inside a transaction, PostgreSQL would have refused it.
    assert [m.name for m in await apply_migrations(db, migrations)] == ["table", "index"]
    assert await db.fetchval(
        "select indisvalid from pg_index where indexrelid = 'things_n'::regclass"
    )
    assert await apply_migrations(db, migrations) == []


async def test_an_interrupted_online_build_is_built_again(db: Database, tmp_path: Path) -> None:
    """A build that failed half-way leaves an invalid index; applying the migration again
    drops it and builds it whole (``if not exists`` alone would have kept the invalid one)."""
    write(
        tmp_path,
        "0001_table.sql",
        "create table things (n int); insert into things values (1), (1);",
    )
    migrations = read_migrations("demo", tmp_path)
    await apply_migrations(db, migrations)
    with pytest.raises(Exception, match="could not create unique index"):
        await db.execute("create unique index concurrently things_n on things (n)")
    await db.execute("delete from things where ctid = (select min(ctid) from things)")
    assert not await db.fetchval(
        "select indisvalid from pg_index where indexrelid = 'things_n'::regclass"
    )
    write(
        tmp_path,
        "0002_index.sql",
        "-- atrium: online\ncreate unique index concurrently if not exists things_n on things (n);\n",
    )
    await apply_migrations(db, read_migrations("demo", tmp_path))
    assert await db.fetchval(
        "select indisvalid from pg_index where indexrelid = 'things_n'::regclass"
    )


@pytest.mark.parametrize(
    "statement",
    [
        "create index things_n on things (n);",
        "create index concurrently things_n on things (n);",
        "drop index concurrently things_n;",
        "alter table things add column m int;",
    ],
)
def test_an_online_migration_holds_only_statements_that_may_run_again(
    tmp_path: Path, statement: str
) -> None:
    write(tmp_path, "0001_online.sql", f"-- atrium: online\n{statement}\n")
    with pytest.raises(MigrationError, match="demo/0001_online is online"):
        read_migrations("demo", tmp_path)


async def test_replicas_starting_together_build_an_online_index_once(
    database_url: str, tmp_path: Path
) -> None:
    write(
        tmp_path,
        "0001_table.sql",
        "create table things (n int); insert into things select generate_series(1, 50000);",
    )
    write(tmp_path, "0002_index.sql", ONLINE_BUILD)
    migrations = read_migrations("race", tmp_path)
    results, (valid, recorded) = await applied_together(
        database_url,
        migrations,
        3,
        "select indisvalid from pg_index where indexrelid = 'things_n'::regclass",
        "select count(*) from atrium_migrations where scope = 'race' and version = 2",
    )
    assert valid and recorded == 1
    # Each migration is told as applied by one replica, the one that recorded it.
    names = sorted(m.name for r in results for m in r)
    assert names == ["index", "table"]


async def test_replicas_starting_together_build_online_indexes_of_one_table_in_a_row(
    database_url: str, tmp_path: Path
) -> None:
    """A replica that recorded one build goes on to the next while another still ends the
    first: two builds on one table at once, whose ends both update the table's row
    (PostgreSQL: "tuple concurrently updated"). Each replica looks again, as after a
    deadlock; every index is built, every migration applied once."""
    write(
        tmp_path,
        "0001_table.sql",
        "create table things (n int, m int, k int);"
        " insert into things select i, i, i from generate_series(1, 20000) i;",
    )
    for version, column in enumerate("nmk", start=2):
        write(
            tmp_path,
            f"{version:04d}_index_{column}.sql",
            f"-- atrium: online\ncreate index concurrently if not exists things_{column}"
            f" on things ({column});\nanalyze things;\n",
        )
    migrations = read_migrations("race", tmp_path)
    results, (valid,) = await applied_together(
        database_url,
        migrations,
        4,
        "select count(*) from pg_index where indisvalid and indrelid = 'things'::regclass",
    )
    assert valid == 3
    assert sorted(m.name for r in results for m in r) == ["index_k", "index_m", "index_n", "table"]
