"""List-then-watch informers, one per cluster and kind, feeding the shared stores.

The loop: a paged list, then a watch from the list's resourceVersion with bookmarks and a
server-side timeout; when the watch times out or its connection fails, watch again from the
last version seen (after a backoff with jitter on errors, recorded in the cluster's health);
on 410 Gone, that version is too old: list again, deleting what vanished meanwhile. Every
request has a client timeout longer than the watch's, so a cluster that stops answering is
noticed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
from dataclasses import dataclass
from typing import Any

import plugins.pincompute.kube as kube
from plugins.pincompute.clusters import Cluster
from plugins.pincompute.store import ObjectStore

__all__ = ["GROUP", "VERSION", "Informer", "Resource"]

log = logging.getLogger("atrium.pincompute.informer")

GROUP = "compute.atrium.dev"
VERSION = "v1"
PAGE_SIZE = 500
# Jitter from a generator of the plugin's own: the `random` module's shared state belongs to
# the application (a test framework seeding it, or checking that nothing else draws from it).
_jitter = random.Random()
MAX_BACKOFF = 60.0


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    plural: str


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


class Informer:
    def __init__(
        self,
        cluster: Cluster,
        resource: Resource,
        store: ObjectStore,
        *,
        namespace: str | None,
        watch_timeout: int,
        request_timeout: float,
    ) -> None:
        self.cluster = cluster
        self.resource = resource
        self.store = store
        self.namespace = namespace
        self.watch_timeout = watch_timeout
        self.request_timeout = request_timeout
        self.lists = 0  # how many times it listed: relists after 410 show here

    async def run(self) -> None:
        backoff = 1.0
        version: str | None = None
        while True:
            try:
                if version is None:
                    version = await self._list()
                version = await self._watch(version)
                backoff = 1.0
            except Gone:
                log.info("watch expired; listing again", extra=self._where())
                version = None
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the cluster, the network, or a malformed object
                message = _describe(exc)
                self.cluster.health.error(message)
                log.warning("informer failed; retrying", extra={**self._where(), "error": message})
                await asyncio.sleep(backoff * (0.5 + _jitter.random()))
                backoff = min(backoff * 2, MAX_BACKOFF)

    def _list_function(self) -> Any:
        api = self.cluster.custom
        if self.namespace:
            return api.list_namespaced_custom_object
        return api.list_cluster_custom_object

    def _list_arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "group": GROUP,
            "version": VERSION,
            "plural": self.resource.plural,
        }
        if self.namespace:
            arguments["namespace"] = self.namespace
        return arguments

    async def _list(self) -> str:
        """Every object, page by page; the store then holds exactly these for this cluster."""
        bodies: list[dict[str, Any]] = []
        token: str | None = None
        version = ""
        while True:
            page = await self._list_function()(
                **self._list_arguments(),
                limit=PAGE_SIZE,
                _continue=token,
                _request_timeout=(self.request_timeout, self.request_timeout * 3),
            )
            bodies += page.get("items") or []
            metadata = page.get("metadata") or {}
            version = str(metadata.get("resourceVersion") or version)
            token = metadata.get("continue") or None
            if not token:
                break
        for body in bodies:  # list items carry no kind; watch events and queries expect it
            body.setdefault("kind", self.resource.kind)
            body.setdefault("apiVersion", f"{GROUP}/{VERSION}")
        gone = self.store.replace_cluster(self.cluster.name, bodies)
        self.lists += 1
        if gone:
            log.info(
                "objects vanished between watches", extra={**self._where(), "deleted": len(gone)}
            )
        self.cluster.synced_kinds.add(self.resource.kind)
        self.cluster.health.ok()
        return version

    async def _watch(self, version: str) -> str:
        """One watch, until the server ends it; returns the version to continue from."""
        async with _watch_class()(self.cluster.client) as stream:
            try:
                async for event in self._events(stream, version):
                    version = self._apply(event, version)
            except kube.ApiException as exc:
                if exc.status == 410:
                    raise Gone from exc
                raise
        self.cluster.health.ok()
        return version

    def _events(self, stream: kube.watch.Watch, version: str) -> Any:
        return stream.stream(
            self._list_function(),
            **self._list_arguments(),
            resource_version=version,
            allow_watch_bookmarks=True,
            timeout_seconds=self.watch_timeout,
            _request_timeout=(self.request_timeout, self.watch_timeout + self.request_timeout),
        )

    def _apply(self, event: dict[str, Any], version: str) -> str:
        kind = event.get("type")
        body = event.get("raw_object") or event.get("object") or {}
        if kind == "ERROR":
            if body.get("code") == 410:
                raise Gone
            raise RuntimeError(f"watch error: {body.get('message') or body}")
        version = str((body.get("metadata") or {}).get("resourceVersion") or version)
        if kind == "DELETED":
            self.store.remove(self.store.key_of(self.cluster.name, body))
        elif kind in ("ADDED", "MODIFIED"):
            body.setdefault("kind", self.resource.kind)
            self.store.upsert(self.cluster.name, body)
        self.cluster.health.ok()
        return version

    def _where(self) -> dict[str, str]:
        return {"cluster": self.cluster.name, "kind": self.resource.kind}


def _describe(exc: BaseException) -> str:
    if isinstance(exc, kube.ApiException):
        if exc.status == 410:
            return "410 Gone"
        return f"{exc.status} {exc.reason}".strip()
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__


@functools.cache
def _watch_class() -> type[Any]:
    """kubernetes-asyncio's ``Watch`` on the cluster's own ApiClient. Its constructor makes an
    ApiClient of its own, only to turn events into models (which informers never ask for):
    an SSL context loading the system's certificates and an aiohttp session, some 30 ms of
    CPU for every watch, and closing the watch closed that client. This one borrows the
    cluster's, and closing it only lets go of its response. Made on first use, as
    kubernetes-asyncio is imported then (``kube``)."""

    class BorrowedWatch(kube.watch.Watch):
        def __init__(self, client: Any) -> None:
            # Watch.__init__'s attributes, with the cluster's client for its own.
            self._raw_return_type = None
            self._stop = False
            self._api_client = client
            self.resource_version = None
            self.resp = None

        async def close(self) -> None:
            if self.resp is not None:
                self.resp.release()
                self.resp = None

    return BorrowedWatch
