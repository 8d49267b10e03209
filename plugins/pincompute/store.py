"""In-memory stores the informers keep: every object of one kind across every cluster.

Queries read these and never wait on an API server. Indexes by cluster, by namespace and by
owning catalog entity keep a team's or a namespace's workloads a dictionary look-up away,
whatever the number of clusters.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ENTITY_ANNOTATION", "Key", "ObjectStore", "StoredObject"]

ENTITY_ANNOTATION: Final = "atrium.dev/entity-ref"


@dataclass(frozen=True, slots=True, order=True)
class Key:
    cluster: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.cluster}/{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class StoredObject:
    key: Key
    body: dict[str, Any]

    @property
    def entity_ref(self) -> str | None:
        annotations = (self.body.get("metadata") or {}).get("annotations") or {}
        ref = annotations.get(ENTITY_ANNOTATION)
        return normalise_ref(ref) if isinstance(ref, str) and ref.strip() else None

    @property
    def resource_version(self) -> str | None:
        value = (self.body.get("metadata") or {}).get("resourceVersion")
        return str(value) if value is not None else None


def normalise_ref(text: str) -> str:
    """Catalog refs compare lowercase, with the namespace ``default`` when left out."""
    text = text.strip().lower()
    kind, sep, rest = text.partition(":")
    return f"{kind}:default/{rest}" if sep and "/" not in rest else text


Listener = Callable[[str, StoredObject], None]


class ObjectStore:
    """Objects of one kind, keyed by (cluster, namespace, name), with secondary indexes."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._objects: dict[Key, StoredObject] = {}
        self._by_cluster: dict[str, set[Key]] = defaultdict(set)
        self._by_namespace: dict[str, set[Key]] = defaultdict(set)
        self._by_entity: dict[str, set[Key]] = defaultdict(set)
        self.listeners: list[Listener] = []

    def __len__(self) -> int:
        return len(self._objects)

    def get(self, key: Key) -> StoredObject | None:
        return self._objects.get(key)

    @staticmethod
    def key_of(cluster: str, body: dict[str, Any]) -> Key:
        metadata = body.get("metadata") or {}
        return Key(cluster, str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))

    def upsert(self, cluster: str, body: dict[str, Any]) -> StoredObject:
        key = self.key_of(cluster, body)
        old = self._objects.get(key)
        if old is not None:
            self._unindex(old)
        stored = StoredObject(key, body)
        self._objects[key] = stored
        self._by_cluster[key.cluster].add(key)
        self._by_namespace[key.namespace].add(key)
        if stored.entity_ref:
            self._by_entity[stored.entity_ref].add(key)
        self._emit("MODIFIED" if old is not None else "ADDED", stored)
        return stored

    def remove(self, key: Key) -> StoredObject | None:
        old = self._objects.pop(key, None)
        if old is not None:
            self._unindex(old)
            self._emit("DELETED", old)
        return old

    def replace_cluster(self, cluster: str, bodies: Iterable[dict[str, Any]]) -> list[Key]:
        """A relist: store what the list returned, delete what it no longer holds; returns
        the keys deleted (objects that vanished while nobody was watching)."""
        seen = {self.upsert(cluster, body).key for body in bodies}
        gone = [key for key in list(self._by_cluster.get(cluster, ())) if key not in seen]
        for key in gone:
            self.remove(key)
        return gone

    def in_cluster(self, cluster: str) -> list[StoredObject]:
        return [self._objects[k] for k in self._by_cluster.get(cluster, ())]

    def in_namespace(self, namespace: str) -> list[StoredObject]:
        return [self._objects[k] for k in self._by_namespace.get(namespace, ())]

    def of_entities(self, refs: Iterable[str]) -> list[StoredObject]:
        keys = set().union(*(self._by_entity.get(ref, set()) for ref in refs))
        return [self._objects[k] for k in keys]

    def all(self) -> list[StoredObject]:
        return list(self._objects.values())

    def _unindex(self, stored: StoredObject) -> None:
        key = stored.key
        self._by_cluster[key.cluster].discard(key)
        self._by_namespace[key.namespace].discard(key)
        if stored.entity_ref:
            self._by_entity[stored.entity_ref].discard(key)

    def _emit(self, event: str, stored: StoredObject) -> None:
        for listener in self.listeners:
            listener(event, stored)
