"""The per-request context every resolver receives as ``info.context``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from starlette.requests import HTTPConnection
from strawberry.types import Info as StrawberryInfo

from graph.cache_control import CachePolicy, CacheScope
from graph.provided import ChangeFeed, ServiceDirectory
from graph.settings import Settings
from loaders.registry import RequestLoaders
from resolvers.attention import AttentionProvider
from sources.auth import Viewer
from sources.db import Database

__all__ = ["Context", "Info"]


async def _nothing(keys: list[str]) -> None:
    return None


@dataclass(slots=True)
class Context:
    request: HTTPConnection | None  # None for in-process execution (CLI, server-side rendering)
    settings: Settings
    db: Database
    loaders: RequestLoaders
    viewer: Viewer
    # Whether the viewer is an admin, worked out on first need.
    admin: bool | None = None
    # Tell the caches (here and in other replicas) which entity refs a write changed.
    invalidate: Callable[[list[str]], Awaitable[None]] = field(default=_nothing)
    # What plugins' lifespans yielded, keyed by plugin id (shared by every request).
    extras: dict[str, Any] = field(default_factory=dict)
    # Per-request scratch space for plugins, keyed by plugin id.
    state: dict[str, Any] = field(default_factory=dict)
    # How long the answer may be cached, from the document's hints (None: not a cacheable
    # query). Resolvers tighten it with ``cache_hint``.
    cache: CachePolicy | None = None
    # What the answer was made of: entity refs, ``kind:<kind>`` for lists of a kind, ``catalog``
    # for anything wider. A cached answer is dropped when any of these changes.
    tags: set[str] = field(default_factory=set)
    # Services plugins provide to each other, and the feed of changes (graph.provided).
    provided: ServiceDirectory | None = None
    changes: ChangeFeed | None = None
    # What plugins say needs attention (builder.attention): (plugin id, provider), shared.
    attention: Sequence[tuple[str, AttentionProvider]] = ()

    def cache_hint(self, max_age: float | None = None, scope: CacheScope | None = None) -> None:
        """Tighten this request's cache policy (a resolver whose data is fresher than its
        type's hint, or is the viewer's own)."""
        if self.cache is not None:
            self.cache.restrict(max_age, scope)

    def depends_on(self, *tags: str) -> None:
        """Name what the answer depends on beyond the entities loaders fetched."""
        self.tags.update(tags)


Info: TypeAlias = StrawberryInfo[Context, None]
