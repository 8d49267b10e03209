"""The demo's services as Prometheus would have scraped them: requests, errors and latency for
each component of type service in the demo catalog, a sample every 30 s. A day of history is
written for Prometheus as it starts; then the same series go on, sums carried over, for as long
as it scrapes them. Two incidents give the demo's alerts something to be about: cart-service
failing, search-service slow.

Their pods' CPU and memory are not among them: the demo cluster names a pod after a hash of its
PinApp's pod template (its image, which deploys change), which this plugin cannot know without
asking PinCompute."""

from __future__ import annotations

import bisect
import hashlib
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Final

import yaml

__all__ = ["HISTORY", "INCIDENTS", "STEP", "DemoService", "Incident", "World", "demo_services"]

STEP: Final = 30  # seconds between the history's samples
HISTORY: Final = 86_400  # seconds of history behind the demo's start
BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)  # and +Inf
_SPREAD: Final = 0.55  # sigma of the latency's log-normal distribution
_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_KINDS: Final = {
    "http_requests_total": "counter",
    "http_request_duration_seconds_bucket": "histogram",
}


@dataclass(frozen=True, slots=True)
class Incident:
    """Something going wrong with a service since shortly before the demo started, and the
    alert Prometheus would have fired about it (after 5 minutes)."""

    alert: str
    severity: str
    summary: str
    description: str
    began: int  # seconds before the demo started
    errors: float | None = None  # the share of requests failing meanwhile
    slowdown: float = 1.0  # latency multiplied meanwhile


INCIDENTS: Final = {
    "cart-service": Incident(
        alert="HighErrorRatio",
        severity="critical",
        summary="More than 2% of cart-service's requests fail",
        description="5xx answers have been over 2% of cart-service's requests for 5 minutes.",
        began=40 * 60,
        errors=0.058,
    ),
    "search-service": Incident(
        alert="HighLatency",
        severity="warning",
        summary="search-service's p99 latency is over 500 ms",
        description="The 99th percentile of search-service's request latency has been over "
        "500 ms for 5 minutes.",
        began=25 * 60,
        slowdown=3.0,
    ),
}


@dataclass(frozen=True, slots=True)
class DemoService:
    name: str
    namespace: str  # where its PinApp runs in the demo cluster: its system's name
    seed: int
    rate: float  # requests a second, the day's mean
    errors: float  # the share of requests failing, usually
    latency: float  # median seconds, usually
    incident: Incident | None


def demo_services(catalog: Path) -> list[DemoService]:
    """The components of type service in the demo catalog, each with figures of its own."""
    found = []
    for path in sorted(catalog.rglob("*.yaml")):
        # The demo's own files, read with libyaml's loader: ten times as fast, at start-up.
        for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_LOADER):
            if not isinstance(doc, dict) or doc.get("kind") != "Component":
                continue
            spec = doc.get("spec") or {}
            if spec.get("type") != "service":
                continue
            metadata = doc.get("metadata") or {}
            name = str(metadata["name"])
            tags = set(metadata.get("tags") or [])
            seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
            rate = (3 + (seed % 997) / 997 * 45) * (4 if "tier-1" in tags else 1)
            latency = (0.012 + (seed % 89) / 89 * 0.07) * (3 if "ml" in tags else 1)
            found.append(
                DemoService(
                    name=name,
                    namespace=str(spec.get("system") or "default").rpartition("/")[2],
                    seed=seed,
                    rate=rate,
                    # Legacy code fails a little all the time; the rest hardly ever.
                    errors=0.031 if "legacy" in tags else 0.0005 + (seed % 7) / 7 * 0.003,
                    latency=latency,
                    incident=INCIDENTS.get(name),
                )
            )
    return found


def _daily(t: float) -> float:
    """Traffic's rhythm over a day: 0.55 at night to 1.45 in the afternoon (UTC)."""
    return 1.0 + 0.45 * math.sin(2 * math.pi * ((t % 86_400) / 86_400 - 8 / 24))


class World:
    """The demo services' counters over a span before ``started`` (the history), then their
    values whenever Prometheus scrapes: they go on from the sums the history reached, so
    history and scrapes make one series."""

    def __init__(
        self, services: list[DemoService], started: float, since: float, until: float = 0
    ) -> None:
        """The history from ``since`` seconds before ``started`` to ``until`` seconds before
        it, a sample every ``STEP`` seconds; the counters start at nought there, as a
        process's do."""
        self.services = services
        self.started = started
        first = math.ceil((started - since) / STEP)
        self.times = [k * STEP for k in range(first, int(started - until) // STEP + 1)]
        self.clock = float(self.times[0] - STEP)  # when the sums were last worked out
        self._series = [_series_of(s) for s in services]
        self.series = sum(len(mine) for mine in self._series)  # how many there are
        self._sums = [[0.0] * len(mine) for mine in self._series]
        self._random = [random.Random(s.seed + first) for s in services]
        self._shares: dict[int, list[float]] = {}

    def history(self) -> Iterator[str]:
        """The history as OpenMetrics text (every series in time order, none after
        ``started``, ending ``# EOF``), in pieces to write one after another."""
        stamps = [f" {t}\n" for t in self.times]
        for i, service in enumerate(self.services):
            figures = self._figures(i, service, self.times, STEP)
            for j, (_, key) in enumerate(self._series[i]):
                values = list(accumulate(figures[j], initial=self._sums[i][j]))[1:]
                self._sums[i][j] = values[-1]
                pairs = zip(values, stamps, strict=True)
                yield "".join([f"{key} {v:.0f}{s}" for v, s in pairs])
        self.clock = self.times[-1]
        yield "# EOF\n"

    def exposition(self, now: float) -> str:
        """Every series' value at ``now``, in Prometheus's text format, for a scrape."""
        if now > self.clock:
            for i, service in enumerate(self.services):
                figures = self._figures(i, service, [now], now - self.clock)
                for j, [added] in enumerate(figures):
                    self._sums[i][j] += added
            self.clock = now
        families: dict[str, list[str]] = {name: [] for name in _KINDS}
        for mine, sums in zip(self._series, self._sums, strict=True):
            for (name, key), value in zip(mine, sums, strict=True):
                families[name].append(f"{key} {value:.0f}\n")
        text = []
        for name, lines in families.items():
            text.append(f"# TYPE {name.removesuffix('_bucket')} {_KINDS[name]}\n")
            text += lines
        return "".join(text)

    def _figures(
        self, index: int, service: DemoService, times: Sequence[float], seconds: float
    ) -> list[list[float]]:
        """For each of ``times``, what the ``seconds`` before it added to each of a
        service's counters, in the order of its series: requests answered and failed,
        requests within each latency bucket, and in all."""
        rng = self._random[index]
        daily = [_daily(t) for t in times]
        incident = service.incident
        # From which of the times on the incident is on.
        since = len(times)
        if incident is not None:
            since = bisect.bisect_left(times, self.started - incident.began)
        after = len(times) - since
        requests = [service.rate * seconds * d * (0.92 + 0.16 * rng.random()) for d in daily]
        failing = incident.errors if incident is not None and incident.errors else service.errors
        share = [service.errors] * since + [failing] * after
        failed = [r * e * (0.7 + 0.6 * rng.random()) for r, e in zip(requests, share, strict=True)]
        ok = [r - f for r, f in zip(requests, failed, strict=True)]
        # Busier is a little slower.
        slower = incident.slowdown if incident is not None else 1.0
        slowdown = [1.0] * since + [slower] * after
        shares = [
            self._within(service.latency * (0.8 + 0.2 * d) * s)
            for d, s in zip(daily, slowdown, strict=True)
        ]
        within = [
            [r * w[b] for r, w in zip(requests, shares, strict=True)] for b in range(len(BUCKETS))
        ]
        return [ok, failed, *within, requests]

    def _within(self, median: float) -> list[float]:
        """The share of requests within each bucket's bound for a log-normal latency, worked
        out once for medians a few per cent apart."""
        key = round(math.log(median) * 40)
        found = self._shares.get(key)
        if found is None:
            centre, spread = key / 40, _SPREAD * math.sqrt(2)
            found = [0.5 * (1 + math.erf((math.log(b) - centre) / spread)) for b in BUCKETS]
            self._shares[key] = found
        return found


def _series_of(service: DemoService) -> list[tuple[str, str]]:
    """A service's series (name, ``name{labels}``), in the order ``World._figures`` gives
    what each step adds to them."""
    s, requests, bucket = service.name, "http_requests_total", "http_request_duration_seconds"
    found = [(requests, f'{requests}{{service="{s}",code="{code}"}}') for code in ("200", "500")]
    for bound in [*(f"{b:g}" for b in BUCKETS), "+Inf"]:
        found.append((f"{bucket}_bucket", f'{bucket}_bucket{{service="{s}",le="{bound}"}}'))
    return found
