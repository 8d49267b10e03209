"""Change keys and cache tags: what a write announces, and what an answer is tagged with.

One string names both: a resolver tags its answer with a key (``depends_on``), a write
announces the key (``announce_changes``), and the answers tagged with it are dropped. There
are three sorts, told apart by rule, never by the look of the rest of the key:

- an **entity key**, ``entity_key(ref)``: the entity's normalized ref, ``kind:namespace/name``
  whose ``kind`` is one of the catalog's kinds (``component``, ``api``, ``resource``,
  ``system``, ``domain``, ``group``, ``user``, ``location``). Announcing it also drops the
  lists of that kind (``kind:<kind>``) and the answers over the whole catalog (``catalog``);
- Atrium's **list tags**: ``kind:<kind>`` and ``catalog``; a plain key when announced;
- a **namespaced key**, ``change_key(namespace, *parts)``: ``namespace:part:part...``, with a
  namespace of a plugin's own (its id, say). Announcing it drops only the answers tagged with
  that very key, whatever its parts hold (``change_key("deploys", ref)`` holds a ref and is
  still no entity's). Namespaces that are catalog kinds, or that Atrium uses (``kind``,
  ``catalog``, ``stars``, ``session``), are refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from sources.catalog.refs import KINDS, normalize_ref

__all__ = [
    "ENTITY_KINDS",
    "RESERVED_NAMESPACES",
    "WHOLE_CATALOG",
    "change_key",
    "entity_key",
    "entity_of_key",
    "tags_changed_by",
]

WHOLE_CATALOG: Final = "catalog"
ENTITY_KINDS: Final = frozenset(kind.lower() for kind in KINDS)
RESERVED_NAMESPACES: Final = ENTITY_KINDS | {"kind", WHOLE_CATALOG, "stars", "session"}
_NAMESPACE: Final = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def entity_key(ref: str) -> str:
    """The key of a catalog entity's changes: its normalized ref (``Component:Checkout`` →
    ``component:default/checkout``); raises ``InvalidRef`` for what names no entity."""
    return normalize_ref(ref)


def change_key(namespace: str, *parts: str) -> str:
    """A key of a plugin's own: ``namespace`` joined to ``parts`` by ``:``
    (``change_key("oncall", ref)`` → ``oncall:component:default/checkout``). It is never taken
    for an entity's key, whatever the parts hold; ``ValueError`` for a namespace that is not
    lowercase letters, digits and ``-_.``, or that the catalog or Atrium use."""
    if not _NAMESPACE.match(namespace) or namespace in RESERVED_NAMESPACES:
        raise ValueError(
            f"change key namespace {namespace!r}: use lowercase letters, digits and -_. "
            f"and none of {', '.join(sorted(RESERVED_NAMESPACES))}"
        )
    return ":".join((namespace, *parts))


def entity_of_key(key: str) -> str | None:
    """The catalog kind of an entity key, or None for every other key."""
    kind, colon, rest = key.partition(":")
    if colon and kind in ENTITY_KINDS and "/" in rest:
        return kind
    return None


def tags_changed_by(keys: Iterable[str]) -> set[str]:
    """What a change to these keys makes stale: each key, and for entity keys their kind's
    lists and the whole-catalog answers."""
    tags: set[str] = set()
    for key in keys:
        tags.add(key)
        kind = entity_of_key(key)
        if kind is not None:
            tags.add(f"kind:{kind}")
            tags.add(WHOLE_CATALOG)
    return tags
