"""Ownership loaders: transitive groups, transitive members, and chains of parent groups.

Everything transitive is computed by recursive queries in PostgreSQL. ``union`` (not
``union all``) and the ``cycle`` clause stop at nesting cycles instead of looping on them.
"""

from __future__ import annotations

from strawberry.dataloader import DataLoader

from loaders.change_keys import WHOLE_CATALOG
from loaders.registry import LoaderServices
from sources.db import Executor

__all__ = [
    "ANCESTORS",
    "DESCENDANTS",
    "GROUPS_OF",
    "MEMBERS_OF",
    "ancestors_loader",
    "descendants_loader",
    "groups_of",
    "groups_of_loader",
    "members_of_loader",
]

DESCENDANTS = "ownership.descendants"
GROUPS_OF = "ownership.groupsOf"
MEMBERS_OF = "ownership.membersOf"
ANCESTORS = "ownership.ancestors"

# For users: the groups they are in and all those groups' ancestors; for groups: ancestors.
GROUPS_OF_SQL = """
with recursive up(origin, ref) as (
    select r.source_ref, r.target_ref from relations r
    where r.source_ref = any($1::text[]) and r.type in ('memberOf', 'childOf')
  union
    select up.origin, r.target_ref from up
    join relations r on r.source_ref = up.ref and r.type = 'childOf'
)
select origin, ref from up where ref <> origin order by origin, ref
"""
# Users in a group or in any group below it.
MEMBERS_OF_SQL = """
with recursive down(origin, ref) as (
    select g, g from unnest($1::text[]) as g
  union
    select down.origin, r.target_ref from down
    join relations r on r.source_ref = down.ref and r.type = 'parentOf'
)
select distinct down.origin, r.target_ref as ref from down
join relations r on r.source_ref = down.ref and r.type = 'hasMember'
order by 1, 2
"""
# Groups below a group, at any depth.
DESCENDANTS_SQL = """
with recursive down(origin, ref) as (
    select g, g from unnest($1::text[]) as g
  union
    select down.origin, r.target_ref from down
    join relations r on r.source_ref = down.ref and r.type = 'parentOf'
)
select origin, ref from down where ref <> origin order by 1, 2
"""
# Parent, grandparent, ...: nearest first; a cycle ends the chain.
ANCESTORS_SQL = """
with recursive up(origin, ref, depth) as (
    select g, g, 0 from unnest($1::text[]) as g
  union all
    select up.origin, r.target_ref, up.depth + 1 from up
    join relations r on r.source_ref = up.ref and r.type = 'childOf'
) cycle ref set looped using path
select origin, ref, min(depth) as depth from up
where not looped and depth > 0
group by origin, ref
order by origin, depth, ref
"""


# Memberships and group trees are made of many entities' relations: any catalog change may
# move them, so answers built on them depend on the whole catalog (WHOLE_CATALOG).


async def _grouped(db: Executor, sql: str, keys: list[str]) -> list[list[str]]:
    found: dict[str, list[str]] = {}
    for row in await db.fetch(sql, keys):
        found.setdefault(row["origin"], []).append(row["ref"])
    return [found.get(key, []) for key in keys]


async def groups_of(db: Executor, refs: list[str]) -> list[list[str]]:
    return await _grouped(db, GROUPS_OF_SQL, refs)


def _loader(services: LoaderServices, sql: str) -> DataLoader[str, list[str]]:
    async def load(refs: list[str]) -> list[list[str]]:
        services.tags.add(WHOLE_CATALOG)
        return await _grouped(services.db, sql, refs)

    return DataLoader(load_fn=load)


def groups_of_loader(services: LoaderServices) -> DataLoader[str, list[str]]:
    return _loader(services, GROUPS_OF_SQL)


def members_of_loader(services: LoaderServices) -> DataLoader[str, list[str]]:
    return _loader(services, MEMBERS_OF_SQL)


def ancestors_loader(services: LoaderServices) -> DataLoader[str, list[str]]:
    return _loader(services, ANCESTORS_SQL)


def descendants_loader(services: LoaderServices) -> DataLoader[str, list[str]]:
    return _loader(services, DESCENDANTS_SQL)
