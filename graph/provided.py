"""What plugins share with each other at run time: named services, and a feed of changes.

A plugin *provides* a service by name (PinCompute provides ``workloads``), built from its
lifespan's state the first time someone asks; another plugin *uses* it by that name, never by
importing the provider. The assembly checks both ends at start-up: one provider a name, and a
plugin that needs a service nobody provides fails naming both.

The change feed hears every invalidation the caches hear, from this replica and (through Redis)
from the others, so a subscription can follow what changed wherever the write happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EVERYTHING", "ChangeFeed", "ServiceDirectory", "ServiceMissing"]

# Sent to listeners when this replica may have missed changes (Redis went away): anything
# they follow may have changed.
EVERYTHING = "*"


class ServiceMissing(LookupError):
    """No plugin provides a service by that name (or its provider has not started)."""


@dataclass(slots=True)
class ServiceDirectory:
    # name → (providing plugin id, factory given that plugin's lifespan state)
    providers: dict[str, tuple[str, Callable[[Any], Any]]]
    states: dict[str, Any]  # plugin id → what its lifespan yielded (Services.extras)
    _built: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        found = self._built.get(name)
        if found is not None:
            return found
        if name not in self.providers:
            raise ServiceMissing(f"no plugin provides the service {name!r}")
        plugin_id, factory = self.providers[name]
        if plugin_id not in self.states:
            raise ServiceMissing(f"the service {name!r} of plugin {plugin_id} has not started")
        built = self._built[name] = factory(self.states[plugin_id])
        return built

    def __contains__(self, name: str) -> bool:
        return name in self.providers


class ChangeFeed:
    """Invalidated keys, fanned out to whoever follows a prefix (a cache subscriber)."""

    def __init__(self) -> None:
        self._queues: dict[asyncio.Queue[list[str]], str] = {}

    def drop_local(self, keys: list[str]) -> None:
        for queue, prefix in self._queues.items():
            matching = [k for k in keys if k.startswith(prefix)]
            if matching:
                queue.put_nowait(matching)

    async def drop_shared(self, keys: list[str]) -> None:
        """Nothing shared: each replica's followers hear the changes it hears."""

    def clear_local(self) -> None:
        for queue in self._queues:
            queue.put_nowait([EVERYTHING])

    def follow(self, prefix: str) -> AsyncGenerator[list[str], None]:
        """Keys starting with ``prefix`` as they change, a batch at a time, from this call on
        (the listener is in place before the caller reads anything, so a catch-up read done
        next misses nothing)."""
        queue: asyncio.Queue[list[str]] = asyncio.Queue(maxsize=0)
        self._queues[queue] = prefix
        return self._drain(queue)

    async def _drain(self, queue: asyncio.Queue[list[str]]) -> AsyncGenerator[list[str], None]:
        try:
            while True:
                keys = await queue.get()
                while not queue.empty():  # a burst is one batch
                    keys = [*keys, *queue.get_nowait()]
                yield keys
        finally:
            self._queues.pop(queue, None)
