"""The memory of one replica serving the catalog: an ``atrium serve`` worker's resident set.

The process that generated the catalog still holds (or its allocator does) what it built, so
its own resident set says nothing about a server. A server of its own is started instead, as
``atrium serve`` runs a worker (``bench.serving_server``), with the bundled plugins and the
settings a deployment has by default (the loaders' cache up to 50,000 entries and 64 MB, the
response cache up to 128 MB, no Redis), on the benchmark's database. It answers every scenario
``ROUNDS`` times over HTTP, each answer checked; its resident set is read from /proc when it is
ready and after serving, with its peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import orjson

from bench.harness import BenchFailure
from bench.scenarios import Scenario
from bench.serving_load import fetch, request_bytes
from bench.serving_procs import Server, running_servers

__all__ = ["replica_memory"]

ROUNDS: Final = 20
MB: Final = 1024 * 1024


def _status(server: Server, field: str) -> int | None:
    """``VmRSS`` or ``VmHWM`` of the server in bytes; None where there is no /proc."""
    try:
        for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / MB:,.0f} MB"


async def replica_memory(url: str, chosen: Sequence[Scenario]) -> None:
    settings = orjson.dumps({"database_url": url, "log_level": "WARNING"}).decode()
    async with running_servers() as servers:
        server = await servers.start("replica", "atrium-with-plugins", settings)
        ready = _status(server, "VmRSS")
        headers = {"content-type": "application/json", "accept": "application/json"}
        for _ in range(ROUNDS):
            for scenario in chosen:
                body = orjson.dumps(scenario.payload)
                reply = await fetch(
                    server.port, request_bytes("POST", "/graphql", server.port, headers, body)
                )
                answer = orjson.loads(reply.body) if reply.status == 200 else {}
                if answer.get("errors") or not answer.get("data"):
                    raise server.failure(
                        f"{scenario.name}: HTTP {reply.status}: {reply.body[:300]!r}"
                    )
                problems = scenario.check(answer["data"])
                if problems:
                    raise BenchFailure(f"replica, {scenario.name}: {'; '.join(problems)}")
        served, peak = _status(server, "VmRSS"), _status(server, "VmHWM")
    print(
        f"\none replica (an atrium serve worker with the bundled plugins, default caches, no "
        f"Redis): RSS {_mb(ready)} when ready, {_mb(served)} after serving the "
        f"{len(chosen)} scenarios {ROUNDS} times each (peak {_mb(peak)})"
    )
