"""The overrides table (migrations/0001_overrides.sql): named statements, ``$n`` parameters."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from graph.plugin import DataLoader, LoaderServices

__all__ = ["OVERRIDES_BY_COMPONENT", "Override", "override_loader", "save_override"]

# The overrides in force for a batch of components: one statement however many there are.
OVERRIDES_BY_COMPONENT = """
select component_ref, primary_ref, until, reason, created_by, created_at
from oncall_overrides
where component_ref = any($1::text[]) and until > now()
"""

SAVE_OVERRIDE = """
insert into oncall_overrides (component_ref, primary_ref, until, reason, created_by)
values ($1, $2, $3, $4, $5)
on conflict (component_ref) do update
set primary_ref = excluded.primary_ref, until = excluded.until, reason = excluded.reason,
    created_by = excluded.created_by, created_at = now()
returning component_ref, primary_ref, until, reason, created_by, created_at
"""


@dataclass(frozen=True, slots=True)
class Override:
    component_ref: str
    primary_ref: str
    until: datetime
    reason: str | None
    created_by: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        """As the audit log keeps it."""
        return {
            "primary": self.primary_ref,
            "until": self.until.isoformat(),
            "reason": self.reason,
            "by": self.created_by,
        }


def override_loader(services: LoaderServices) -> DataLoader[str, Override | None]:
    """``oncall.overrides``: a component's override in force, by the component's ref."""

    async def load(refs: list[str]) -> list[Override | None]:
        rows = await services.db.fetch(OVERRIDES_BY_COMPONENT, refs)
        found = {row["component_ref"]: Override(**dict(row)) for row in rows}
        return [found.get(ref) for ref in refs]

    return DataLoader(load_fn=load)


async def save_override(
    db: Any, component_ref: str, primary_ref: str, until: datetime, reason: str | None, by: str
) -> Override:
    """Store a component's override (replacing any); the override as stored."""
    rows = await db.fetch(SAVE_OVERRIDE, component_ref, primary_ref, until, reason, by)
    return Override(**dict(rows[0]))
