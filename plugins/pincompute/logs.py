"""A workload's log: the logs of all its pods, merged by time.

Kubernetes keeps a log per pod. Each is read with ``timestamps=true``, so every line carries the
time the kubelet took it; the lines of all pods are merged on that time. Everything is bounded:
the lines asked for, the bytes answered, the length of a line, the pods read at once, and what a
slow subscriber may leave waiting.

A pod's log is followed once however many subscribers follow it (``PodFollow``, shared through
``graph.plugin.Fanout``): the first subscriber's follow connects, every one takes its lines,
and one who joins later is first given the follow's last lines (``FOLLOW_KEPT``).

Following a workload starts following every pod, each from a backlog of its last lines, then
reads the tail of each and sends it merged, then the followed lines, skipping those the tail
held or left out as too old. A follow's connection may be made after lines were written
(its task runs when it runs): its backlog still holds them, so nothing falls between the tail
and the live lines, and nothing is sent twice. Pods that start later (a rollout, a scale-up)
are followed as they appear, from their first line.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import heapq
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from plugins.pincompute.compute import Compute, ComputeError
from plugins.pincompute.store import Key

__all__ = [
    "MAX_LINES",
    "LogLine",
    "PodFollow",
    "WorkloadLog",
    "follow_workload",
    "read_workload",
]

MAX_LINES: Final = 5_000  # lines one answer may hold
MAX_BYTES: Final = 1_000_000  # bytes of text one answer may hold
MAX_LINE: Final = 16_384  # characters of one line; longer ones are cut
FILTERED_READ: Final = 10_000  # lines read per pod when a filter may leave few of them
CONCURRENT_PODS: Final = 8
FOLLOW_BUFFER: Final = 10_000  # lines a slow subscriber may leave waiting before some drop
# Lines of backlog a follow of a pod already running starts from: what it may have written
# between the tail's read and the follow's connection.
FOLLOW_OVERLAP: Final = 100
POD_RESCAN: Final = 5.0  # seconds between looks for new pods while following
# Lines of a shared follow given to a subscriber who joins it later (they may hold lines of a
# pod it finds at its next look for pods, written since another subscriber found it).
FOLLOW_KEPT: Final = 1_000

_STAMP = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) ")


@dataclass(frozen=True, slots=True, order=True)
class LogLine:
    at: float  # Unix seconds, to the nanosecond the kubelet wrote (as far as a float holds)
    pod: str
    text: str

    @property
    def time(self) -> datetime:
        return datetime.fromtimestamp(self.at, UTC)


@dataclass(slots=True)
class WorkloadLog:
    lines: list[LogLine]
    truncated: bool  # lines or bytes over the bounds were left out (the oldest)
    errors: dict[str, str]  # pod → why its log could not be read


def parse(pod: str, raw: str, needle: str | None, after: float = 0.0) -> list[LogLine]:
    """Lines of ``timestamps=true`` output; a line without a time takes its predecessor's."""
    found = []
    at = 0.0
    for line in raw.splitlines():
        match = _STAMP.match(line)
        if match:
            at = _seconds(match)
            line = line[match.end() :]
        if at <= after or (needle is not None and needle not in line.casefold()):
            continue
        found.append(LogLine(at, pod, line[:MAX_LINE]))
    return found


def _seconds(match: re.Match[str]) -> float:
    whole, fraction, zone = match.groups()
    stamp = datetime.fromisoformat(whole + ("+00:00" if zone == "Z" else zone))
    return stamp.timestamp() + (int(fraction.ljust(9, "0")) / 1e9 if fraction else 0.0)


def needle_of(text: str | None) -> str | None:
    return text.casefold() if text else None


async def read_workload(
    compute: Compute,
    key: Key,
    pods: list[str],
    *,
    tail: int,
    since_seconds: int | None,
    needle: str | None,
) -> WorkloadLog:
    """The last ``tail`` lines of the pods' logs (since some seconds, containing a text),
    merged by time, within the bounds."""
    gate = asyncio.Semaphore(CONCURRENT_PODS)
    errors: dict[str, str] = {}
    # With a filter, each pod's tail may hold few matches: read more, filter, then take.
    wanted = FILTERED_READ if needle is not None else tail

    async def one(pod: str) -> list[LogLine]:
        async with gate:
            try:
                raw = await compute.pod_log(
                    key.cluster,
                    key.namespace,
                    pod,
                    container=None,
                    tail_lines=wanted,
                    since_seconds=since_seconds,
                    previous=False,
                    timestamps=True,
                )
            except ComputeError as exc:
                errors[pod] = str(exc)
                return []
        return parse(pod, raw, needle)

    per_pod = await asyncio.gather(*(one(p) for p in pods))
    merged = list(heapq.merge(*per_pod))
    kept, truncated = bounded(merged, tail)
    return WorkloadLog(kept, truncated, errors)


def bounded(lines: list[LogLine], tail: int) -> tuple[list[LogLine], bool]:
    """The newest ``tail`` lines that fit in the bytes allowed, oldest first."""
    kept: list[LogLine] = []
    size = 0
    for line in reversed(lines[-tail:] if tail else []):
        size += len(line.text.encode()) + 1
        if size > MAX_BYTES:
            break
        kept.append(line)
    kept.reverse()
    return kept, len(kept) < len(lines)


PodKey = tuple[str, str, str]  # cluster, namespace, pod


class PodFollow:
    """One follow of a pod's log, its lines published to every subscriber (unfiltered: each
    subscriber keeps what it wants), the last ``FOLLOW_KEPT`` of them kept for those who join."""

    def __init__(self, compute: Compute, pod: PodKey, tail_lines: int) -> None:
        self._compute = compute
        self._pod = pod
        self._tail_lines = tail_lines
        self._kept: deque[LogLine] = deque(maxlen=FOLLOW_KEPT)

    def backlog(self) -> Iterable[LogLine]:
        return tuple(self._kept)

    async def run(self, publish: Callable[[LogLine], None]) -> None:
        cluster, namespace, pod = self._pod
        with contextlib.suppress(ComputeError):
            stream = self._compute.follow_log(
                cluster,
                namespace,
                pod,
                container=None,
                tail_lines=self._tail_lines,
                timestamps=True,
            )
            async for raw in stream:
                for line in parse(pod, raw, None):
                    self._kept.append(line)
                    publish(line)


async def follow_workload(
    compute: Compute,
    key: Key,
    list_pods: Callable[[], Awaitable[list[str]]],
    *,
    tail: int,
    needle: str | None,
) -> AsyncIterator[LogLine]:
    """The merged tail, then each line of every pod as it is written, until the caller stops.
    A line with pod ``""`` tells of lines dropped for a subscriber reading too slowly."""
    queue: asyncio.Queue[LogLine] = asyncio.Queue(FOLLOW_BUFFER)
    dropped = 0
    followers: set[str] = set()
    joined = contextlib.AsyncExitStack()

    def put(line: LogLine) -> bool:
        nonlocal dropped
        if needle is not None and needle not in line.text.casefold():
            return True
        if queue.full():
            dropped += 1
        else:
            queue.put_nowait(line)
        return True

    async def start(pods: list[str], tail_lines: int) -> None:
        for pod in pods:
            if pod not in followers:
                followers.add(pod)
                at: PodKey = (key.cluster, key.namespace, pod)
                made = functools.partial(PodFollow, compute, at, tail_lines)
                await joined.enter_async_context(compute.follows.subscribe(at, put, start=made))

    try:
        pods = await list_pods()
        await start(pods, FOLLOW_OVERLAP)
        first = await read_workload(
            compute, key, pods, tail=tail, since_seconds=None, needle=needle
        )
        if first.errors and len(first.errors) == len(pods):
            raise ComputeError(next(iter(first.errors.values())))
        # The tail is the newest lines of all pods: a pod's lines up to its newest there were
        # sent or left out, and a pod with none there had none newer than the tail's oldest.
        sent: dict[str, float] = {}
        for line in first.lines:
            sent[line.pod] = line.at
            yield line
        floor = first.lines[0].at if first.lines else float("-inf")
        rescan = asyncio.get_running_loop().time() + POD_RESCAN
        while True:
            wait = rescan - asyncio.get_running_loop().time()
            # Not asyncio.wait_for: on Python 3.11 it swallows a cancellation that comes as a
            # line does, and the subscription would outlive its connection.
            try:
                async with asyncio.timeout(max(wait, 0)):
                    line = await queue.get()
            except TimeoutError:
                # A pod found later started after the subscriber came: every line it wrote
                # before this look is new too (as many as may wait, should it be older).
                with contextlib.suppress(ComputeError):
                    await start(await list_pods(), FOLLOW_BUFFER)
                rescan = asyncio.get_running_loop().time() + POD_RESCAN
                continue
            if dropped:
                yield LogLine(
                    line.at, "", f"{dropped} lines dropped: read more slowly than written"
                )
                dropped = 0
            if line.at <= sent.get(line.pod, floor):
                continue
            yield line
    finally:
        await joined.aclose()


def pod_names(items: list[dict[str, Any]]) -> list[str]:
    return sorted(str((i.get("metadata") or {}).get("name") or "") for i in items if i)
