"""Stars: the entities each person marked, kept per person (migrations/0008_stars.sql)."""

from __future__ import annotations

from typing import Final

from sources.db import Executor

__all__ = ["add_star", "remove_star", "starred_among", "starred_refs"]

# Starring again keeps the first time: a star's place in the list does not move.
ADD: Final = """
insert into stars (user_ref, entity_ref) values ($1, $2)
on conflict (user_ref, entity_ref) do nothing
"""
REMOVE: Final = "delete from stars where user_ref = $1 and entity_ref = $2"
# Which of these (person, entity) pairs are stars, in one statement for a loader's batch.
AMONG: Final = """
select s.user_ref, s.entity_ref
from stars s
join unnest($1::text[], $2::text[]) as k(user_ref, entity_ref)
  on s.user_ref = k.user_ref and s.entity_ref = k.entity_ref
"""
# A person's stars, newest first, up to the $2-th whose entity exists: the stars of entities
# that do not exist (any more, or yet) before it come too, so that the caller can say its
# answer depends on them (one of them imported again belongs in the list).
NEWEST: Final = """
select entity_ref from (
    select s.entity_ref, s.starred_at,
           count(e.ref) over (order by s.starred_at desc, s.entity_ref) as existing,
           e.ref is not null as present
    from stars s left join entities e on e.ref = s.entity_ref
    where s.user_ref = $1
) listed
where existing - present::int < $2
order by starred_at desc, entity_ref
"""


async def add_star(db: Executor, user_ref: str, entity_ref: str) -> bool:
    """Star; False when it was starred already."""
    return await db.execute(ADD, user_ref, entity_ref) == "INSERT 0 1"


async def remove_star(db: Executor, user_ref: str, entity_ref: str) -> bool:
    """Unstar; False when it was not starred."""
    return await db.execute(REMOVE, user_ref, entity_ref) == "DELETE 1"


async def starred_among(db: Executor, pairs: list[tuple[str, str]]) -> set[tuple[str, str]]:
    rows = await db.fetch(AMONG, [p[0] for p in pairs], [p[1] for p in pairs])
    return {(row["user_ref"], row["entity_ref"]) for row in rows}


async def starred_refs(db: Executor, user_ref: str, existing: int) -> list[str]:
    """The refs of a person's stars, newest first, up to the ``existing``-th that names an
    entity, with the stars of missing entities among them."""
    return [row["entity_ref"] for row in await db.fetch(NEWEST, user_ref, existing)]
