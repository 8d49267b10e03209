"""An emulated Kubernetes API server: kmock's KubernetesEmulator, bridged to what
kubernetes-asyncio needs from a real one, served over HTTP on a local port.

The tests' clusters (tests/kube.py) and the demo's (``atrium serve --demo``,
``plugins/pincompute/demo.py``) are both this emulator: PinCompute talks to it exactly as to a
real API server, from a kubeconfig, over TCP.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import datetime
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass

import aiohttp.web
import attrs
import kmock

__all__ = [
    "DEFAULT_RESOURCES",
    "EVENTS",
    "GROUP",
    "PINAPPS",
    "PINSCALERS",
    "PODS",
    "VERSION",
    "BridgedEmulator",
    "PodLog",
    "Resource",
    "now",
    "register",
    "truthy",
]

GROUP = "compute.atrium.dev"
VERSION = "v1"


@dataclass(frozen=True)
class Resource:
    """A resource the emulator serves: enough to build its URLs and fill apiVersion/kind."""

    group: str  # "" for the core API
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    subresources: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> kmock.resource:
        return kmock.resource(self.group, self.version, self.plural)

    def path(self, namespace: str | None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name is not None else base


PINAPPS = Resource(GROUP, VERSION, "pinapps", "PinApp")
PINSCALERS = Resource(GROUP, VERSION, "pinscalers", "PinScaler")
PODS = Resource("", "v1", "pods", "Pod", subresources=frozenset({"log"}))
EVENTS = Resource("", "v1", "events", "Event")
DEFAULT_RESOURCES = (PINAPPS, PINSCALERS, PODS, EVENTS)


PINAPPS = Resource(GROUP, VERSION, "pinapps", "PinApp")
PINSCALERS = Resource(GROUP, VERSION, "pinscalers", "PinScaler")
PODS = Resource("", "v1", "pods", "Pod", subresources=frozenset({"log"}))
EVENTS = Resource("", "v1", "events", "Event")
DEFAULT_RESOURCES = (PINAPPS, PINSCALERS, PODS, EVENTS)


def truthy(value: str | None) -> bool:
    """A query flag as the API server reads it (Go's strconv.ParseBool): clients send "True"
    or "true"."""
    return value in {"1", "t", "T", "true", "True", "TRUE"}


def now() -> str:
    return datetime.datetime.now(tz=datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def register(emulator: kmock.KubernetesEmulator, resources: Iterable[Resource]) -> None:
    """Serve these resources, with every verb PinCompute uses."""
    for resource in resources:
        emulator.resources[resource.key] = kmock.ResourceInfo(
            kind=resource.kind,
            namespaced=resource.namespaced,
            verbs={"get", "list", "watch", "create", "patch", "delete"},
            subresources=set(resource.subresources),
        )


@attrs.define(kw_only=True)
class BridgedEmulator(kmock.KubernetesEmulator):
    """kmock's KubernetesEmulator with what kubernetes-asyncio needs from a real API server.

    * `watch=True` (what kubernetes-asyncio sends) is rewritten to `watch=true`, the only
      spelling kmock recognises as a watch; `record` sees each request as sent first.
    * Created and patched objects get what the API server would stamp: `metadata.namespace` from
      the URL (kmock leaves it out, and then a namespaced watch never sees the object's events),
      `uid` and `creationTimestamp` on create, and a fresh `resourceVersion` on every write. Lists
      carry the latest resourceVersion, so code that lists-then-watches has one to pass. A delete
      bumps it too (its DELETED event then carries a newer version than the object's last write).
    * Watches are served here rather than by kmock: the bus position is taken under the state lock
      together with the snapshot of existing objects, so no write falls between the replayed
      ADDED events and the live ones (kmock marks the bus after the replay); `timeoutSeconds` ends
      the stream as the API server does; and open watches are counted, so a test can wait until
      the code under test is watching before it changes anything.

    Kept from kmock: every watch starts by replaying all current objects as ADDED, whatever
    `resourceVersion` it asks for; it never sends BOOKMARK events.
    """

    # Whether served requests are kept once answered (kmock's ``requests``, for assertions on
    # kmock's own views). kmock matches each request against its reactions by scanning the
    # requests kept, so an emulator that keeps them gets slower with every request it serves:
    # the demo's runs for hours, a test session's for thousands of requests. Atrium's test
    # harness keeps its own record (tests/kube.py), and nothing else reads kmock's.
    keep_requests: bool = False
    last_resource_version: int = attrs.field(default=0, init=False)
    open_watches: collections.Counter[str] = attrs.field(factory=collections.Counter, init=False)
    _watches_changed: asyncio.Condition = attrs.field(factory=asyncio.Condition, init=False)

    async def __call__(self, raw_request: aiohttp.web.BaseRequest) -> aiohttp.web.StreamResponse:
        original = raw_request
        watch = raw_request.query.get("watch")
        if watch is not None and watch != "true" and truthy(watch):
            # Cloning must come before the body is read: aiohttp refuses to clone after that.
            raw_request = raw_request.clone(rel_url=raw_request.rel_url.update_query(watch="true"))
        self.record(original, await raw_request.read())
        return await super().__call__(raw_request)

    def record(self, request: aiohttp.web.BaseRequest, body: bytes) -> None:
        """Each request as the client sent it (a test harness keeps them)."""

    async def _handle(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        try:
            return await self._stamped(request)
        finally:
            if not self.keep_requests:
                with contextlib.suppress(ValueError):
                    self._requests.remove(request)  # this one only: others are being matched

    async def _stamped(self, request: kmock.Request) -> aiohttp.web.StreamResponse:
        # kmock stores request.data as the object, so stamping it here is what the state keeps.
        data = request.data
        if request.resource is not None and isinstance(data, dict):
            if request.action == kmock.action.CREATE:
                metadata = data.setdefault("metadata", {})
                if request.namespace is not None:
                    metadata.setdefault("namespace", request.namespace)
                metadata.setdefault("uid", str(uuid.uuid4()))
                metadata.setdefault("creationTimestamp", now())
                metadata["resourceVersion"] = self._next_resource_version()
            elif request.action == kmock.action.UPDATE:
                data.setdefault("metadata", {})["resourceVersion"] = self._next_resource_version()
        if (
            request.action == kmock.action.DELETE
            and request.name is not None
            and request.resource is not None
        ):
            # kmock's DELETED event carries the last state: bump it, or a watch's resourceVersion
            # would go back in time. (No await before kmock takes its lock: nothing slips between.)
            key = (request.resource, request.namespace, request.name)
            if key in self.objects and not self.objects[key].deleted:
                version = self._next_resource_version()
                self.objects[key].patch({"metadata": {"resourceVersion": version}})
        return await super()._handle(request)

    def _next_resource_version(self) -> str:
        self.last_resource_version += 1
        return str(self.last_resource_version)

    async def _serve_list(self, request: kmock.Request) -> kmock.Payload:
        listing = await super()._serve_list(request)
        assert isinstance(listing, dict)
        listing["metadata"]["resourceVersion"] = str(self.last_resource_version)
        return listing

    async def _serve_watch(self, request: kmock.Request) -> AsyncIterator[kmock.Payload]:
        assert request.resource is not None  # only watches of resources get here
        plural = request.resource.plural or ""
        seconds = request.params.get("timeoutSeconds")
        # As the API server does: no (or a zero) timeoutSeconds means no timeout.
        deadline = (
            asyncio.get_running_loop().time() + float(seconds)
            if seconds and float(seconds) > 0
            else None
        )

        # Send the headers now: kubernetes-asyncio waits for them before it reads any event.
        yield b""
        bus = self._buses[request.resource]
        async with self._lock:  # the lock kmock holds while it changes objects and emits events
            marker = await bus.mark()
            snapshot = [
                obj.raw
                for (resource, namespace, name), obj in self.objects.items()
                if resource == request.resource and not obj.deleted
                if self._watched(request, namespace, name)
            ]
        await self._count_watch(plural, +1)
        try:
            for raw in snapshot:
                yield {"type": "ADDED", "object": raw}
            events = bus.stream(since=marker)
            while True:
                try:
                    async with asyncio.timeout_at(deadline):
                        event = await anext(events)
                except TimeoutError:
                    return  # the server-side timeout: the stream ends cleanly
                metadata = event.get("object", {}).get("metadata", {})
                if self._watched(request, metadata.get("namespace"), metadata.get("name")):
                    yield event
        finally:
            await bus.unmark(marker)
            await self._count_watch(plural, -1)

    @staticmethod
    def _watched(request: kmock.Request, namespace: str | None, name: str | None) -> bool:
        return (request.namespace is None or namespace == request.namespace) and (
            request.name is None or name == request.name
        )

    async def _count_watch(self, plural: str, delta: int) -> None:
        async with self._watches_changed:
            self.open_watches[plural] += delta
            self._watches_changed.notify_all()

    async def wait_for_watches(self, plural: str, count: int) -> None:
        async with self._watches_changed:
            await self._watches_changed.wait_for(lambda: self.open_watches[plural] >= count)


class PodLog:
    """The log of one pod, as a test scripts it: read at once, or followed (`follow=true`) live.

    A followed log streams what was written so far, then each `write`, and ends at `finish`
    (as when the container exits). Reading without follow returns what was written so far.
    Each line keeps when it was written, and `serve` answers pods/log's query parameters as
    the API server does: `tailLines`, `sinceSeconds`, `timestamps` (each line prefixed with
    its RFC 3339 time and a space), `limitBytes` and `follow`.
    """

    def __init__(self, text: str = "", *, finished: bool = False, keep: int | None = None) -> None:
        # The last `keep` lines (all when None): a log that runs for hours stays bounded.
        self._lines: collections.deque[tuple[float, bytes]] = collections.deque(maxlen=keep)
        self._followers: set[asyncio.Queue[tuple[float, bytes] | None]] = set()
        self.finished = False
        if text:
            self.write(text)
        if finished:
            self.finish()

    @property
    def text(self) -> str:
        return b"".join(line for _, line in self._lines).decode()

    def write(self, text: str, *, at: float | None = None) -> None:
        """Append lines, written now (or at the Unix time ``at``)."""
        if self.finished:
            raise RuntimeError("the log is finished: nothing more can be written to it")
        when = time.time() if at is None else at
        for line in text.encode().splitlines(keepends=True):
            self._lines.append((when, line))
            for queue in self._followers:
                queue.put_nowait((when, line))

    def finish(self) -> None:
        self.finished = True
        for queue in self._followers:
            queue.put_nowait(None)

    def serve(self, params: Mapping[str, str]) -> bytes | AsyncIterator[bytes]:
        """The answer to GET pods/log with these query parameters."""
        stamped = truthy(params.get("timestamps"))
        lines = list(self._lines)
        if "sinceSeconds" in params:
            oldest = time.time() - int(params["sinceSeconds"])
            lines = [item for item in lines if item[0] >= oldest]
        if "tailLines" in params:
            tail = int(params["tailLines"])
            lines = lines[max(len(lines) - tail, 0) :]
        if truthy(params.get("follow")):
            return self._follow(lines, stamped)
        body = b"".join(_stamp(item, stamped) for item in lines)
        if "limitBytes" in params:
            body = body[: int(params["limitBytes"])]
        return body

    def follow(self) -> AsyncIterator[bytes]:
        return self._follow(list(self._lines), False)

    def _follow(self, backlog: list[tuple[float, bytes]], stamped: bool) -> AsyncIterator[bytes]:
        # Subscribed as the backlog is taken, with no await between: no write falls in the gap.
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
        self._followers.add(queue)
        return self._drain(queue, backlog, stamped)

    async def _drain(
        self,
        queue: asyncio.Queue[tuple[float, bytes] | None],
        backlog: list[tuple[float, bytes]],
        stamped: bool,
    ) -> AsyncIterator[bytes]:
        try:
            yield b""  # send the headers now, even before the first line
            for item in backlog:
                yield _stamp(item, stamped)
            if self.finished:
                return
            while (written := await queue.get()) is not None:
                yield _stamp(written, stamped)
        finally:
            self._followers.discard(queue)


def _stamp(item: tuple[float, bytes], stamped: bool) -> bytes:
    """A line as pods/log sends it, with ``timestamps=true`` prefixed by RFC 3339 time."""
    when, line = item
    if not stamped:
        return line
    seconds = int(when)
    nanos = round((when - seconds) * 1e9)
    if nanos >= 1_000_000_000:
        seconds, nanos = seconds + 1, nanos - 1_000_000_000
    stamp = datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z ".encode() + line
