"""The GraphQL face of a change hook: where it posts, what it receives, how delivery goes.
Its secret is write-only: no field returns it."""

from __future__ import annotations

from datetime import datetime

import strawberry

from sources.changes.hooks import ChangeHook as StoredHook

__all__ = ["ChangeHook"]


@strawberry.type(
    description="A webhook change events are posted to, signed with its secret (never shown)."
)
class ChangeHook:
    id: strawberry.ID
    url: str
    kinds: list[str] | None = strawberry.field(
        description="The entity kinds whose changes it receives; null: every kind."
    )
    paused: bool = strawberry.field(
        description="Deliveries wait while paused, and go out in order on resume."
    )
    failing: bool = strawberry.field(
        description="Its receiver's latest attempt failed (it is retried with backoff), or "
        "deliveries were given up on (see failedDeliveries)."
    )
    last_error: str | None = strawberry.field(description="Why the latest failure failed.")
    last_error_at: datetime | None
    last_delivered_at: datetime | None = strawberry.field(
        description="When its receiver last took a delivery."
    )
    next_attempt_at: datetime | None = strawberry.field(
        description="While failing: when its receiver is tried again."
    )
    pending_deliveries: int = strawberry.field(
        description="Changes waiting to be delivered (or retried)."
    )
    failed_deliveries: int = strawberry.field(
        description="Changes given up on after retrying for ATRIUM_CHANGE_HOOKS_RETRY_FOR; "
        "redeliverChangeHook sends them again. Later changes of their refs wait behind them."
    )
    created_by: str
    created_at: datetime

    @classmethod
    def of(cls, hook: StoredHook) -> ChangeHook:
        return cls(
            id=strawberry.ID(str(hook.id)),
            url=hook.url,
            kinds=hook.kinds,
            paused=hook.paused,
            failing=hook.failing,
            last_error=hook.last_error,
            last_error_at=hook.last_error_at,
            last_delivered_at=hook.last_delivered_at,
            next_attempt_at=hook.retry_at if hook.failures else None,
            pending_deliveries=hook.pending,
            failed_deliveries=hook.failed,
            created_by=hook.created_by,
            created_at=hook.created_at,
        )
