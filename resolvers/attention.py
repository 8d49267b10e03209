"""What needs attention: every plugin's view of a team's entities, merged and ordered.

Plugins register providers (``builder.attention``): ``provider(context, refs)`` answers, for
the refs it is given, what is wrong with them as ``AttentionItem``s. Here the refs are found
(what an owner owns, transitively, at most ``MAX_ENTITIES``), every provider is asked at the
same time within a timeout, and the answers are merged: most severe first, then newest. A
provider that fails or does not answer in time is logged and left out; the others still
answer, so one slow backend never empties a person's home page.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Final, TypeAlias

from loaders.registry import RequestLoaders
from resolvers import catalog, ownership
from sources.catalog.queries import EntityRecord, first_refs_owned_by
from sources.db import Executor

__all__ = [
    "MAX_ENTITIES",
    "AttentionItem",
    "AttentionLevel",
    "AttentionProvider",
    "Noticed",
    "attention",
]

# The most entities a question covers: a team owns tens to a few hundred; a business unit
# asked as a group may own thousands, and then its components come first (by ref).
MAX_ENTITIES: Final = 500

log = logging.getLogger("atrium.attention")


class AttentionLevel(Enum):
    CRITICAL = "CRITICAL"
    WARNING = "WARNING"
    NOTICE = "NOTICE"


_RANK: Final = {AttentionLevel.CRITICAL: 0, AttentionLevel.WARNING: 1, AttentionLevel.NOTICE: 2}


@dataclass(frozen=True, slots=True)
class AttentionItem:
    """One thing about one entity that a person should look at."""

    ref: str  # the entity it is about, one of the refs the provider was given
    level: AttentionLevel
    title: str  # a sentence: "Deploy of 1.38.0 to staging failed"
    detail: str | None = None  # more, when known: a deploy's message, an alert's description
    since: datetime | None = None  # when it began (timezone-aware)
    href: str | None = None  # where in the console to look


AttentionProvider: TypeAlias = Callable[[Any, Sequence[str]], Awaitable[Iterable[AttentionItem]]]


@dataclass(frozen=True, slots=True)
class Noticed:
    source: str  # the id of the plugin whose provider said so
    item: AttentionItem
    entity: EntityRecord


async def attention(
    context: Any,
    loaders: RequestLoaders,
    db: Executor,
    providers: Sequence[tuple[str, AttentionProvider]],
    owner: str,
    *,
    first: int,
    within: float,
) -> list[Noticed]:
    """The first ``first`` things needing attention among what ``owner`` (a user or a group)
    owns, through every group: most severe first, then the newest. Each provider has
    ``within`` seconds."""
    if first <= 0 or not providers:
        return []
    owners = await ownership.owner_set(loaders, owner, transitive=True)
    refs = await first_refs_owned_by(db, owners, MAX_ENTITIES)
    if not refs:
        return []
    # Loaded before the providers run: they read the same entities (pipelines, alert
    # selectors) from the request's loader, and so does the answer's ``entity``.
    records = {r.ref: r for r in await catalog.entities(loaders, refs) if r is not None}
    answers = await asyncio.gather(
        *(_ask(source, provider, context, refs, within) for source, provider in providers)
    )
    found = [
        Noticed(source, item, records[item.ref])
        for (source, _), items in zip(providers, answers, strict=True)
        for item in items
        if item.ref in records
    ]
    found.sort(key=_order)
    return found[:first]


def _order(noticed: Noticed) -> tuple[int, float, str, str, str]:
    item = noticed.item
    newest_first = -item.since.timestamp() if item.since is not None else float("inf")
    return (_RANK[item.level], newest_first, noticed.source, item.ref, item.title)


async def _ask(
    source: str, provider: AttentionProvider, context: Any, refs: list[str], within: float
) -> list[AttentionItem]:
    """One provider's answer, or nothing (logged) when it fails or is late."""
    try:
        async with asyncio.timeout(within):
            answer = await provider(context, refs)
            items = list(answer)
    except TimeoutError:
        log.warning(
            "an attention provider did not answer in time; left out",
            extra={"source": source, "timeout_s": within},
        )
        return []
    except Exception:
        log.exception("an attention provider failed; left out", extra={"source": source})
        return []
    kept = [
        i for i in items if isinstance(i, AttentionItem) and isinstance(i.level, AttentionLevel)
    ]
    if len(kept) < len(items):
        log.warning(
            "an attention provider answered something other than AttentionItems; ignored",
            extra={"source": source, "ignored": len(items) - len(kept)},
        )
    return kept
