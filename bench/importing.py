"""A full import of the generated catalog through the code ``atrium catalog import`` runs, then
the same import again with nothing changed.

The generated documents are written as the catalog files a company's repositories would hold
(the org, the domains, one ``catalog-info.yaml`` per system), in block-style YAML, into a
temporary directory. Each import reads the directory as ``atrium catalog import DIR`` does
(``read_paths`` in a worker thread: YAML, placeholders, validation), then writes the batch
(``apply_batch``) into a migrated scratch database of its own, empty for the first import. Rows
written are PostgreSQL's own counts (``bench.written``): the no-change import must write none.

It runs in a process of its own (``python -m bench.importing ENTITIES SEED``), as the command
does: the benchmark's process still holds what it generated, and the importing process's
peak resident set is what an import of that size needs.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import re
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from bench.catalog import CatalogPlan, Shape
from bench.harness import BenchFailure
from bench.harness.database import scratch_database
from bench.written import CATALOG_TABLES, WriteCounter
from sources.catalog.documents import read_paths
from sources.catalog.store import ApplyResult, apply_batch
from sources.db import Database
from sources.migrations import apply_migrations, core_migrations

__all__ = ["ImportTiming", "run_import", "time_import", "write_catalog", "yaml_document"]

_PLAIN_KEY: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_./-]*$")
MB: Final = 1024 * 1024


def _scalar(value: Any) -> str:
    # JSON's strings, numbers and literals are YAML 1.2's too (double-quoted, escapes and all).
    return orjson.dumps(value).decode()


def _key(key: str) -> str:
    return key if _PLAIN_KEY.match(key) else _scalar(key)


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """``value`` (a mapping or list) as block-style lines at ``indent``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{indent}{_key(key)}:")
                _emit(item, indent + "  ", out)
            else:
                out.append(f"{indent}{_key(key)}: {_flow(item)}")
        return
    for item in value:
        if isinstance(item, dict | list) and item:
            nested: list[str] = []
            _emit(item, indent + "  ", nested)
            nested[0] = f"{indent}- {nested[0][len(indent) + 2 :]}"
            out.extend(nested)
        else:
            out.append(f"{indent}- {_flow(item)}")


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def yaml_document(document: dict[str, Any]) -> str:
    lines: list[str] = []
    _emit(document, "", lines)
    return "\n".join(lines) + "\n"


def write_catalog(documents: Iterable[tuple[str, dict[str, Any]]], root: Path) -> tuple[int, int]:
    """The documents as multi-document files under ``root``, by origin; (files, bytes)."""
    by_origin: dict[str, list[str]] = {}
    for origin, document in documents:
        by_origin.setdefault(origin, []).append(yaml_document(document))
    size = 0
    for origin, texts in by_origin.items():
        path = root / origin
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "---\n".join(texts)
        path.write_text(text, encoding="utf-8")
        size += len(text.encode())
    return len(by_origin), size


@dataclass(frozen=True, slots=True)
class ImportTiming:
    name: str
    read_s: float
    write_s: float
    result: ApplyResult
    written: dict[str, int]  # rows per table, as PostgreSQL counted them; empty: not counted

    @property
    def seconds(self) -> float:
        return self.read_s + self.write_s


async def _import(db: Database, counter: WriteCounter, root: Path, name: str) -> ImportTiming:
    before = await counter.snapshot()
    started = time.perf_counter()
    batch = await asyncio.to_thread(read_paths, [root])
    read = time.perf_counter()
    result = await apply_batch(db, batch)
    ended = time.perf_counter()
    del batch
    after = await counter.snapshot()
    written = {t: after[t] - before[t] for t in CATALOG_TABLES} if after else {}
    return ImportTiming(name, read - started, ended - read, result, written)


async def time_import(total: int, *, seed: int) -> list[ImportTiming]:
    plan = CatalogPlan(Shape.for_total(total), seed)
    with tempfile.TemporaryDirectory(prefix="atrium-bench-catalog-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        files, size = write_catalog(plan.documents(), root)
        del plan
        gc.collect()
        written_s = time.perf_counter() - started
        async with scratch_database() as scratch:
            db = await Database.connect(scratch.url, min_size=1, max_size=2)
            try:
                await apply_migrations(db, core_migrations())
                counter = await WriteCounter.for_database(db)
                first = await _import(db, counter, root, "full import")
                gc.collect()
                again = await _import(db, counter, root, "no-change import")
            finally:
                await db.close()
    timings = [first, again]
    _check(first, again, total)
    _print(timings, files, size, written_s)
    return timings


def _check(first: ImportTiming, again: ImportTiming, total: int) -> None:
    if first.result.errors or len(first.result.created) != total:
        raise BenchFailure(
            f"the full import created {len(first.result.created):,} of {total:,} entities: "
            f"{first.result.errors[:3]}"
        )
    if again.result.changed or len(again.result.unchanged) != total:
        raise BenchFailure(
            f"the no-change import changed {len(again.result.changed):,} entities, found "
            f"{len(again.result.unchanged):,} unchanged of {total:,}"
        )
    if again.written and any(again.written.values()):
        raise BenchFailure(f"the no-change import wrote rows: {again.written}")


async def run_import(total: int, *, seed: int) -> None:
    """The timed imports in a process of their own; its report printed as it comes."""
    sys.stdout.flush()  # what this process printed comes first
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.importing", str(total), str(seed)
    )
    if await process.wait() != 0:
        raise BenchFailure(f"the import benchmark exited with status {process.returncode}")


def _peak_rss() -> str:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GB"
    except (OSError, ValueError):
        pass
    return "n/a"


def _print(timings: list[ImportTiming], files: int, size: int, written_s: float) -> None:
    total = len(timings[0].result.created)
    print(
        f"\ncatalog import, as `atrium catalog import DIR` runs it: {total:,} entities in "
        f"{files:,} files ({size / MB:,.0f} MB of YAML, written in {written_s:.0f} s), into "
        "an empty catalog, then again unchanged"
    )
    for t in timings:
        rows = sum(t.written.values())
        counted = (
            f"{rows:,} rows written ({', '.join(f'{k} {v:,}' for k, v in t.written.items())})"
            if t.written
            else "rows written not counted (PostgreSQL before 15)"
        )
        print(
            f"  {t.name:17} {t.seconds:7.1f} s (read and check {t.read_s:.1f} s, write "
            f"{t.write_s:.1f} s): {total / t.seconds:,.0f} entities/s; {counted}"
        )
    print(f"  the importing process's peak resident set: {_peak_rss()}")


def main(argv: list[str]) -> int:
    logging.getLogger("atrium").setLevel(logging.WARNING)
    try:
        asyncio.run(time_import(int(argv[0]), seed=int(argv[1])))
    except BenchFailure as exc:
        print(f"\nbenchmark FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
