"""Deploy states and the events that move them, whatever system sent them.

A deploy only moves forward: ``pending`` → ``in_progress`` → one of ``succeeded``, ``failed``,
``cancelled``; a succeeded deploy may later become ``rolled_back`` when a rollback replaces it.
An event that would move it backwards (a late ``in_progress`` after ``success``) changes
nothing, so events may arrive in any order and any number of times.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Final

__all__ = [
    "FINISHED",
    "IN_FLIGHT",
    "DeployState",
    "Incoming",
    "IncomingRelease",
    "may_move",
]


class DeployState(Enum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ROLLED_BACK = "rolled_back"
    CANCELLED = "cancelled"


_RANK: Final = {
    "pending": 0,
    "in_progress": 1,
    "succeeded": 2,
    "failed": 2,
    "cancelled": 2,
    "rolled_back": 3,
}
IN_FLIGHT: Final = frozenset({"pending", "in_progress"})
FINISHED: Final = frozenset({"succeeded", "failed", "cancelled", "rolled_back"})


def may_move(old: str, new: str) -> bool:
    """Whether a deploy in state ``old`` may take state ``new``: forward only."""
    if old in IN_FLIGHT:
        return _RANK[new] > _RANK[old]
    return old == "succeeded" and new == "rolled_back"


@dataclass(frozen=True, slots=True)
class IncomingRelease:
    version: str
    commit_sha: str | None = None
    commit_time: datetime | None = None
    artifact: str | None = None
    created_by: str | None = None
    build_url: str | None = None


@dataclass(frozen=True, slots=True)
class Incoming:
    """One event about one deploy, in Atrium's terms, from any source."""

    source: str  # "github", "webhook"
    external_id: str  # the source's id of the deploy
    subject: str  # what names the component: a repository's full name, or an entity ref
    stage: str
    release: IncomingRelease
    state: str | None  # None: the event names no state (a deploy just created is pending)
    at: datetime  # when it happened, by the sender's clock
    started_at: datetime | None = None
    actor: str | None = None
    url: str | None = None
    is_rollback: bool = False
    message: str | None = None
