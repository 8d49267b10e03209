"""What ``bench.serving`` measured per target, and printing it against the floor."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench.harness import _percentile
from bench.report import _print_rows
from bench.serving_load import LoadResult
from bench.serving_procs import Server

__all__ = ["Figures", "Target", "print_figures"]


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    settings: dict[str, Any] | None  # Atrium's settings; None: the floor
    goal: float | None = None  # the share of the floor's req/s it must reach
    # Another target's name: then ``goal`` is a multiple of that target's req/s, not the floor's.
    versus: str | None = None


@dataclass(slots=True)
class Figures:
    target: Target
    server: Server
    request: bytes  # the GET, built for this server's port
    expected: bytes  # its answer, checked against the floor's
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    round_rps: list[float] = field(default_factory=list)
    differing: int = 0
    server_cpu: float | None = 0.0
    client_cpu: float = 0.0  # the busiest burst's share of a core
    sql: float | None = None
    rss: int | None = None

    @property
    def cpu_per_request_us(self) -> float | None:
        if self.server_cpu is None or not self.latencies:
            return None
        return self.server_cpu * 1e6 / len(self.latencies)

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds

    def ratios(self, floor: Figures) -> list[float]:
        """Each round's req/s over the floor's (or another target's) in the same round; a
        round in which that one answered nothing (a machine too busy) is left out."""
        pairs = zip(self.round_rps, floor.round_rps, strict=True)
        return [mine / its for mine, its in pairs if its] or [0.0]

    def versus(self, floor: Figures) -> float:
        """The median ratio: a round the machine slowed down weighs no more than another."""
        return statistics.median(self.ratios(floor))

    def add(self, result: LoadResult) -> None:
        self.latencies += result.latencies
        self.seconds += result.seconds
        self.round_rps.append(len(result.latencies) / result.seconds)
        self.differing += result.differing
        if self.server_cpu is not None and result.server_cpu is not None:
            self.server_cpu += result.server_cpu
        else:
            self.server_cpu = None
        self.client_cpu = max(self.client_cpu, result.client_cpu / result.seconds)


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
            f"{f.rps:,.0f}",
            f"{_percentile(f.latencies, 50) * 1000:.2f}",
            f"{_percentile(f.latencies, 99) * 1000:.2f}",
            f"{f.versus(floor):.2f}",
            _spread(f.ratios(floor)),
            "-" if f.sql is None else f"{f.sql:.1f}",
            "-" if f.server_cpu is None else f"{f.server_cpu / f.seconds:.0%}",
            "-" if f.server_cpu is None else f"{f.server_cpu * 1000 / len(f.latencies):.2f}",
            "-" if f.rss is None else f"{f.rss / 2**20:,.0f}",
        )
        for f in figures
    ]
    print()
    _print_rows(header, rows)
    by_name = {f.target.name: f for f in figures}
    for f in figures:
        goal, other = f.target.goal, f.target.versus
        if goal is not None and other is None:
            share = f.versus(floor)
            print(
                f"target: {f.target.name} at >= {goal:.0%} of the floor's req/s: "
                f"{share:.0%}, {'PASS' if share >= goal else 'MISS'}"
            )
        elif goal is not None and other is not None:
            times = f.versus(by_name[other])
            print(
                f"target: {f.target.name} at >= {goal:g}x the req/s of {other}: "
                f"{times:.2f}x, {'PASS' if times >= goal else 'MISS'}"
            )
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


def _spread(values: Sequence[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def _summary(body: bytes) -> str:
    entity = orjson.loads(body)["data"]["entity"]
    lists = ("dependencies", "dependents", "providesApis", "consumesApis")
    counts = ", ".join(f"{len(entity[key])} {key}" for key in lists)
    members = len(entity["owner"].get("members") or ())
    return f"{len(body):,} bytes ({counts}, an owner with {members} members)"
