"""Printing what a run found: the data it built, and the timings against their targets."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from bench.explain import Statement
from bench.generate import LoadReport
from bench.harness import Measurement

__all__ = ["print_explain", "print_load", "print_table"]


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


def print_table(results: Sequence[Measurement]) -> None:
    header = (
        "scenario",
        "median ms",
        "p95 ms",
        "baseline median ms",
        "ratio",
        "SQL/req",
        "target",
        "verdict",
    )
    rows = [
        (
            r.scenario.name,
            f"{r.median:.2f}",
            f"{r.p95:.2f}",
            f"{r.baseline_median:.2f}",
            f"{r.ratio:.1f}x",
            _queries(r.queries),
            f"< {r.scenario.target_ms:g} ms",
            "PASS" if r.passed else "MISS",
        )
        for r in results
    ]
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
    answers = ", ".join(f"{r.scenario.name}: {_answer(r.body)}" for r in results)
    print(f"answers: {answers}")
    samples = min(len(r.app_ms) for r in results)
    print(
        f"{samples} samples per scenario and baseline, sequential, after warm-up; "
        "baseline: a plain Starlette endpoint returning the same bytes"
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
