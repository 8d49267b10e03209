"""The demo's deploy history, generated: ninety days of releases of one component going through
staging to production, deterministic for a component (seeded by its ref) and a moment.

Nearly every release that passes staging is promoted, so what production runs is the newest
release that passed (nothing waits), a few fail or are rolled back along the way, and a few
components end on purpose with something for the console to point at (``ENDINGS``): a
release that failed in staging, one that failed in production, one waiting to be promoted.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Final, Literal

__all__ = ["DAYS", "ENDINGS", "DemoDeploy", "Ending", "history"]

DAYS: Final = 90
BOT: Final = "ci-bot"  # staging deploys are the CI's, on every merge
STAGING_FAILURES: Final = (
    "integration tests failed",
    "smoke test GET /healthz answered 503",
    "image scan found a critical vulnerability",
)
PRODUCTION_FAILURES: Final = (
    "rollout did not become ready before the progress deadline",
    "error rate above 2% during canary analysis; traffic returned to the previous release",
)


@dataclass(frozen=True, slots=True)
class DemoDeploy:
    component: str
    stage: str
    version: str
    commit_time: datetime
    started: datetime
    finished: datetime
    state: str
    rollback: bool
    actor: str
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Ending:
    """A component's newest release, ending its history with something that needs attention."""

    what: Literal["staging failed", "production failed", "waiting"]
    hours_ago: float  # when it happened
    version: str | None = None  # its version; else the one after the last
    message: str | None = None  # why it failed


ENDINGS: Final = {
    "component:default/checkout": Ending(
        "staging failed",
        3.0,
        "1.38.0",
        "integration tests failed: 3 of 412 (cart totals off by one cent with stacked promotions)",
    ),
    "component:default/payments-gateway": Ending(
        "production failed",
        1.5,
        message="rollout did not become ready: the new pods' readiness probe failed (GET "
        "/healthz answered 503); the previous release kept serving",
    ),
    "component:default/search-service": Ending("waiting", 2.0),
}


def history(ref: str, now: datetime, people: list[str]) -> list[DemoDeploy]:
    """A component's deploys over the last ``DAYS`` days, oldest first: each release to
    staging, most of them on to production by one of ``people`` (its team, by name)."""
    rng = random.Random(int(hashlib.sha256(ref.encode()).hexdigest()[:8], 16))
    people = people or [BOT]
    ending = ENDINGS.get(ref)
    times: list[datetime] = []
    at = now - timedelta(days=DAYS) + timedelta(hours=rng.uniform(0, 48))
    while at < now - timedelta(hours=12):
        times.append(at)
        at += timedelta(hours=rng.uniform(24, 110))
    # Versions count up to the ending's when it names one (the release after the last).
    last_minor = int(ending.version.split(".")[1]) - 1 if ending and ending.version else None
    first = last_minor - len(times) + 1 if last_minor is not None else rng.randint(1, 10)
    found: list[DemoDeploy] = []
    good: list[str] = []  # versions production ran, newest last
    for index, released in enumerate(times):
        version = f"1.{first + index}.{rng.randint(0, 3)}"
        committed = released - timedelta(hours=rng.uniform(1, 30))
        recent = index >= len(times) - 3
        staged = released + timedelta(minutes=rng.uniform(3, 12))
        # The newest release passes and is promoted: production runs the newest that passed.
        last = index == len(times) - 1
        passed = last or rng.random() > 0.05
        found.append(
            DemoDeploy(
                ref,
                "staging",
                version,
                committed,
                released,
                staged,
                "succeeded" if passed else "failed",
                False,
                BOT,
                None if passed else rng.choice(STAGING_FAILURES),
            )
        )
        if not passed or (not last and rng.random() < 0.05):
            continue
        start = staged + timedelta(hours=rng.uniform(1, 10))
        end = start + timedelta(minutes=rng.uniform(4, 25))
        failed = not last and rng.random() < 0.05
        actor = rng.choice(people)
        found.append(
            DemoDeploy(
                ref,
                "production",
                version,
                committed,
                start,
                end,
                "failed" if failed else "succeeded",
                False,
                actor,
                rng.choice(PRODUCTION_FAILURES) if failed else None,
            )
        )
        if failed:
            continue
        if good and not recent and rng.random() < 0.04:
            # A bad release, rolled back to the one before within the hour (and fixed by a
            # later one: never among the newest, which would then wait to be promoted again).
            back = end + timedelta(minutes=rng.uniform(10, 60))
            again = DemoDeploy(
                ref,
                "production",
                good[-1],
                committed,
                back,
                back + timedelta(minutes=5),
                "succeeded",
                True,
                rng.choice(people),
            )
            found.append(again)
        else:
            good.append(version)
    if ending is not None and times:
        found += _ending(ref, ending, now, f"1.{first + len(times)}.0", rng, people)
    return found


def _ending(
    ref: str,
    ending: Ending,
    now: datetime,
    next_version: str,
    rng: random.Random,
    people: list[str],
) -> list[DemoDeploy]:
    at = now - timedelta(hours=ending.hours_ago)
    version = ending.version or next_version
    committed = at - timedelta(hours=rng.uniform(1, 4))
    staging = DemoDeploy(
        ref, "staging", version, committed, at, at + timedelta(minutes=9), "succeeded", False, BOT
    )
    if ending.what == "staging failed":
        return [replace(staging, state="failed", message=ending.message)]
    if ending.what == "waiting":
        return [staging]
    staging = replace(
        staging, started=at - timedelta(hours=3), finished=at - timedelta(hours=2, minutes=50)
    )
    production = DemoDeploy(
        ref,
        "production",
        version,
        committed,
        at,
        at + timedelta(minutes=12),
        "failed",
        False,
        rng.choice(people),
        ending.message,
    )
    return [staging, production]
