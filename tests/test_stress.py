"""``make test-stress`` (tests/stress.py) counts each test's failures over its rounds from
pytest's own reports, calls a skip a failure to look at, and keeps the cores busy only while it
runs."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stress import MODULES, ROOT, Tally, load

TESTS = """
import os, pytest

def test_passes():
    pass

def test_fails_in_the_second_round():
    assert os.environ["ROUND"] != "2", "the second round"

def test_skipped():
    pytest.skip("not here")
"""


def round_report(tmp_path: Path, number: int) -> Path:
    """A real pytest run's JUnit report of ``TESTS`` in round ``number``."""
    (tmp_path / "test_sample.py").write_text(TESTS)
    report = tmp_path / f"round-{number}.xml"
    subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"),
            f"--junitxml={report}",
            # Its own temporary root: a session that starts makes pytest's shared one private.
            *("--basetemp", str(tmp_path / f"pytest-{number}")),
        ],
        cwd=tmp_path,
        env={**os.environ, "ROUND": str(number)},
        capture_output=True,
        check=False,
    )
    return report


def test_failures_and_skips_are_counted_per_test_over_the_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tally = Tally()
    for number in (1, 2, 3):
        tally.add(round_report(tmp_path, number))
    assert tally.rounds == 3
    assert set(tally.runs.values()) == {3} and len(tally.runs) == 3
    [(failed, count)] = tally.failures.items()
    assert failed.endswith("::test_fails_in_the_second_round") and count == 1
    assert "the second round" in tally.first_failure[failed]
    [(skipped, count)] = tally.skips.items()
    assert skipped.endswith("::test_skipped") and count == 3
    assert not tally.clean
    tally.print()
    shown = capsys.readouterr().out
    assert "FAILED 1 of 3:" in shown and "SKIPPED 3 of 3:" in shown


def test_a_clean_tally_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert not Tally().clean  # no round at all is no proof
    tally = Tally(rounds=3)
    tally.runs["tests.x::test_y"] = 3
    assert tally.clean
    tally.print()
    assert "every test passed in every round" in capsys.readouterr().out


def test_the_load_spins_while_the_block_runs_and_stops_after() -> None:
    before = set(multiprocessing.active_children())
    with load(2):
        spinning = set(multiprocessing.active_children()) - before
        assert len(spinning) == 2 and all(p.is_alive() for p in spinning)
    assert not any(p.is_alive() for p in spinning)


def test_the_stressed_modules_exist() -> None:
    assert all((ROOT / module).exists() for module in MODULES)
