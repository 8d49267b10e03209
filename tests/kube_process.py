"""An emulated cluster (tests/kube.py) served from a process of its own, for clients in other
processes: an `atrium serve` a console test starts must find its cluster answering whatever the
test's own event loop and interpreter are doing.

The process is forked from a server process that has this module loaded (quick to start, and
with none of the test process's threads or loops); it runs `tests.kube.served` on a loop of its
own and takes the harness's calls through a pipe, one at a time, each answered with its result
or the exception it raised. `RemoteCluster` has `Cluster`'s methods; kmock's DSL
(`Cluster.emulator`) stays in the other process.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import threading
from collections.abc import AsyncIterator, Callable
from multiprocessing.connection import Connection
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from plugins.pincompute.emulator import Resource
from tests.kube import Cluster, KubeHarnessError, SentRequest, served
from tests.processes import PROCESSES

__all__ = ["RemoteCluster", "RemoteLog", "remote_cluster"]

_STARTED_WITHIN = 30.0  # seconds: a bound on a stuck start, not a measure


@contextlib.asynccontextmanager
async def remote_cluster(name: str, resources: tuple[Resource, ...]) -> AsyncIterator[Cluster]:
    """One cluster in a process of its own for the duration of the block; what went wrong in
    it (a harness bug) is raised on the way out."""
    ours, theirs = PROCESSES.Pipe()
    process = PROCESSES.Process(target=_serve, args=(theirs, name, resources), daemon=True)
    await asyncio.to_thread(process.start)
    theirs.close()
    try:
        if not await asyncio.to_thread(ours.poll, _STARTED_WITHIN):
            raise KubeHarnessError(f"cluster {name!r} did not start")
        url: str = _answer(ours.recv())
        cluster = RemoteCluster(name, resources, url, ours)
        yield cluster
        await cluster._ask("close")
    finally:
        ours.close()
        await asyncio.to_thread(process.join, _STARTED_WITHIN)
        if process.is_alive():
            process.kill()


def _answer(reply: tuple[str, Any]) -> Any:
    status, value = reply
    if status == "error":
        raise value
    return value


class RemoteLog:
    """A pod's scripted log in the cluster's process (`Cluster.pod_log`)."""

    def __init__(self, cluster: RemoteCluster, handle: int) -> None:
        self._cluster = cluster
        self._handle = handle

    @property
    def text(self) -> str:
        text: str = self._cluster._call("log", self._handle, "text")
        return text

    def write(self, text: str, *, at: float | None = None) -> None:
        self._cluster._call("log", self._handle, "write", text, at)

    def finish(self) -> None:
        self._cluster._call("log", self._handle, "finish")


class RemoteCluster(Cluster):
    """A `Cluster` whose emulator, relay and harness session live in another process."""

    def __init__(
        self, name: str, resources: tuple[Resource, ...], url: str, pipe: Connection
    ) -> None:
        # Not Cluster.__init__: none of its parts live here (kmock's DSL, ``emulator``, neither).
        self.name = name
        self._resources = {resource.plural: resource for resource in resources}
        self._url = url
        self._pipe = pipe
        self._turn = threading.Lock()  # one call at a time on the pipe, from any thread

    @property
    def url(self) -> str:
        return self._url

    def _call(self, name: str, *args: Any) -> Any:
        with self._turn:
            self._pipe.send((name, args))
            return _answer(self._pipe.recv())

    async def _ask(self, name: str, *args: Any) -> Any:
        return await asyncio.to_thread(self._call, name, *args)

    @property
    def requests(self) -> list[SentRequest]:
        return [
            SentRequest(method, path, query, CIMultiDictProxy(CIMultiDict(headers)), body)
            for method, path, query, headers, body in self._call("requests")
        ]

    @property
    def resource_version(self) -> str:
        version: str = self._call("resource_version")
        return version

    @property
    def errors(self) -> list[Exception]:
        return [KubeHarnessError(text) for text in self._call("errors")]

    def objects(self, plural: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self._call("objects", plural)
        return found

    def get(self, plural: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self._call("get", plural, namespace, name)
        return found

    async def put(self, plural: str, namespace: str | None, obj: Any) -> dict[str, Any]:
        stored: dict[str, Any] = await self._ask("put", plural, namespace, dict(obj))
        return stored

    async def modify(
        self, plural: str, namespace: str | None, name: str, patch: Any
    ) -> dict[str, Any]:
        stored: dict[str, Any] = await self._ask("modify", plural, namespace, name, dict(patch))
        return stored

    async def delete(self, plural: str, namespace: str | None, name: str) -> dict[str, Any]:
        deleted: dict[str, Any] = await self._ask("delete", plural, namespace, name)
        return deleted

    async def wait_for_watches(self, plural: str, count: int = 1) -> None:
        await self._ask("wait_for_watches", plural, count)

    def fail_next_watch_with_gone(
        self, plural: str, *, namespace: str | None = None, as_http_status: bool = False
    ) -> None:
        self._call("fail_next_watch_with_gone", plural, namespace, as_http_status)

    def pod_log(  # type: ignore[override]  # a handle on the log, which lives over there
        self, namespace: str, pod: str, text: str = "", *, finished: bool = False
    ) -> RemoteLog:
        return RemoteLog(self, self._call("pod_log", namespace, pod, text, finished))

    async def go_dark(self) -> None:
        await self._ask("go_dark")

    async def stop(self) -> None:
        await self._ask("stop")

    async def resume(self) -> None:
        await self._ask("resume")


# --- In the cluster's own process. ------------------------------------------------------------


def _serve(pipe: Connection, name: str, resources: tuple[Resource, ...]) -> None:
    asyncio.run(_main(pipe, name, resources))


async def _main(pipe: Connection, name: str, resources: tuple[Resource, ...]) -> None:
    closed = asyncio.Event()
    try:
        async with served(name, resources) as cluster:
            calls = _Calls(cluster)
            loop = asyncio.get_running_loop()
            tasks: set[asyncio.Task[None]] = set()

            def arrived() -> None:
                try:
                    call, args = pipe.recv()
                except EOFError:  # the test's process is gone
                    closed.set()
                    return
                if call == "close":
                    closed.set()
                    return
                task = loop.create_task(_reply(pipe, calls.do, call, args))
                tasks.add(task)
                task.add_done_callback(tasks.discard)

            loop.add_reader(pipe.fileno(), arrived)
            pipe.send(("ok", cluster.url))
            await closed.wait()
            loop.remove_reader(pipe.fileno())
    except BaseException as exc:  # what went wrong on the way out, for the test to see
        _send(pipe, ("error", exc))
        return
    _send(pipe, ("ok", None))


async def _reply(
    pipe: Connection, do: Callable[..., Any], call: str, args: tuple[Any, ...]
) -> None:
    try:
        result = do(call, *args)
        if asyncio.iscoroutine(result):
            result = await result
    except Exception as exc:
        _send(pipe, ("error", exc))
        return
    _send(pipe, ("ok", result))


def _send(pipe: Connection, reply: tuple[str, Any]) -> None:
    try:
        pipe.send(reply)
    except (pickle.PicklingError, TypeError, AttributeError):  # an exception that won't travel
        pipe.send(("error", KubeHarnessError(repr(reply[1]))))
    except OSError:  # the test's process is gone
        pass


class _Calls:
    """The harness's calls, as the pipe brings them."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.logs: list[Any] = []

    def do(self, call: str, *args: Any) -> Any:
        cluster = self.cluster
        if call == "requests":
            return [
                (r.method, r.path, dict(r.query), list(r.headers.items()), r.body)
                for r in cluster.requests
            ]
        if call == "resource_version":
            return cluster.resource_version
        if call == "errors":
            return [repr(error) for error in cluster.errors]
        if call == "fail_next_watch_with_gone":
            plural, namespace, as_http_status = args
            return cluster.fail_next_watch_with_gone(
                plural, namespace=namespace, as_http_status=as_http_status
            )
        if call == "pod_log":
            namespace, pod, text, finished = args
            self.logs.append(cluster.pod_log(namespace, pod, text, finished=finished))
            return len(self.logs) - 1
        if call == "log":
            handle, what, *rest = args
            log = self.logs[handle]
            if what == "text":
                return log.text
            if what == "write":
                text, at = rest
                return log.write(text, at=at)
            return log.finish()
        if call in ("objects", "get", "put", "modify", "delete", "wait_for_watches"):
            return getattr(cluster, call)(*args)
        if call in ("go_dark", "stop", "resume"):
            return getattr(cluster, call)()
        raise KubeHarnessError(f"no such harness call: {call}")
