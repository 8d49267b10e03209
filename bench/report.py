"""Printing what a run found: the data it built, and the timings against their targets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import orjson

from bench.directory import DirectoryPlan
from bench.explain import Statement
from bench.generate import LoadReport
from bench.harness import Measurement
from bench.written import BOOKKEEPING, CATALOG_TABLES

if TYPE_CHECKING:  # bench.ldap prints through this module
    from bench.ldap import SyncMeasurement

__all__ = ["print_directory", "print_explain", "print_load", "print_syncs", "print_table"]

MB = 1024 * 1024


def print_load(report: LoadReport) -> None:
    total = sum(report.kinds.values())
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in report.kinds.items())
    print(f"entities: {total:,} ({kinds})")
    print(
        f"relation rows: {report.relations:,} (both directions); search vocabulary: "
        f"{report.terms:,} terms, {report.trigrams:,} trigram rows"
    )
    steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in report.steps.items())
    print(
        f"generated in {report.seconds:.1f} s ({steps}); "
        f"{report.checked:,} documents cross-checked against validate_entity"
    )


def _queries(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _answer(body: bytes) -> str:
    """What a response said, in a few words, to show the timings measured real work."""
    data = orjson.loads(body)["data"]
    if "entities" in data:
        return f"{data['entities']['totalCount']:,} matches"
    if "entity" in data:
        entity = data["entity"]
        lists = ("dependencies", "dependents", "providesApis", "consumesApis")
        return "/".join(str(len(entity.get(key) or [])) for key in lists) + " deps/dependents/APIs"
    return ", ".join(f"{len(value)} {key}" for key, value in data.items())


def _print_rows(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A plain text table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for i, row in enumerate((header, *rows)):
        print(
            "  ".join(
                cell.ljust(width) if column == 0 else cell.rjust(width)
                for column, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
        if i == 0:
            print("  ".join("-" * width for width in widths))


def _verdict(ms: float, target: float) -> str:
    return "PASS" if ms < target else "FAIL"


def print_table(results: Sequence[Measurement], *, cached: str) -> None:
    """Each scenario's server time at p50 and p99 against its target, then the client's view:
    the round trip's median and p95, the baseline's, their ratio, SQL statements."""
    header = (
        "scenario",
        "server p50 ms",
        "server p99 ms",
        "target",
        "p50",
        "p99",
        "round trip median ms",
        "p95 ms",
        "baseline median ms",
        "ratio",
        "SQL/req",
    )
    rows = [
        (
            r.scenario.name,
            f"{r.server_p50:.2f}",
            f"{r.server_p99:.2f}",
            f"< {r.scenario.target_ms:g} ms",
            _verdict(r.server_p50, r.scenario.target_ms),
            _verdict(r.server_p99, r.scenario.target_ms),
            f"{r.median:.2f}",
            f"{r.p95:.2f}",
            f"{r.baseline_median:.2f}",
            f"{r.ratio:.1f}x",
            _queries(r.queries),
        )
        for r in results
    ]
    _print_rows(header, rows)
    answers = ", ".join(f"{r.scenario.name}: {_answer(r.body)}" for r in results)
    print(f"answers: {answers}")
    samples = min(len(r.app_ms) for r in results)
    print(
        f"{samples} samples per scenario and baseline, sequential, after warm-up; {cached}; "
        "server: from the ASGI call to the last body message; round trip: through httpx's ASGI "
        "transport; baseline: a plain Starlette endpoint returning the same bytes"
    )
    for r in results:
        if r.differing:
            print(
                f"note: {r.scenario.name}: {r.differing} responses differed from the first "
                "(still valid): the answer is not deterministic"
            )


def print_explain(name: str, statements: Sequence[Statement], plan: Sequence[str]) -> None:
    print(f"\n{name}: {len(statements)} statements in one request")
    for s in statements:
        first = " ".join(s.sql.split())[:110]
        print(f"  {s.ms:8.2f} ms  {first}")
    if plan:
        print("  slowest, EXPLAIN (ANALYZE, BUFFERS):")
        for line in plan:
            print(f"    {line}")


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
    _print_rows(header, rows)
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
