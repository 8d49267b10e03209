"""What needs attention in a team's alerts: alerts firing now (active: neither silenced nor
inhibited) on its components, by each one's matchers (its ``service`` label, or its
selector annotation). One call to Alertmanager for all of them, matched here, as a team's
``Group.alerts`` does."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from graph.plugin import AttentionItem, AttentionLevel, Context, entity, entity_href
from plugins.observability.alertmanager import Matcher, matchers_of
from plugins.observability.fields import PLUGIN_ID
from plugins.observability.metrics import Observability
from plugins.observability.prometheus import Unavailable

__all__ = ["alert_attention"]

log = logging.getLogger("atrium.observability")

# Severities that page someone: the rest are worth a look, not an interruption.
CRITICAL_SEVERITIES: Final = frozenset({"critical", "page"})


async def alert_attention(context: Context, refs: Sequence[str]) -> list[AttentionItem]:
    observability: Observability | None = context.extras.get(PLUGIN_ID)
    components = [ref for ref in refs if ref.startswith("component:")]
    if observability is None or not components:
        return []
    alertmanager = observability.alertmanager
    if alertmanager is None:
        # Not configured is a choice, said at start-up and on every alerts panel; not a
        # failure worth a warning on every home page.
        log.debug("alerts left out of attention: no Alertmanager configured")
        return []
    selectors: list[tuple[str, list[Matcher]]] = []
    for found in await asyncio.gather(*(entity(context, ref) for ref in components)):
        if found is None:
            continue
        # The JSON scalar's static type is opaque; an entity's annotations are a mapping.
        annotations: dict[str, Any] = dict(found.annotations or {})  # type: ignore[arg-type]
        try:
            selectors.append((found.ref, matchers_of(found.name, annotations)))
        except ValueError:
            continue  # an unusable selector is said on the component's own page
    if not selectors:
        return []
    try:
        raw = await alertmanager.alerts()
    except Unavailable as exc:
        # Down or slow: the rest of the answer stands; a warning, not a traceback, each time.
        log.warning("alerts left out of attention", extra={"error": str(exc)})
        return []
    items: list[AttentionItem] = []
    for alert in raw:
        if (alert.get("status") or {}).get("state") != "active":
            continue
        labels = alert.get("labels") or {}
        for ref, matchers in selectors:
            if all(m.matches(labels) for m in matchers):
                items.append(_item(ref, alert, labels))
    return items


def _item(ref: str, alert: dict[str, Any], labels: dict[str, str]) -> AttentionItem:
    annotations = alert.get("annotations") or {}
    name = str(labels.get("alertname") or "Alert")
    summary = annotations.get("summary")
    severity = str(labels.get("severity") or "").lower()
    started = alert.get("startsAt")
    return AttentionItem(
        ref,
        AttentionLevel.CRITICAL if severity in CRITICAL_SEVERITIES else AttentionLevel.WARNING,
        f"{name}: {summary}" if summary else name,
        detail=annotations.get("description") or None,
        since=_when(started) if isinstance(started, str) else None,
        href=entity_href(ref, "alerts"),
    )


def _when(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
