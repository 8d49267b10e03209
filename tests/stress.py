"""``make test-stress``: the modules most exposed to timing, run again and again while every core
of the machine is kept busy by other processes; each test's failures, counted.

A test that passes on a quiet machine and fails when the machine is busy fails by chance in
CI some day: here it fails on purpose, before it lands. The modules are the console's (a
browser, a served Atrium, emulated clusters), production's (replicas, HAProxy, PgBouncer,
drains) and those that follow subscriptions. Each round is one pytest run over them, spread
over processes as ``make test`` spreads the suite; the load is one process spinning per core,
at the same priority as the tests.

    python -m tests.stress [--rounds N] [--load N] [PYTEST_ARGUMENTS...]

Exits 0 only if every test passed in every round.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MODULES", "main"]

ROOT = Path(__file__).resolve().parent.parent

MODULES = (
    "tests/console",
    "tests/production",
    "tests/atrium/test_ws_deflate.py",
    "tests/graph/test_subscriptions_persisted.py",
    "tests/graph/test_ws_outbox.py",
    "tests/plugins/test_deploys_fanout.py",
    "tests/plugins/test_log_fanout.py",
)


@dataclass
class Tally:
    """What every round said of every test."""

    rounds: int = 0
    runs: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    skips: Counter[str] = field(default_factory=Counter)
    first_failure: dict[str, str] = field(default_factory=dict)

    def add(self, report: Path) -> None:
        """One round's JUnit XML report."""
        self.rounds += 1
        for case in ElementTree.parse(report).iter("testcase"):
            test = f"{case.get('classname', '')}::{case.get('name', '')}"
            self.runs[test] += 1
            failed = case.find("failure")
            if failed is None:
                failed = case.find("error")
            if failed is not None:
                self.failures[test] += 1
                message = (failed.get("message") or failed.text or "").strip()
                self.first_failure.setdefault(
                    test, message.splitlines()[0][:300] if message else ""
                )
            elif case.find("skipped") is not None:
                self.skips[test] += 1

    def print(self) -> None:
        tests = len(self.runs)
        print(f"\n{tests} tests, {self.rounds} rounds, every core busy with other work")
        if not self.failures and not self.skips:
            print("every test passed in every round")
            return
        for test, count in self.failures.most_common():
            print(f"FAILED {count} of {self.runs[test]}: {test}\n    {self.first_failure[test]}")
        for test, count in self.skips.most_common():
            print(f"SKIPPED {count} of {self.runs[test]}: {test}")

    @property
    def clean(self) -> bool:
        return self.rounds > 0 and not self.failures and not self.skips


def _spin() -> None:
    while True:
        pass


@contextmanager
def load(processes: int) -> Iterator[None]:
    """``processes`` processes, each keeping a core busy, until the block ends."""
    context = multiprocessing.get_context("spawn")
    spinning = [context.Process(target=_spin, daemon=True) for _ in range(processes)]
    for process in spinning:
        process.start()
    try:
        yield
    finally:
        for process in spinning:
            process.terminate()
        for process in spinning:
            process.join()


def run_round(number: int, report: Path, extra: Sequence[str]) -> int:
    """One pytest run over ``MODULES`` on several processes, as ``make test`` runs the suite."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        *("-n", "auto", "--maxprocesses", "4", "--dist", "loadfile"),
        *("-p", "no:cacheprovider", "-q", "--no-header", f"--junitxml={report}"),
        *MODULES,
        *extra,
    ]
    began = time.monotonic()
    print(f"round {number}: {' '.join(command[1:])}", flush=True)
    status = subprocess.call(command, cwd=ROOT)
    print(f"round {number}: exit status {status} in {time.monotonic() - began:.0f} s", flush=True)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.stress", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=3, help="pytest runs (default 3)")
    parser.add_argument(
        "--load",
        type=int,
        default=os.cpu_count() or 2,
        help="processes keeping a core busy each (default: one per core)",
    )
    options, extra = parser.parse_known_args(argv)
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="atrium-stress-") as tmp, load(options.load):
        for number in range(1, options.rounds + 1):
            report = Path(tmp, f"round-{number}.xml")
            status = run_round(number, report, extra)
            if not report.is_file():  # pytest itself failed (a usage error): nothing to count
                print(f"round {number} wrote no report (exit status {status})")
                return status or 1
            tally.add(report)
    tally.print()
    return 0 if tally.clean else 1


if __name__ == "__main__":
    sys.exit(main())
