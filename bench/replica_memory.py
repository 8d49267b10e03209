"""The memory of one replica serving the catalog: an ``atrium serve`` process's resident set.

The process that generated the catalog still holds (or its allocator does) what it built, so
its own resident set says nothing about a server. A replica of its own is started instead,
``atrium serve`` as production runs it (``bench.harness.replica``: the bundled plugins, the
settings a deployment has by default: the loaders' cache up to 50,000 entries and 64 MB, the
response cache up to 128 MB, no Redis) on the benchmark's database. It answers every scenario
``ROUNDS`` times (a smoke run's: once), each answer checked; its resident set is read from
/proc when it is ready and after serving, with its peak.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import httpx
import orjson

from bench.harness import BenchFailure
from bench.harness.inprocess import Scenario
from bench.harness.replica import running_replicas

__all__ = ["ROUNDS", "replica_memory"]

ROUNDS: Final = 20
MB: Final = 1024 * 1024


def _status(pid: int, field: str) -> int | None:
    """``VmRSS`` or ``VmHWM`` of a process in bytes; None where there is no /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _mb(value: int | None) -> str:
    return "n/a" if value is None else f"{value / MB:,.0f} MB"


async def replica_memory(url: str, chosen: Sequence[Scenario], *, rounds: int = ROUNDS) -> None:
    settings = {
        "ATRIUM_DATABASE_URL": url,
        "ATRIUM_LOG_LEVEL": "WARNING",
        # No balancer to leave: SIGTERM stops it at once, its memory read before.
        "ATRIUM_SHUTDOWN_GRACE": "0",
    }
    async with running_replicas(["catalog"], settings) as [replica]:
        ready = _status(replica.pid, "VmRSS")
        async with httpx.AsyncClient(base_url=replica.base, timeout=60) as client:
            for _ in range(rounds):
                for scenario in chosen:
                    reply = await client.post(
                        "/graphql",
                        content=orjson.dumps(scenario.payload),
                        headers={"content-type": "application/json"},
                    )
                    answer = orjson.loads(reply.content) if reply.status_code == 200 else {}
                    if answer.get("errors") or not answer.get("data"):
                        raise replica.failure(
                            f"{scenario.name}: HTTP {reply.status_code}: {reply.text[:300]}"
                        )
                    problems = scenario.check(answer["data"])
                    if problems:
                        raise BenchFailure(f"replica, {scenario.name}: {'; '.join(problems)}")
        served, peak = _status(replica.pid, "VmRSS"), _status(replica.pid, "VmHWM")
    print(
        f"\none replica (atrium serve, one worker, the bundled plugins, default caches, no "
        f"Redis): RSS {_mb(ready)} when ready, {_mb(served)} after serving the "
        f"{len(chosen)} scenarios {rounds} times each (peak {_mb(peak)})"
    )
