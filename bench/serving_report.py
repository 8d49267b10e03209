"""What ``bench.serving`` measured per target, and printing it against the floor."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from bench.harness.servers import Server
from bench.harness.tables import print_rows, print_target
from bench.harness.timing import Throughput

__all__ = ["Figures", "Target", "print_figures"]


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    settings: dict[str, Any] | None  # Atrium's settings; None: the floor
    goal: float | None = None  # the share of the floor's req/s it must reach
    # Another target's name: then ``goal`` is a multiple of that target's req/s, not the floor's.
    versus: str | None = None


@dataclass(slots=True, kw_only=True)
class Figures(Throughput):
    target: Target
    server: Server
    request: bytes  # the GET, built for this server's port
    expected: bytes  # its answer, checked against the floor's
    sql: float | None = None
    rss: int | None = None


def print_figures(figures: Sequence[Figures]) -> None:
    """The table; ``figures[0]`` is the floor."""
    floor = figures[0]
    header = (
        *("target", "req/s", "p50 ms", "p99 ms", "vs floor", "rounds"),
        *("SQL/req", "server CPU", "CPU ms/req", "RSS MB"),
    )
    rows = [
        (
            f.target.name,
            *f.cells(floor),
            "-" if f.sql is None else f"{f.sql:.1f}",
            "-" if f.server_cpu is None else f"{f.server_cpu / f.seconds:.0%}",
            "-" if f.cpu_per_request is None else f"{f.cpu_per_request * 1000:.2f}",
            "-" if f.rss is None else f"{f.rss / 2**20:,.0f}",
        )
        for f in figures
    ]
    print()
    print_rows(header, rows)
    by_name = {f.target.name: f for f in figures}
    for f in figures:
        goal, other = f.target.goal, f.target.versus
        if goal is not None and other is None:
            share = f.versus(floor)
            what = f"{f.target.name} at >= {goal:.0%} of the floor's req/s"
            print_target(what, f"{share:.0%}", share >= goal)
        elif goal is not None and other is not None:
            times = f.versus(by_name[other])
            what = f"{f.target.name} at >= {goal:g}x the req/s of {other}"
            print_target(what, f"{times:.2f}x", times >= goal)
    busiest = max(f.client_cpu for f in figures)
    print(
        f"answer: {_summary(floor.expected)}, the same from every target; "
        f"{sum(len(f.latencies) for f in figures):,} requests timed, every one 200 and checked"
    )
    print(
        "vs floor: the median over rounds of req/s over the floor's in the same round "
        "(rounds: the lowest and the highest)"
    )
    print(
        "latency: closed loop, waiting behind the other connections included; server CPU: "
        "its share of a core in the timed windows, and per request; RSS: after the run"
    )
    note = " (it may have been the bottleneck)" if busiest > 0.85 else ""
    print(f"load process: at most {busiest:.0%} of a core in any burst{note}")
    for f in figures:
        if f.differing:
            print(f"note: {f.target.name}: {f.differing} answers differed from the first (valid)")


def _summary(body: bytes) -> str:
    entity = orjson.loads(body)["data"]["entity"]
    lists = ("dependencies", "dependents", "providesApis", "consumesApis")
    counts = ", ".join(f"{len(entity[key])} {key}" for key in lists)
    members = len(entity["owner"].get("members") or ())
    return f"{len(body):,} bytes ({counts}, an owner with {members} members)"
