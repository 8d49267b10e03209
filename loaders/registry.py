"""Loader factories, registered once at start-up, and the per-request set built from them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from strawberry.dataloader import DataLoader

from loaders.cache import Caches
from sources.db import Database

__all__ = ["LoaderFactory", "LoaderRegistry", "LoaderServices", "RequestLoaders"]


@dataclass(frozen=True, slots=True)
class LoaderServices:
    """What a loader may use to fetch: the database, and (later) caches and clusters."""

    db: Database
    extras: dict[str, Any]
    caches: Caches | None = None
    # What this request read (entity refs, kind:<kind>, catalog): the response cache drops an
    # answer when any of them changes. Loaders add to it; shared with the request's context.
    tags: set[str] = field(default_factory=set)


LoaderFactory = Callable[[LoaderServices], DataLoader[Any, Any]]


class LoaderRegistry:
    """Named loader factories. Names are ``<plugin>.<name>``; a name is taken only once."""

    def __init__(self) -> None:
        self._factories: dict[str, LoaderFactory] = {}

    def add(self, name: str, factory: LoaderFactory) -> None:
        if name in self._factories:
            raise KeyError(name)
        self._factories[name] = factory

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def for_request(self, services: LoaderServices) -> RequestLoaders:
        return RequestLoaders(self._factories, services)


class RequestLoaders:
    """One request's loaders, created on first use so a request pays only for what it asks."""

    __slots__ = ("_built", "_factories", "_services")

    def __init__(self, factories: dict[str, LoaderFactory], services: LoaderServices) -> None:
        self._factories = factories
        self._services = services
        self._built: dict[str, DataLoader[Any, Any]] = {}

    def __getitem__(self, name: str) -> DataLoader[Any, Any]:
        loader = self._built.get(name)
        if loader is None:
            try:
                factory = self._factories[name]
            except KeyError:
                raise KeyError(f"no loader named {name!r} is registered") from None
            loader = self._built[name] = factory(self._services)
        return loader
