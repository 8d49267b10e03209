"""The plugin's committed schema fragment is what it serves, and its console operations are
valid against it: Atrium's gate over the plugin's own part of the schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _atrium(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "atrium.cli", *arguments],
        cwd=HERE,
        capture_output=True,
        text=True,
    )


def test_the_committed_fragment_is_the_schema_served() -> None:
    printed = _atrium("schema", "print", "--plugin", "oncall")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == (HERE / "schema.graphql").read_text(), (
        "the schema changed: atrium schema print --plugin oncall > schema.graphql"
    )


def test_no_breaking_change_and_the_console_operations_are_valid() -> None:
    checked = _atrium(
        "schema",
        "check",
        "--plugin",
        "oncall",
        "schema.graphql",
        "--operations",
        "atrium_oncall/console",
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 operations valid" in checked.stdout
