"""The rotations file: who takes turns being on call for a team, and who is on call now.

Read with Atrium's YAML helper (one document, plain JSON values, errors with their line) and
validated by pydantic; nothing here knows GraphQL or the database. ``Rotations`` re-reads the
file when it changes on disk and keeps the last good one when the new one is broken.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

from graph.plugin import InvalidRef, InvalidYaml, load_yaml_document, normalize_ref
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

__all__ = ["InvalidRotations", "OnCallNow", "Rotation", "Rotations", "read_rotations"]

log = logging.getLogger(__name__)


class InvalidRotations(Exception):
    """The rotations file cannot be read, or says something that is not a rotation."""


def _ref_of(kind: str) -> AfterValidator:
    def check(text: str) -> str:
        try:
            ref = normalize_ref(text, default_kind=kind)
        except InvalidRef as exc:
            raise ValueError(str(exc)) from None
        if not ref.startswith(f"{kind}:"):
            raise ValueError(f"{text!r} is not a {kind}")
        return ref

    return AfterValidator(check)


def _aware(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("give a time zone (2026-01-05T09:00:00Z)")
    return moment.astimezone(UTC)


class Rotation(BaseModel):
    """One team's rotation: ``people`` take turns of ``shiftHours`` from ``start`` on, each
    the primary for a shift and the next one the secondary."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    team: Annotated[str, _ref_of("group")]
    name: str = Field(min_length=1, max_length=200)
    people: list[Annotated[str, _ref_of("user")]] = Field(min_length=1, max_length=500)
    start: Annotated[datetime, AfterValidator(_aware)]
    shift_hours: float = Field(alias="shiftHours", gt=0, le=24 * 365)
    escalation_policy: str = Field(alias="escalationPolicy", min_length=1, max_length=2000)

    def at(self, moment: datetime) -> OnCallNow:
        """Who is on call at ``moment`` (before ``start``: the first shift's people)."""
        shift = timedelta(hours=self.shift_hours)
        index = max(0, math.floor((moment - self.start) / shift))
        count = len(self.people)
        return OnCallNow(
            rotation=self,
            primary=self.people[index % count],
            secondary=self.people[(index + 1) % count] if count > 1 else None,
            until=self.start + shift * (index + 1),
        )


@dataclass(frozen=True, slots=True)
class OnCallNow:
    rotation: Rotation
    primary: str
    secondary: str | None
    until: datetime


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rotations: list[Rotation] = Field(default_factory=list, max_length=10_000)


def read_rotations(text: str) -> dict[str, Rotation]:
    """The rotations of a file's text, by team ref; ``InvalidRotations`` says what is wrong."""
    try:
        document = load_yaml_document(text)
        parsed = _File.model_validate(document)
    except InvalidYaml as exc:
        raise InvalidRotations(f"not YAML: {exc}") from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'the file'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidRotations(problems) from None
    found: dict[str, Rotation] = {}
    for rotation in parsed.rotations:
        if rotation.team in found:
            raise InvalidRotations(f"{rotation.team} has two rotations")
        found[rotation.team] = rotation
    return found


class Rotations:
    """The rotations of a file, read again when it changes (its modification time or size)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._seen: tuple[int, int] | None = None
        self._by_team: dict[str, Rotation] = {}
        if path is not None:
            self.refresh(strict=True)

    def refresh(self, *, strict: bool = False) -> None:
        if self.path is None:
            return
        try:
            stat = self.path.stat()
            seen = (stat.st_mtime_ns, stat.st_size)
            if seen == self._seen:
                return
            by_team = read_rotations(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, InvalidRotations) as exc:
            if strict:
                raise InvalidRotations(f"rotations file {self.path}: {exc}") from None
            log.warning("rotations file unchanged: %s: %s", self.path, exc)
            return
        self._seen, self._by_team = seen, by_team

    def of_team(self, team_ref: str | None) -> Rotation | None:
        """The team's rotation as last read (``refresh`` reads the file again if it changed)."""
        return self._by_team.get(team_ref) if team_ref else None


def now() -> datetime:
    return datetime.now(UTC)
