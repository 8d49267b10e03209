"""The LDAP scenario: a first directory sync and a no-change resync against a real slapd.

Each sync is measured for duration (split into reading the directory, building the entities
and applying them), peak memory and the rows PostgreSQL saw written. An unchanged directory
must write no catalog row; if the resync writes any, the benchmark fails.

It runs in a fresh process (``python -m bench.ldap``), so that what the catalog scenarios
left behind (memory freed to the allocator but kept, which a sync would reuse without growing
the resident set; objects frozen out of the collector) changes neither its memory figures nor
its timings. Python's peak allocations come from a third sync, a first sync again
on an emptied catalog, traced: tracemalloc slows the code it traces and inflates the resident
set with its own bookkeeping, so the timed syncs are not traced. Tracing a resync as well would
cost one more full read of the directory, the bulk of a sync's time (slapd computes memberOf).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Final

from bench.directory import GROUPS_DN, USERS_DN, DirectoryPlan, plan_directory
from bench.harness import BenchFailure, exit_status
from bench.harness.apps import quiet, started
from bench.harness.database import scratch_database
from bench.harness.host import ROOT, child_environment
from bench.ldap_report import SyncMeasurement, print_directory, print_syncs
from bench.memory import python_peak, rss_peak
from bench.slapd import ROOT_DN, ROOT_PASSWORD, running_slapd
from bench.written import CATALOG_TABLES, WriteCounter
from graph.settings import Settings
from sources.db import Database
from sources.ldap.config import PRESETS, DirectoryConfig
from sources.ldap.sync import SyncReport, sync_directory

__all__ = ["LdapOptions", "run_ldap"]

BRAKE: Final = 0.10  # the setting's default
_EMPTY_CATALOG: Final = f"truncate {', '.join(CATALOG_TABLES)}, ldap_sync_runs"
_COUNT_RELATIONS: Final = "select count(*) from relations"


@dataclass(frozen=True, slots=True)
class LdapOptions:
    users: int
    groups: int
    seed: int


class _Phases:
    """Times from sync_directory's progress calls (made from the reader's threads too)."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.last: dict[str, float] = {}

    def __call__(self, stage: str, count: int) -> None:
        self.last[stage] = time.perf_counter()

    def split(self, ended: float) -> dict[str, float]:
        read = max(self.last.get("users", self.started), self.last.get("groups", self.started))
        built = self.last.get("writing", read)
        return {"read": read - self.started, "build": built - read, "apply": ended - built}


async def _sync(
    db: Database,
    config: DirectoryConfig,
    name: str,
    counter: WriteCounter,
    traced: bool,
) -> SyncMeasurement:
    before = await counter.snapshot()
    phases = _Phases()
    with python_peak() if traced else rss_peak() as memory:
        report = await sync_directory(db, config, brake=BRAKE, progress=phases)
    ended = time.perf_counter()
    after = await counter.snapshot()
    written = {table: after[table] - before[table] for table in after}
    found = SyncMeasurement(name, report, ended - phases.started, phases.split(ended), written)
    if traced:
        found.python = memory
    else:
        found.rss = memory
    return found


def _check_first(plan: DirectoryPlan, report: SyncReport, relations: int) -> list[str]:
    """What a correct first sync of the plan reports and stores, as far as it differs."""
    problems = []
    expected = {
        "outcome": "succeeded",
        "users read": plan.users + len(plan.skipped_users),
        "groups read": plan.groups + len(plan.skipped_groups),
        "added": plan.users + plan.groups,
        "changed": 0,
        "removed": 0,
        "skipped": sorted(dn.lower() for dn in plan.skipped),
        "cycle warnings": plan.cycles,
        "relation rows": plan.relations,
    }
    actual = {
        "outcome": report.outcome,
        "users read": report.users_read,
        "groups read": report.groups_read,
        "added": report.added,
        "changed": report.changed,
        "removed": report.removed,
        "skipped": sorted(s.dn.lower() for s in report.skipped),
        "cycle warnings": len(report.warnings),
        "relation rows": relations,
    }
    for key, want in expected.items():
        if actual[key] != want:
            problems.append(f"{key}: expected {want!r:.300}, got {actual[key]!r:.300}")
    return problems


def _check_resync(resync: SyncMeasurement) -> list[str]:
    r = resync.report
    problems = []
    if (r.outcome, r.added, r.changed, r.removed) != ("succeeded", 0, 0, 0):
        problems.append(f"{r.outcome}, {r.added} added, {r.changed} changed, {r.removed} removed")
    if resync.catalog_rows:
        tables = ", ".join(f"{t} {resync.written[t]:,}" for t in CATALOG_TABLES)
        problems.append(
            f"it wrote {resync.catalog_rows:,} catalog rows ({tables}); it must write none"
        )
    return problems


async def _first_sync(
    db: Database, config: DirectoryConfig, plan: DirectoryPlan, counter: WriteCounter, traced: bool
) -> SyncMeasurement:
    first = await _sync(db, config, "first sync", counter, traced)
    problems = _check_first(plan, first.report, await db.fetchval(_COUNT_RELATIONS))
    if problems:
        raise BenchFailure(f"LDAP first sync: {'; '.join(problems)}")
    return first


async def _resync(db: Database, config: DirectoryConfig, counter: WriteCounter) -> SyncMeasurement:
    again = await _sync(db, config, "no-change resync", counter, traced=False)
    problems = _check_resync(again)
    if problems:
        raise BenchFailure(f"LDAP resync of an unchanged directory: {'; '.join(problems)}")
    return again


async def scenario(options: LdapOptions) -> None:
    begun = time.perf_counter()
    quiet()
    plan = plan_directory(options.users, options.groups, seed=options.seed)
    planned = time.perf_counter() - begun
    async with running_slapd(plan.ldif) as slapd:
        print_directory(plan, planned, slapd.load_seconds)
        config = DirectoryConfig(
            url=slapd.url,
            users_dn=USERS_DN,
            groups_dn=GROUPS_DN,
            attributes=PRESETS["openldap"],
            bind_dn=ROOT_DN,
            bind_password=ROOT_PASSWORD,
        )
        async with scratch_database() as scratch:
            print(scratch)
            async with started(Settings(database_url=scratch.url, ldap_url=None)) as app:
                db = app.services.database
                counter = await WriteCounter.for_database(db)
                first = await _first_sync(db, config, plan, counter, traced=False)
                resync = await _resync(db, config, counter)
                await db.execute(_EMPTY_CATALOG)
                traced = await _first_sync(db, config, plan, counter, traced=True)
                first.python, first.traced_seconds = traced.python, traced.seconds
                syncs = (first, resync)
    print_syncs(syncs, counter.available)
    print(
        f"LDAP scenario took {time.perf_counter() - begun:.0f} s; "
        "slapd stopped, scratch database dropped"
    )


def run_ldap(options: LdapOptions) -> None:
    """Run the scenario in a fresh interpreter; raises BenchFailure if it failed."""
    sys.stdout.flush()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.ldap",
            f"--users={options.users}",
            f"--groups={options.groups}",
            f"--seed={options.seed}",
        ],
        check=False,
        cwd=ROOT,
        env=child_environment(),
    )
    if done.returncode != 0:
        raise BenchFailure(f"the LDAP scenario failed (exit status {done.returncode}, see above)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ldap", description="The benchmark's LDAP scenario alone."
    )
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    return exit_status(
        lambda: asyncio.run(scenario(LdapOptions(args.users, args.groups, args.seed)))
    )


if __name__ == "__main__":
    sys.exit(main())
