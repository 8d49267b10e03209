"""The on-call plugin's fixtures, on Atrium's test kit (``atrium.testing``): an app per test
with this plugin alone, a rotations file, and a small catalog of teams, people and components."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from atrium_oncall import OnCallPlugin, OnCallSettings

SHIFT = timedelta(hours=168)
# The rotations began a shift and a half ago: the second person's shift is half done, so no
# hand-over falls within a test.
START = (datetime.now(UTC) - SHIFT * 1.5).replace(microsecond=0)
HANDOVER = START + SHIFT * 2


def _people(prefix: str) -> list[str]:
    return [f"{prefix}-{n}" for n in ("ann", "bob", "cat")]


def catalog() -> str:
    """Teams ``small`` (10 components) and ``large`` (50), each with three people on call,
    ``quiet`` with none, and ``lead``, a member of both rotating teams, who may override."""
    documents = []
    for team, count in (("small", 10), ("large", 50), ("quiet", 1)):
        documents.append(
            f"kind: Group\nmetadata: {{name: {team}}}\nspec: {{type: team, children: []}}"
        )
        for name in _people(team):
            documents.append(
                f"kind: User\nmetadata: {{name: {name}, title: {name.title()}}}\n"
                f"spec: {{memberOf: [{team}]}}"
            )
        for n in range(count):
            documents.append(
                f"kind: Component\nmetadata: {{name: {team}-svc-{n:02}}}\n"
                f"spec: {{type: service, lifecycle: production, owner: {team}}}"
            )
    return "\n---\n".join(f"apiVersion: backstage.io/v1alpha1\n{d}" for d in documents)


def rotations() -> str:
    lines = ["rotations:"]
    for team in ("small", "large"):
        lines += [
            f"  - team: {team}",
            f"    name: {team.title()} primary",
            f"    start: {START.isoformat()}",
            f"    shiftHours: {SHIFT.total_seconds() / 3600:g}",
            f"    people: [{', '.join(_people(team))}]",
            "    escalationPolicy: Page the primary, then the secondary after 10 minutes.",
        ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def rotations_file(tmp_path: Path) -> Path:
    path = tmp_path / "rotations.yaml"
    path.write_text(rotations())
    return path


@pytest.fixture
async def oncall(atrium_app: Any, rotations_file: Path) -> Any:
    """An app with the on-call plugin alone, its rotations and catalog loaded."""
    plugin = OnCallPlugin(OnCallSettings(oncall_rotations_file=rotations_file))
    client = await atrium_app(plugins=[plugin])
    await client.load_catalog(catalog())
    return client
