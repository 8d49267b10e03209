"""Figures from samples: percentiles, rounds whose order rotates, and requests per second over
rounds as a ratio to a floor's in the same rounds.

A ratio, not absolute time, is what the benchmark reports: absolute figures depend on the
machine, a ratio to a floor measured alongside does not, much. Targets are measured in rounds
whose order rotates, so that a slow moment of the machine hits each alike, and a ratio is the
median over rounds of the ratios in the same round, so that a round the machine slowed down
weighs no more than another.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from bench.harness.load import LoadResult

__all__ = ["Throughput", "frozen_heap", "percentile", "rotated"]

T = TypeVar("T")


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def rotated(items: Sequence[T], round_: int) -> list[T]:
    """``items`` in round ``round_``'s order: each round starts one further."""
    shift = round_ % len(items)
    return [*items[shift:], *items[:shift]]


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """What was loaded before the timings lives through them: frozen, the collector does not
    rescan it during the timings, for the app and its baseline alike."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass(slots=True)
class Throughput:
    """A target's requests in timed bursts, one a round: latencies, and each round's rate."""

    latencies: list[float] = field(default_factory=list)  # seconds
    seconds: float = 0.0
    round_rps: list[float] = field(default_factory=list)
    differing: int = 0  # right answers other than the expected bytes
    server_cpu: float | None = 0.0  # the server's CPU seconds in the timed windows
    client_cpu: float = 0.0  # the load process's share of a core, in its busiest burst

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds

    def ratios(self, other: Throughput) -> list[float]:
        """Each round's requests per second over ``other``'s in the same round; infinite in a
        round where ``other`` began no request (a short burst on a machine too busy)."""
        return [
            mine / its if its else math.inf
            for mine, its in zip(self.round_rps, other.round_rps, strict=True)
        ]

    def versus(self, other: Throughput) -> float:
        """The median of the rounds' ratios."""
        return statistics.median(self.ratios(other))

    @property
    def cpu_per_request(self) -> float | None:
        """The server's CPU seconds per timed request."""
        if self.server_cpu is None or not self.latencies:
            return None
        return self.server_cpu / len(self.latencies)

    def add(self, result: LoadResult) -> None:
        """A timed burst: one more round."""
        self.latencies += result.latencies
        self.seconds += result.seconds
        self.round_rps.append(len(result.latencies) / result.seconds)
        self.differing += result.differing
        if self.server_cpu is not None and result.server_cpu is not None:
            self.server_cpu += result.server_cpu
        else:
            self.server_cpu = None
        self.client_cpu = max(self.client_cpu, result.client_cpu / result.seconds)

    def cells(self, floor: Throughput, *, ms: int = 2, ratio: int = 2) -> tuple[str, ...]:
        """requests/s, p50 and p99 in ms, the median ratio to ``floor`` and its lowest and
        highest round: the first columns of a throughput table."""
        ratios = self.ratios(floor)
        return (
            f"{self.rps:,.0f}",
            *(f"{percentile(self.latencies, p) * 1000:.{ms}f}" for p in (50, 99)),
            f"{self.versus(floor):.{ratio}f}",
            f"{min(ratios):.{ratio}f}-{max(ratios):.{ratio}f}",
        )
