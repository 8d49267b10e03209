"""Where entities came from, as Backstage's locations: each origin an import named (a file, a
URL, the API's caller, the directory) is a location, and Location entities point at others.

Backstage registers locations and remembers which Location entity emitted which entity (its
processing tree). Atrium records the origin of each entity instead, so a location is an
origin, with an id derived from it (the same in every replica, nothing stored), and an
entity's parents are the Location entities whose targets name its origin.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
import uuid
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urljoin

from sources.db import Executor

__all__ = ["Location", "TargetIndex", "location_of", "locations", "origins_of", "target_index"]


@dataclass(frozen=True, slots=True)
class Location:
    id: str
    type: str
    target: str


def location_of(origin: str) -> Location:
    """``file`` for a path, ``url`` for a URL, what a ``type:target`` origin says; other
    origins (``api``, ``ldap``, a name an API caller gave) are of type ``atrium``."""
    kind, colon, rest = origin.partition(":")
    if origin.startswith(("http://", "https://")):
        kind, target = "url", origin
    elif origin.startswith("/"):
        kind, target = "file", origin
    elif colon and kind in ("url", "file") and rest:
        target = rest
    else:
        kind, target = "atrium", origin
    digest = hashlib.md5(origin.encode(), usedforsecurity=False).hexdigest()
    return Location(str(uuid.UUID(digest)), kind, target)


# Every distinct origin, one index probe each (a loose scan of entities_origin): a catalog of
# a quarter of a million entities comes from a few thousand files.
_ORIGINS: Final = """
with recursive found(origin) as (
    (select origin from entities order by origin limit 1)
    union all
    select (select e.origin from entities e where e.origin > f.origin order by e.origin limit 1)
    from found f where f.origin is not null
)
select origin from found where origin is not null
"""
_ORIGINS_OF: Final = "select ref, origin from entities where ref = any($1::text[])"
_LOCATION_ENTITIES: Final = "select ref, origin, spec from entities where kind = 'Location'"


async def locations(db: Executor) -> list[Location]:
    return [location_of(row["origin"]) for row in await db.fetch(_ORIGINS)]


async def origins_of(db: Executor, refs: list[str]) -> dict[str, str]:
    rows = await db.fetch(_ORIGINS_OF, refs)
    return {row["ref"]: row["origin"] for row in rows}


@dataclass(frozen=True, slots=True)
class TargetIndex:
    """Location entities by what they point at: exact targets, and glob patterns."""

    exact: dict[str, list[str]]
    patterns: list[tuple[str, str]]  # (pattern, Location entity ref)
    origins: dict[str, str]  # Location entity ref → its own origin

    def parents(self, origin: str) -> list[str]:
        """The Location entities whose targets name ``origin``, by ref."""
        found = list(self.exact.get(origin, ()))
        found += [ref for pattern, ref in self.patterns if fnmatch.fnmatchcase(origin, pattern)]
        return sorted(set(found))


async def target_index(db: Executor) -> TargetIndex:
    """Every Location entity's targets, resolved as Backstage resolves them: relative to the
    Location's own file or URL."""
    exact: dict[str, list[str]] = {}
    patterns: list[tuple[str, str]] = []
    origins: dict[str, str] = {}
    for row in await db.fetch(_LOCATION_ENTITIES):
        ref, origin = row["ref"], row["origin"]
        origins[ref] = origin
        for target in _targets(row["spec"]):
            resolved = _resolve(origin, target)
            if any(c in resolved for c in "*?["):
                patterns.append((resolved, ref))
            else:
                exact.setdefault(resolved, []).append(ref)
    return TargetIndex(exact, patterns, origins)


def _targets(spec: dict[str, Any]) -> list[str]:
    found = [spec.get("target"), *(spec.get("targets") or [])]
    return [t for t in found if isinstance(t, str) and t]


def _resolve(origin: str, target: str) -> str:
    if target.startswith(("http://", "https://", "/")):
        return target
    if origin.startswith(("http://", "https://")):
        return urljoin(origin, target)
    return posixpath.normpath(posixpath.join(posixpath.dirname(origin), target))
