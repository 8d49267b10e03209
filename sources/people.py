"""Who an identity provider's claims name in the catalog: a User by name or by e-mail, and the
Group a machine client acts as."""

from __future__ import annotations

from dataclasses import dataclass

from sources.catalog.refs import normalize_ref
from sources.db import Executor
from sources.errors import InvalidRef
from sources.ldap.records import normalise_name

__all__ = ["Person", "group_named", "person_named"]

_EXISTS = "select ref from entities where ref = $1"
# Two users sharing an e-mail (a mistake in the directory) sign in as the first by ref.
_USER_BY_EMAIL = """
select ref from entities
where kind = 'User' and lower(spec #>> '{profile,email}') = lower($1)
order by ref limit 1
"""


@dataclass(frozen=True, slots=True)
class Person:
    ref: str
    known: bool  # whether the directory has this User


async def person_named(db: Executor, value: str, *, by_email: bool) -> Person | None:
    """The User a claim names: by its e-mail when asked to (or when the value is one), else by
    name. Someone the directory lacks is still someone: ``user:default/<the whole value,
    made a name>``, so an unknown ``amelia.chen@elsewhere.example`` never becomes the known
    ``amelia.chen``. None when nothing usable is left of the value."""
    value = value.strip()
    if by_email or "@" in value:
        ref = await db.fetchval(_USER_BY_EMAIL, value)
        if ref is not None:
            return Person(str(ref), True)
    name = normalise_name(value)
    if not name:
        return None
    ref = f"user:default/{name}"
    return Person(ref, await db.fetchval(_EXISTS, ref) is not None)


async def group_named(db: Executor, value: str) -> str | None:
    """The ref of the Group a claim names (``payments`` or ``group:default/payments``), if the
    catalog has it."""
    try:
        ref = normalize_ref(value, default_kind="Group") if ":" in value else None
    except InvalidRef:
        return None
    if ref is None:
        name = normalise_name(value)
        ref = f"group:default/{name}" if name else None
    if ref is None or not ref.startswith("group:"):
        return None
    return ref if await db.fetchval(_EXISTS, ref) is not None else None
