"""What ``bench.replicas`` measured per target, and printing it against the floor."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Final

from bench.harness.haproxy import HAProxy
from bench.harness.load import LoadResult
from bench.harness.replica import Replica
from bench.harness.tables import print_rows
from bench.harness.timing import Throughput

__all__ = ["FLOOR", "Target", "print_targets"]

FLOOR: Final = "floor (Starlette behind HAProxy)"


@dataclass(slots=True, kw_only=True)
class Target(Throughput):
    name: str
    proxy: HAProxy
    replicas: list[Replica]  # none for the floor
    pids: list[int]  # the servers' processes
    kinds: dict[str, int] = field(default_factory=dict)
    # Over whole bursts (warm-ups included): requests, and what they cost.
    sent: int = 0
    cpu: float = 0.0  # the servers' CPU seconds
    proxy_cpu: float = 0.0  # HAProxy's
    sql: float = 0.0
    round_trips: int = 0  # Redis's
    commands: dict[str, int] = field(default_factory=dict)  # Redis calls by command

    def add(self, result: LoadResult) -> None:
        super(Target, self).add(result)
        self.sent += result.sent
        for kind, n in result.kinds.items():
            self.kinds[kind] = self.kinds.get(kind, 0) + n

    def per_request(self, total: float) -> float:
        return total / self.sent


def print_targets(targets: list[Target]) -> None:
    """The table, ``targets[0]`` the floor, then what it shows."""
    floor, *atriums = targets
    header = (
        *("target", "req/s", "p50 ms", "p99 ms", "vs floor", "rounds"),
        *("CPU ms/req", "vs floor", "HAProxy ms/req"),
        *("Redis trips/req", "Redis cmds/req", "SQL/req"),
    )
    rows = []
    for t in targets:
        cpu = t.per_request(t.cpu)
        rows.append(
            (
                t.name,
                *t.cells(floor, ms=1),
                f"{cpu * 1000:.2f}",
                f"{cpu / floor.per_request(floor.cpu):.1f}x",
                f"{t.per_request(t.proxy_cpu) * 1000:.3f}",
                "-" if not t.replicas else f"{t.per_request(t.round_trips):.2f}",
                "-" if not t.replicas else f"{t.per_request(sum(t.commands.values())):.2f}",
                "-" if not t.replicas else f"{t.per_request(t.sql):.2f}",
            )
        )
    print()
    print_rows(header, rows)
    one = atriums[0]
    served = ", ".join(f"{n:,} {kind}" for kind, n in sorted(one.kinds.items()))
    print(f"mix as served ({one.name}): {served}; every answer 200, GraphQL ones without errors")
    scaling = ", ".join(f"{t.name} {t.rps / one.rps:.2f}x" for t in atriums[1:])
    print(
        f"scaling on {os.cpu_count()} cores: {scaling} the req/s of {one.name} "
        "(the replicas, HAProxy and the load share the cores: req/s cannot grow with replicas)"
    )
    cpu = one.per_request(one.cpu)
    proxy = one.per_request(one.proxy_cpu)
    trips, commands = one.per_request(one.round_trips), one.per_request(sum(one.commands.values()))
    print(
        f"capacity (from {one.name}, which has a core to itself): a core of replicas serves "
        f"about {1 / cpu:,.0f} req/s of this mix; per 1,000 req/s: {cpu * 1000:.1f} cores of "
        f"replicas, {proxy * 1000:.2f} of HAProxy, {trips * 1000:,.0f} Redis round trips/s "
        f"({commands * 1000:,.0f} commands), {one.per_request(one.sql) * 1000:,.0f} SQL "
        "statements/s"
    )
    by_command = sorted(one.commands.items(), key=lambda item: -item[1])
    print(
        "Redis commands per request by command (a pipeline's share one round trip): "
        + ", ".join(f"{name} {one.per_request(n):.2f}" for name, n in by_command if n)
    )
    print(
        "per request: CPU, Redis and SQL over whole bursts (warm-ups "
        "included), HAProxy's health checks (/readyz) and the replicas' jobs included"
    )
