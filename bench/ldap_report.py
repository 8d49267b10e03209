"""What the LDAP scenario measured of a sync, and printing it with the directory it synced."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.directory import DirectoryPlan
from bench.harness.tables import print_rows
from bench.memory import Peak
from bench.written import BOOKKEEPING, CATALOG_TABLES
from sources.ldap.sync import SyncReport

__all__ = ["SyncMeasurement", "print_directory", "print_syncs"]

MB = 1024 * 1024


@dataclass(slots=True)
class SyncMeasurement:
    name: str
    report: SyncReport
    seconds: float
    phases: dict[str, float]  # read, build, apply
    written: dict[str, int]  # per table; empty when the server cannot count reliably
    rss: Peak = field(default_factory=Peak)
    python: Peak | None = None  # from a traced sync
    traced_seconds: float = 0.0

    @property
    def catalog_rows(self) -> int:
        return sum(self.written.get(table, 0) for table in CATALOG_TABLES)


def print_directory(plan: DirectoryPlan, generated_s: float, slapadd_s: float) -> None:
    print(
        f"\nLDAP directory: {plan.users:,} users, {plan.groups:,} groups nested {plan.depth} "
        f"levels deep ({plan.memberships:,} direct memberships, {plan.nestings:,} nestings, "
        f"{plan.cycles} cycle) and {len(plan.skipped)} misfits the sync must skip"
    )
    print(
        f"LDIF of {plan.entries:,} entries ({len(plan.ldif.encode()) / MB:.1f} MB) generated in "
        f"{generated_s:.1f} s; slapadd loaded it in {slapadd_s:.1f} s"
    )


def _mb(value: int) -> str:
    return f"{value / MB:,.0f}"


def print_syncs(syncs: Sequence[SyncMeasurement], rows_counted: bool) -> None:
    header = (
        "LDAP sync",
        "seconds",
        "read",
        "build",
        "apply",
        "Python peak MB",
        "RSS growth MB",
        "added",
        "changed",
        "removed",
        "skipped",
        "catalog rows",
        f"{BOOKKEEPING} rows",
    )
    rows = [
        (
            s.name,
            f"{s.seconds:.1f}",
            *(f"{s.phases[phase]:.1f}" for phase in ("read", "build", "apply")),
            "-" if s.python is None else _mb(s.python.bytes),
            _mb(s.rss.bytes),
            f"{s.report.added:,}",
            f"{s.report.changed:,}",
            f"{s.report.removed:,}",
            f"{len(s.report.skipped):,}",
            f"{s.catalog_rows:,}" if rows_counted else "n/a",
            f"{s.written[BOOKKEEPING]:,}" if rows_counted else "n/a",
        )
        for s in syncs
    ]
    print()
    print_rows(header, rows)
    first = syncs[0]
    if rows_counted:
        tables = ", ".join(f"{t} {first.written[t]:,}" for t in CATALOG_TABLES)
        print(f"rows the {first.name} wrote: {tables}")
        print(
            "rows: inserted + updated + deleted as PostgreSQL counted them (pg_stat_user_tables, "
            "flushed on every pooled connection), triggers included"
        )
    else:
        print(
            "rows written: not counted; PostgreSQL before 15 cannot be made to publish its "
            "counters on demand (pg_stat_force_next_flush)"
        )
    print("seconds: wall time; read: the directory searches, build: the entities, apply: the write")
    traced = ", ".join(f"the {s.name} ({s.traced_seconds:.1f} s)" for s in syncs if s.python)
    print(
        f"Python peak: tracemalloc, tracing {traced} again on an emptied catalog; "
        "a traced resync would cost one more full read of the directory"
    )
    if all(s.rss.reset for s in syncs):
        print("RSS growth: peak resident set over its level at the start (VmHWM, reset before)")
    else:
        print("RSS growth: how far the process's high-water mark rose (getrusage ru_maxrss)")
    for skipped in first.report.skipped:
        print(f"skipped {skipped.dn}: {skipped.reason}")
    for warning in first.report.warnings:
        print(f"warning: {warning}")
