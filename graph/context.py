"""The per-request context every resolver receives as ``info.context``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from starlette.requests import HTTPConnection
from strawberry.types import Info as StrawberryInfo

from graph.settings import Settings
from loaders.registry import RequestLoaders
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


Info: TypeAlias = StrawberryInfo[Context, None]
