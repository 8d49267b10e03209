"""The test kit's databases (``atrium.testing.copies.DatabaseCopies``): each test's database
is as fresh as the template, whether it is a new copy or one another test used and gave back.

Against the tests' PostgreSQL, on a template of its own with rows in a table, a sequence
moved on, a table another refers to, a trigger and a generated column: what a test changes of
rows and sequences is put back, under a new name, without a copy being made; a client still
connected is cut off and cannot reach the next test's database by the old name; a database
whose definitions a test changed is dropped and never handed out again."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import asyncpg
import pytest

from atrium.testing.copies import DatabaseCopies
from atrium.testing.databases import (
    admin_connection,
    drop_database,
    new_database_name,
    with_database,
)

TEMPLATE = """
create table teams (
    id bigint generated always as identity primary key,
    name text not null unique,
    folded text generated always as (lower(name)) stored
);
create table members (
    team bigint not null references teams (id) on delete cascade,
    person text not null
);
create table history (at timestamptz not null default now(), note text not null);
create function remember() returns trigger language plpgsql as $$
begin
    insert into history (note) values ('member ' || new.person);
    return new;
end $$;
create trigger remembered after insert on members for each row execute function remember();
insert into teams (name) values ('Checkout'), ('Search');
insert into members values (1, 'amelia'), (2, 'olivia');
"""


async def _state(url: str) -> dict[str, Any]:
    async with admin_connection(url) as conn:
        return {
            "teams": [tuple(r) for r in await conn.fetch("select * from teams order by id")],
            "members": [tuple(r) for r in await conn.fetch("select * from members order by 2")],
            "history": await conn.fetchval("select count(*) from history"),
            "next id": await conn.fetchval(
                "insert into teams (name) values ('probe') returning id"
            ),
        }


@pytest.fixture
def template(pg_admin_url: str) -> Iterator[str]:
    name = new_database_name()

    async def make() -> None:
        async with admin_connection(pg_admin_url) as conn:
            await conn.execute(f'create database "{name}"')
        async with admin_connection(with_database(pg_admin_url, name)) as conn:
            await conn.execute(TEMPLATE)

    asyncio.run(make())
    yield name
    drop_database(pg_admin_url, name)


@pytest.fixture
def copies(pg_admin_url: str, template: str) -> Iterator[DatabaseCopies]:
    with DatabaseCopies(pg_admin_url, template) as made:
        yield made


async def test_rows_and_sequences_a_test_changed_are_put_back(
    copies: DatabaseCopies, pg_admin_url: str
) -> None:
    first = await asyncio.to_thread(copies.take)
    expected = await _state(first)  # a fresh copy; this probe's row is changed below too
    assert expected["teams"][0] == (1, "Checkout", "checkout") and expected["next id"] == 3
    async with admin_connection(first) as conn:
        await conn.execute("insert into teams (name) values ('Payments'), ('Ads')")
        await conn.execute("update teams set name = 'Till' where id = 1")
        await conn.execute("delete from members where person = 'olivia'")
        await conn.execute("insert into members values (1, 'noah')")  # through the trigger
    # The copy made while the first was used; taking it, another is made ahead.
    ahead = await asyncio.to_thread(copies.take)
    copies.give_back(first)
    copies.give_back(ahead)
    taken = [await asyncio.to_thread(copies.take) for _ in range(3)]
    assert first not in taken and ahead not in taken, "a database came back by its old name"
    for url in taken:
        state = await _state(url)
        assert state == expected | {"next id": 3}, url
    # Both given back came back made fresh (not dropped and copied again).
    assert copies.refilled == 2
    # A client of the first test that connects again by its name finds nothing.
    with pytest.raises(asyncpg.InvalidCatalogNameError):
        await asyncpg.connect(first)
    for url in taken:
        copies.give_back(url)


async def test_a_client_still_connected_is_cut_off(copies: DatabaseCopies) -> None:
    url = await asyncio.to_thread(copies.take)
    lingering = await asyncpg.connect(url)
    await lingering.execute("insert into teams (name) values ('Lingering')")
    ahead = await asyncio.to_thread(copies.take)
    copies.give_back(url)
    copies.give_back(ahead)
    taken = [await asyncio.to_thread(copies.take) for _ in range(3)]
    # Both given back came back made fresh (counted before these are given back in turn).
    assert copies.refilled == 2
    with pytest.raises((asyncpg.InterfaceError, asyncpg.PostgresConnectionError, OSError)):
        await lingering.execute("insert into teams (name) values ('Too late')")
    await lingering.close()
    for fresh in taken:
        assert [r[1] for r in (await _state(fresh))["teams"]] == ["Checkout", "Search"]
        copies.give_back(fresh)


async def test_a_database_whose_definitions_changed_is_dropped(
    copies: DatabaseCopies, pg_admin_url: str
) -> None:
    changes = [
        "create table extra (x int)",
        "alter table teams add column motto text",
        "create index on members (person)",
        "alter table members disable trigger remembered",
        "create or replace function remember() returns trigger language plpgsql as "
        "$$ begin return new; end $$",
        "alter table history alter column note set default 'x'",
        "create schema other",
    ]
    urls = [await asyncio.to_thread(copies.take) for _ in changes]
    for url, change in zip(urls, changes, strict=True):
        async with admin_connection(url) as conn:
            await conn.execute(change)
        copies.give_back(url)
    taken = [await asyncio.to_thread(copies.take) for _ in changes]
    assert copies.refilled == 0, "a database a test changed the definitions of came back"
    async with admin_connection(pg_admin_url) as conn:
        left = await conn.fetch(
            "select datname from pg_database where datname = any($1)",
            [u.rpartition("/")[2] for u in urls],
        )
    assert not left
    for url in taken:
        async with admin_connection(url) as conn:
            assert await conn.fetchval("select to_regclass('extra')") is None
            assert (
                await conn.fetchval("select count(*) from pg_attribute where attname = 'motto'")
                == 0
            )
        copies.give_back(url)


@pytest.fixture
def creator(pg_admin_url: str) -> Iterator[str]:
    """An admin URL of a role that may create databases but is no superuser."""
    role = f"atrium_kit_creator_{uuid.uuid4().hex[:12]}"

    async def run(*statements: str) -> None:
        async with admin_connection(pg_admin_url) as conn:
            for statement in statements:
                await conn.execute(statement)

    asyncio.run(run(f"create role {role} login createdb password '{role}'"))
    head, _, tail = pg_admin_url.partition("://")
    yield f"{head}://{role}:{role}@{tail.partition('@')[2]}"
    asyncio.run(run(f"drop owned by {role}", f"drop role {role}"))


async def test_without_a_superuser_every_database_is_dropped_after_its_test(
    creator: str,
) -> None:
    template = new_database_name()
    async with admin_connection(creator) as conn:
        await conn.execute(f'create database "{template}"')
    async with admin_connection(with_database(creator, template)) as conn:
        await conn.execute(TEMPLATE)
    try:
        with DatabaseCopies(creator, template) as copies:
            urls = [await asyncio.to_thread(copies.take) for _ in range(2)]
            for url in urls:
                copies.give_back(url)
            taken = [await asyncio.to_thread(copies.take) for _ in range(2)]
            for url in taken:
                assert (await _state(url))["next id"] == 3
                copies.give_back(url)
            assert copies.refilled == 0
    finally:
        await asyncio.to_thread(drop_database, creator, template)
