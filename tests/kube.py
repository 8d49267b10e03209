"""Emulated Kubernetes API servers for tests: kmock's KubernetesEmulator on a real local port.

Each `Cluster` is one `kmock.KubernetesEmulator` served over HTTP on 127.0.0.1, so the code under
test talks to it with kubernetes-asyncio exactly as it would to a real API server: built from a
kubeconfig, over TCP, with its own timeouts. Three layers, each for a reason:

* `BridgedEmulator` (plugins/pincompute/emulator.py, which the demo's cluster runs too) keeps
  kmock's state machine (objects, create, patch, delete, events) and bridges what
  kubernetes-asyncio and kmock disagree on, so tests exercise the client's real requests rather
  than a workaround in the code under test; here it also keeps what the code sent.
* The harness's own writes (`Cluster.put`, `modify`, `delete`) go to the emulator over HTTP like
  any client's, so watches see ADDED/MODIFIED/DELETED from the same code path; they skip the
  fault-injecting relay and are left out of `Cluster.requests`.
* `_Relay`, a TCP relay in front of the emulator, is what the cluster's URL points at: network
  faults (`go_dark`, `stop`) are made there, without touching the emulator or its state.

A cluster that only the test's own app talks to runs on the test's event loop: both stand still
together when the test blocks. One that a client in another process talks to (`atrium serve` in
a console test) would then stop answering it, between tests and while a test blocks:
`start_cluster(..., own_process=True)` serves it from a process of its own instead, driven
through a pipe (`tests/kube_process.py`), with the same methods. (On a thread of the test's
process, it waited for the interpreter lock behind the test's own work, and under load its
answers came later than the server's timeout.)

The emulator checks little of what a client sends: label and field selectors, `limit`,
`resourceVersion` preconditions and patch content types are all ignored. Tests assert what the
code sent (`Cluster.requests`), never that the emulator would have refused it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import aiohttp.test_utils
import aiohttp.web
import attrs
import kmock
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient
from multidict import CIMultiDict, CIMultiDictProxy

from plugins.pincompute.emulator import (
    DEFAULT_RESOURCES,
    PODS,
    BridgedEmulator,
    PodLog,
    Resource,
    register,
    truthy,
)

# Marks the harness's own requests, so that `Cluster.requests` holds only what the code under test sent.
_HARNESS_HEADER = "X-Atrium-Test-Harness"

# Harness reactions rank above kmock's fallbacks (-inf) and below a test's own reactions (0),
# so a test can still override any of them with `cluster.emulator[...] << ...`.
_HARNESS_PRIORITY = -1

# How long a harness wait may take before the test fails rather than hang.
WAIT = 5.0

# Metadata the API server owns: a replacing `put` keeps it as a real PUT would.
_SERVER_METADATA = ("uid", "creationTimestamp", "resourceVersion", "generation")


@dataclass(frozen=True)
class SentRequest:
    """One request as the client put it on the wire, before the harness normalised anything."""

    method: str
    path: str
    query: Mapping[
        str, str
    ]  # the first value of each parameter, as sent (`watch=True` stays "True")
    headers: CIMultiDictProxy[str]  # case-insensitive, as HTTP headers are
    body: bytes

    @property
    def content_type(self) -> str | None:
        return self.headers.get("Content-Type")

    @property
    def is_watch(self) -> bool:
        return self.method == "GET" and truthy(self.query.get("watch"))

    def json(self) -> Any:
        return json.loads(self.body)


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


def _merge_patch_between(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns `old` into `new`: absent keys become None."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(old.get(key), dict):
            nested = _merge_patch_between(old[key], value)
            if nested:
                patch[key] = nested
        elif key not in old or old[key] != value:
            patch[key] = value
    return patch


@attrs.define(kw_only=True)
class _BridgedEmulator(BridgedEmulator):
    """The emulator, keeping what the code under test sent (`Cluster.requests`): the harness's
    own requests carry a header of theirs and are left out."""

    sent: list[SentRequest] = attrs.field(factory=list, init=False)

    def record(self, request: aiohttp.web.BaseRequest, body: bytes) -> None:
        if _HARNESS_HEADER not in request.headers:
            self.sent.append(
                SentRequest(
                    method=request.method,
                    path=request.path,
                    query=dict(request.query),
                    headers=CIMultiDictProxy(CIMultiDict(request.headers)),
                    body=body,
                )
            )


@dataclass(frozen=True)
class _GoneShot:
    resource: Resource
    namespace: str | None
    as_http_status: bool

    def matches(self, request: kmock.Request, as_http_status: bool) -> bool:
        return (
            request.resource == self.resource.key
            and (self.namespace is None or request.namespace == self.namespace)
            and self.as_http_status == as_http_status
        )


class _Relay:
    """A TCP relay between the clients and one emulator: where the harness cuts the network.

    Faults are made at the TCP level so that clients see what they would see from a real
    cluster: `hold` accepts connections but forwards nothing (a black hole: requests hang until
    the client's read timeout); `stop_listening` + `drop_connections` closes the port and resets
    open connections (connection refused). Bytes held during an outage are never delivered late:
    the connections that lived through it are dropped when the network comes back.
    """

    def __init__(self, upstream_port: int) -> None:
        self._upstream_port = upstream_port
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()
        self.port = 0  # chosen by the first `listen`, then kept so that the URL stays valid

    @property
    def listening(self) -> bool:
        return self._server is not None

    async def listen(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop_listening(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def hold(self) -> None:
        self._flowing.clear()

    def release(self) -> None:
        self._flowing.set()

    async def drop_connections(self) -> None:
        connections = list(self._connections)
        for connection in connections:
            connection.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    async def close(self) -> None:
        await self.stop_listening()
        await self.drop_connections()

    async def _relay(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            await self._flowing.wait()
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self._upstream_port
            )
            pumps = [
                asyncio.create_task(self._pump(client_reader, upstream_writer)),
                asyncio.create_task(self._pump(upstream_reader, client_writer)),
            ]
            try:
                # Either side closing ends the exchange (HTTP/1.1 clients do not half-close).
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except (asyncio.CancelledError, OSError):
            # Cancelled: the relay itself dropped the connection (stop, resume, close). Swallowed
            # because asyncio's client_connected_cb reports a task that ends cancelled as an error.
            pass
        finally:
            # A reset, not a close: a dropped connection delivers nothing more.
            client_writer.transport.abort()
            if upstream_writer is not None:
                upstream_writer.transport.abort()
            self._connections.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError):
            while chunk := await reader.read(65536):
                await self._flowing.wait()
                writer.write(chunk)
                await writer.drain()
            # End of stream: pass the close on once what was written is flushed (`drain` only
            # waits down to the high-water mark; the `abort` in `_relay` would drop the rest).
            writer.close()
            await writer.wait_closed()


class KubeHarnessError(RuntimeError):
    """A harness write that the emulator refused: the test set up something impossible."""


class Cluster:
    """One emulated cluster: an emulator, its URL (through the relay) and the test's levers."""

    def __init__(
        self,
        name: str,
        emulator: _BridgedEmulator,
        relay: _Relay,
        session: aiohttp.ClientSession,
        resources: Iterable[Resource],
    ) -> None:
        self.name = name
        self.emulator = emulator  # kmock's DSL for anything the harness does not cover
        self._relay = relay
        self._session = session  # bound to the emulator's own port
        self._resources = {resource.plural: resource for resource in resources}
        self._gone_shots: list[_GoneShot] = []
        self._logs: dict[tuple[str, str], PodLog] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._relay.port}"

    @property
    def token(self) -> str:
        return f"token-{self.name}"

    @property
    def requests(self) -> list[SentRequest]:
        """Every request the clients sent, in order, as sent (the harness's own are left out)."""
        return self.emulator.sent

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion the emulator stamped (one per write, deletes included)."""
        return str(self.emulator.last_resource_version)

    @property
    def errors(self) -> list[Exception]:
        """What the emulator raised while serving (404s included): a first look when a test fails."""
        return self.emulator.errors

    def kubeconfig_context(self) -> dict[str, Any]:
        """This cluster's entries for a kubeconfig: a cluster, a user with a token, a context."""
        return {
            "cluster": {"name": self.name, "cluster": {"server": self.url}},
            "user": {"name": self.name, "user": {"token": self.token}},
            "context": {"name": self.name, "context": {"cluster": self.name, "user": self.name}},
        }

    def resource(self, plural: str) -> Resource:
        try:
            return self._resources[plural]
        except KeyError:
            raise KeyError(f"{plural!r} is not served by cluster {self.name!r}") from None

    # --- State: read directly, written over HTTP so that watches see the changes. -------------

    def objects(self, plural: str) -> list[dict[str, Any]]:
        """The current (not deleted) objects of a resource in every namespace, as copies."""
        key = self.resource(plural).key
        return [
            copy.deepcopy(obj.raw)
            for (resource, _, _), obj in self.emulator.objects.items()
            if resource == key and not obj.deleted
        ]

    def get(self, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One current object as a copy, or None if it does not exist (or was deleted)."""
        key = (self.resource(plural).key, namespace, name)
        if key not in self.emulator.objects or self.emulator.objects[key].deleted:
            return None
        return copy.deepcopy(self.emulator.objects[key].raw)

    async def put(
        self, plural: str, namespace: str | None, obj: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Create the object (an ADDED event), or replace it if it exists (a MODIFIED event).

        apiVersion, kind and metadata.namespace are filled in when missing. A replacement keeps
        the server-owned metadata (uid, creationTimestamp) and removes keys the new object lacks.
        It is sent as a merge patch, so a key cannot turn from a mapping into a scalar or back
        (kmock refuses to merge those): delete and put the object instead.
        """
        resource = self.resource(plural)
        body = copy.deepcopy(dict(obj))
        body.setdefault("apiVersion", resource.api_version)
        body.setdefault("kind", resource.kind)
        metadata = body.setdefault("metadata", {})
        if resource.namespaced:
            metadata.setdefault("namespace", namespace)
        current = self.get(plural, namespace, metadata["name"])
        if current is None:
            return await self._send("POST", resource.path(namespace), body)
        current_metadata = current.get("metadata", {})
        kept = {key: current_metadata[key] for key in _SERVER_METADATA if key in current_metadata}
        body["metadata"] = {**kept, **metadata}
        patch = _merge_patch_between(current, body)
        return await self._send("PATCH", resource.path(namespace, metadata["name"]), patch)

    async def modify(
        self, plural: str, namespace: str | None, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Merge-patch an existing object (a MODIFIED event); None in the patch removes a key."""
        return await self._send("PATCH", self.resource(plural).path(namespace, name), dict(patch))

    async def delete(self, plural: str, namespace: str | None, name: str) -> dict[str, Any]:
        """Delete an object (a DELETED event; with finalizers, a MODIFIED deletionTimestamp)."""
        return await self._send("DELETE", self.resource(plural).path(namespace, name))

    async def _send(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else {}
        async with self._session.request(method, path, json=body, headers=headers) as response:
            text = await response.text()
            if not 200 <= response.status < 300:
                raise KubeHarnessError(f"{method} {path} on {self.name}: {response.status} {text}")
            result: dict[str, Any] = json.loads(text)
            return result

    # --- Scripted behaviour. -------------------------------------------------------------------

    async def wait_for_watches(self, plural: str, count: int = 1) -> None:
        """Wait until `count` watches of `plural` are open, so that a change is seen live.

        Gives up after `WAIT` seconds rather than hang the test run.
        """
        async with asyncio.timeout(WAIT):
            await self.emulator.wait_for_watches(plural, count)

    def fail_next_watch_with_gone(
        self, plural: str, *, namespace: str | None = None, as_http_status: bool = False
    ) -> None:
        """Answer the next watch of `plural` (in `namespace`, or any) with 410 Gone, once.

        By default as the API server does for a too-old resourceVersion: HTTP 200, then one ERROR
        event carrying a 410 Status, then the end of the stream. With `as_http_status`, an HTTP 410
        response with the Status as its body. Each call arms one more shot.
        """
        self._gone_shots.append(_GoneShot(self.resource(plural), namespace, as_http_status))

    def _gone_due(self, as_http_status: bool) -> Callable[[kmock.Request], bool]:
        # A kmock criterion: it must not change state (kmock re-runs it over past requests).
        def due(request: kmock.Request) -> bool:
            return any(shot.matches(request, as_http_status) for shot in self._gone_shots)

        return due

    def _take_gone_shot(self, request: kmock.Request, as_http_status: bool) -> dict[str, Any]:
        shot = next(shot for shot in self._gone_shots if shot.matches(request, as_http_status))
        self._gone_shots.remove(shot)
        version = request.params.get("resourceVersion", "")
        return _status(
            410, "Expired", f"too old resource version: {version} (scripted by the test)"
        )

    def pod_log(
        self, namespace: str, pod: str, text: str = "", *, finished: bool = False
    ) -> PodLog:
        """Script the log of a pod (pods/log), replacing any earlier one; write to it later."""
        log = PodLog(text, finished=finished)
        self._logs[namespace, pod] = log
        return log

    def _serve_log(self, request: kmock.Request) -> kmock.Payload:
        log = self._logs.get((request.namespace or "", request.name or ""))
        if log is None:
            raise kmock.KubernetesObjectNotFoundError(
                message=f"no log is scripted for pod {request.namespace}/{request.name}"
            )
        return log.serve(request.params)

    # --- Network faults (the emulator and its state are untouched). ----------------------------

    async def go_dark(self) -> None:
        """Stop answering but keep the port open: requests hang, open streams freeze.

        A client sees its read timeout (with `_request_timeout=(connect, read)`), as from a
        cluster behind a black hole. `resume` brings it back.
        """
        self._relay.hold()

    async def stop(self) -> None:
        """Close the port and reset open connections: clients get connection refused at once.

        The emulator keeps running with its state; `resume` opens the same port again.
        """
        await self._relay.stop_listening()
        await self._relay.drop_connections()

    async def resume(self) -> None:
        """Answer again after `go_dark` or `stop`, on the same URL.

        Connections that lived through the outage are dropped (what they carried is not delivered
        late); clients reconnect as they would after a real outage.
        """
        await self._relay.drop_connections()
        self._relay.release()
        if not self._relay.listening:
            await self._relay.listen()


def _script_reactions(
    emulator: _BridgedEmulator, cluster: Cluster, resources: Iterable[Resource]
) -> None:
    """The harness's kmock reactions: what kmock answers differently from a real API server."""
    harness = emulator**_HARNESS_PRIORITY
    # kubernetes-asyncio reads a created object only from a 201; kmock answers 200.
    harness[kmock.action.CREATE] << 201 << emulator._serve_create
    # Scripted 410s. Two reactions, not one: a kmock reaction that answers with a Response from a
    # callable keeps that Response's status for all its later answers.
    harness[kmock.action.WATCH, cluster._gone_due(as_http_status=False)] << (
        lambda request: ({"type": "ERROR", "object": cluster._take_gone_shot(request, False)},)
    )
    (
        harness[kmock.action.WATCH, cluster._gone_due(as_http_status=True)]
        << 410
        << (lambda request: cluster._take_gone_shot(request, True))
    )
    # pods/log: kmock would answer a subresource with the pod itself.
    if PODS.plural in {resource.plural for resource in resources}:
        log = harness[kmock.method.GET, PODS.key, kmock.subresource("log")]
        log << {"Content-Type": "text/plain"} << cluster._serve_log


@contextlib.asynccontextmanager
async def start_cluster(
    name: str, *, resources: Iterable[Resource] = DEFAULT_RESOURCES, own_process: bool = False
) -> AsyncIterator[Cluster]:
    """Run one emulated cluster on 127.0.0.1 (free ports) for the duration of the block: on the
    test's loop, or in a process of its own when another process talks to it."""
    if own_process:
        from tests.kube_process import remote_cluster

        async with remote_cluster(name, tuple(resources)) as remote:
            yield remote
        return
    async with served(name, tuple(resources)) as cluster:
        yield cluster


@contextlib.asynccontextmanager
async def served(name: str, resources: tuple[Resource, ...]) -> AsyncIterator[Cluster]:
    """One cluster on the running loop (the test's, or a process's of its own)."""
    async with contextlib.AsyncExitStack() as stack:
        emulator = _BridgedEmulator()
        register(emulator, resources)
        await stack.enter_async_context(emulator)  # kmock collects server-side errors while entered

        # Not kmock.Server: it also patches aiohttp's resolver for the whole process, and its
        # patches must be undone in strict LIFO order across clusters.
        server = aiohttp.test_utils.RawTestServer(emulator, host="127.0.0.1", port=0)
        await server.start_server()
        stack.push_async_callback(server.close)
        # Harness writes go to the emulator's own port, not through the relay: they work while dark.
        session = aiohttp.ClientSession(
            base_url=str(server.make_url("/")), headers={_HARNESS_HEADER: "1"}
        )
        stack.push_async_callback(session.close)

        relay = _Relay(upstream_port=server.port or 0)
        cluster = Cluster(name, emulator, relay, session, resources)
        _script_reactions(emulator, cluster, resources)  # before clients can know the URL
        await relay.listen()
        # Closed first: dropping the clients' connections cancels their handlers (open watches),
        # so the server's shutdown does not wait for them.
        stack.push_async_callback(relay.close)

        yield cluster
        # kmock answers any exception with a 500 and only collects it: a bug in the emulator or
        # the harness would hide behind a test that expects an error. Kubernetes errors (404, 409)
        # are answers, not bugs.
        bugs = [error for error in emulator.errors if not isinstance(error, kmock.KubernetesError)]
        if bugs:
            raise KubeHarnessError(f"cluster {name!r} failed while serving: {bugs!r}")


@contextlib.asynccontextmanager
async def start_clusters(
    *names: str, resources: Iterable[Resource] = DEFAULT_RESOURCES, own_process: bool = False
) -> AsyncIterator[tuple[Cluster, ...]]:
    """Several clusters at once, stopped together (in reverse order) at the end of the block."""
    async with contextlib.AsyncExitStack() as stack:
        yield tuple(
            [
                await stack.enter_async_context(
                    start_cluster(name, resources=resources, own_process=own_process)
                )
                for name in names
            ]
        )


def kubeconfig(*clusters: Cluster, current: str | None = None) -> dict[str, Any]:
    """A kubeconfig with every cluster as a context (the current one: `current`, else the first)."""
    entries = [cluster.kubeconfig_context() for cluster in clusters]
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [entry["cluster"] for entry in entries],
        "users": [entry["user"] for entry in entries],
        "contexts": [entry["context"] for entry in entries],
        "current-context": current or (clusters[0].name if clusters else ""),
        "preferences": {},
    }


@contextlib.asynccontextmanager
async def api_clients(config: Mapping[str, Any]) -> AsyncIterator[dict[str, ApiClient]]:
    """One kubernetes-asyncio ApiClient per context of a kubeconfig, all closed at the end.

    Built inside the running loop (an ApiClient opens an aiohttp session when constructed).
    """
    async with contextlib.AsyncExitStack() as stack:
        clients: dict[str, ApiClient] = {}
        for context in config["contexts"]:
            client = await kube_config.new_client_from_config_dict(
                dict(config), context=context["name"]
            )
            clients[context["name"]] = await stack.enter_async_context(client)
        yield clients
