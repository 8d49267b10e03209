"""The deployments scenario's history: releases and deploys over 90 days, COPYed in.

A fifth of the catalog's components get deploys (skewed: a few components have thousands):
releases go to canary, staging, then production and stop where one fails; production failures
are mostly redeployed at once, a few releases rolled back. The rows are COPYed into the
plugin's tables, their indexes dropped and rebuilt (``bench.bulk``); one deployed component in
ten gets a ``github.com/project-slug``, for the webhooks to name.
"""

from __future__ import annotations

import collections
import gc
import itertools
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from bench.bulk import CONSTRAINTS, INDEXES, chunks, connect, copy_rows, parallel, run_sql

__all__ = ["ACTORS", "SLUG", "STAGES", "History", "generate_history"]

STAGES: Final = ("canary", "staging", "production")
FAILS: Final = {"canary": 0.08, "staging": 0.05, "production": 0.04}
REDEPLOYED: Final = 0.7  # production failures redeployed at once
ROLLED_BACK: Final = 0.02  # production successes a rollback replaces
ACTORS: Final = ("github-actions[bot]", "argo-cd", "alice", "bob", "carol", "dmitri")
SPAN: Final = 90 * 86_400.0  # seconds of history
TABLES: Final = ["deployment_releases", "deployment_deploys"]
# The columns the rows fill, named: any other takes its default, or what a trigger sets.
COLUMNS: Final = [
    "id component_ref version commit_sha commit_time artifact created_by created_at build_url",
    "id component_ref stage production release_id state actor started_at finished_at updated_at"
    " source external_id url is_rollback message",
]
SLUG: Final = "github.com/project-slug"

Step = tuple[str, str, bool]  # stage, state, whether it is a rollback


def _plan(rng: random.Random, deploys: int) -> list[list[Step]]:
    """Releases, each the deploys it made, ``deploys`` in all."""
    plans: list[list[Step]] = []
    made, shipped = 0, False
    while made < deploys:
        steps: list[Step] = []
        for stage in STAGES:
            failed = rng.random() < FAILS[stage]
            steps.append((stage, "failed" if failed else "succeeded", False))
            if failed and (stage != "production" or rng.random() > REDEPLOYED):
                break
            if failed:
                steps.append((stage, "succeeded", False))
            elif stage == "production" and shipped and rng.random() < ROLLED_BACK:
                steps[-1] = (stage, "rolled_back", False)
                steps.append((stage, "succeeded", True))
        shipped = shipped or steps[-1][:2] == ("production", "succeeded")
        made += len(steps)
        plans.append(steps)
    plans[-1] = plans[-1][: len(plans[-1]) - (made - deploys)]
    return plans


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _history(
    rng: random.Random, ref: str, deploys: int, now: float, ids: list[int], rows: list[list[Any]]
) -> None:
    """One component's releases, evenly over SPAN, and their deploys."""
    name = ref.partition("/")[2]
    plans = _plan(rng, deploys)
    slot = SPAN / len(plans)
    gap = min(slot, 4 * 3600.0) / 8  # a release's deploys end within its slot
    good: int | None = None  # the release production last ran successfully
    for k, steps in enumerate(plans):
        ids[0] += 1
        release, version = ids[0], f"1.{k // 1000}.{k % 1000}"
        at = now - SPAN + k * slot + rng.random() * gap
        commit = _at(at - rng.uniform(600, 2 * 86_400))
        sha, artifact = f"{rng.getrandbits(160):040x}", f"registry.example/{name}:{version}"
        rows[0].append((release, ref, version, sha, commit, artifact, ACTORS[0], _at(at), None))
        for stage, state, rollback in steps:
            at += gap * (0.5 + rng.random())
            done, ids[1] = _at(at + rng.uniform(30, min(600, gap / 2))), ids[1] + 1
            row: tuple[Any, ...] = (ids[1], ref, stage, stage == "production", release, state)
            if rollback and good is not None:
                row = (*row[:4], good, state)
            row += (rng.choice(ACTORS), _at(at), done, done, "github", str(ids[1]))
            row += (f"https://github.com/acme/{name}/actions/runs/{ids[1]}", rollback)
            rows[1].append((*row, "health checks failed" if state == "failed" else None))
            if stage == "production" and state == "succeeded" and not rollback:
                good = release


@dataclass(slots=True)
class History:
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    releases: int = 0
    slugs: list[str] = field(default_factory=list)  # repositories that name a component
    steps: dict[str, float] = field(default_factory=dict)


async def generate_history(url: str, total: int, seed: int) -> History:
    history, clock = History(), time.perf_counter()

    def lap(step: str) -> None:
        nonlocal clock
        history.steps[step], clock = time.perf_counter() - clock, time.perf_counter()

    conns = [await connect(url) for _ in range(3)]
    db = conns[0]
    try:
        sql = "select ref from entities where kind = 'Component' order by ref"
        refs = [r[0] for r in await db.fetch(sql)]
        rng = random.Random(seed)
        chosen = rng.sample(refs, max(1, len(refs) // 5))
        weights = list(itertools.accumulate(1 / (rank + 1) ** 0.7 for rank in range(len(chosen))))
        history.counts.update(rng.choices(chosen, cum_weights=weights, k=total))
        rows: list[list[Any]] = [[], []]
        ids, now = [0, 0], time.time()
        gc.disable()  # a million rows, none of them garbage
        try:
            for ref, count in sorted(history.counts.items()):
                _history(rng, ref, count, now, ids, rows)
        finally:
            gc.enable()
        history.releases = len(rows[0])
        lap("rows")
        # Without indexes, then each table's rebuilt: releases first, so that what the
        # deploys' triggers look up in them is indexed, as for the app's own writes.
        constraints = await db.fetch(CONSTRAINTS, TABLES)
        foreign = [c for c in constraints if c["foreign"]]
        built = [*(c for c in constraints if not c["foreign"]), *await db.fetch(INDEXES, TABLES)]
        for found in (*foreign, *built):
            await db.execute(found["drop"])
        for table, records, columns in zip(TABLES, rows, COLUMNS, strict=True):
            parts = chunks(records, 100_000)
            await parallel(conns, [copy_rows(table, part, columns.split()) for part in parts])
            mine = [run_sql(found["create"]) for found in built if found["table_name"] == table]
            await parallel(conns, mine)
            sequence = f"pg_get_serial_sequence('{table}', 'id')"
            await db.execute(f"select setval({sequence}, max(id)) from {table}")
            lap(f"{table.removeprefix('deployment_')} copied and indexed")
        del rows, parts
        for found in foreign:
            await db.execute(found["create"])
        slugged = rng.sample(sorted(history.counts), max(1, len(history.counts) // 10))
        history.slugs = [
            r[0]
            for r in await db.fetch(
                "update entities set annotations = annotations || jsonb_build_object($2::text,"
                " 'acme/' || namespace || '-' || name) where ref = any($1::text[])"
                " returning annotations ->> $2",
                slugged,
                SLUG,
            )
        ]
        for table in [*TABLES, "entities"]:
            await db.execute(f"vacuum (analyze) {table}")
        lap("vacuum analyze")
    finally:
        for conn in conns:
            await conn.close()
    return history
