"""Lighthouse (npm ``lighthouse``, installed in tests/clients) run against a console page with
Debian's Chromium (``bench.lighthouse.lighthouse``), and what a category's failing audits say,
for an assertion's message."""

from __future__ import annotations

from typing import Any

# One runner for the tests and the benchmark (its failures say why).
from bench.lighthouse import LIGHTHOUSE, lighthouse

__all__ = ["LIGHTHOUSE", "failing_audits", "lighthouse"]

ITEMS_SHOWN = 3  # items of a failing audit shown


def failing_audits(report: dict[str, Any], category: str) -> list[str]:
    """Each audit that costs ``category`` points: its id, title, and its first items."""
    lines = []
    for ref in report["categories"][category]["auditRefs"]:
        audit = report["audits"][ref["id"]]
        if not ref["weight"] or audit["score"] is None or audit["score"] >= 1:
            continue
        lines.append(f"  {audit['id']}: {audit['title']} (score {audit['score']})")
        if audit.get("errorMessage"):
            lines.append(f"    error: {audit['errorMessage']}")
        items = (audit.get("details") or {}).get("items") or []
        lines.extend(f"    - {_item(item)}" for item in items[:ITEMS_SHOWN])
        if len(items) > ITEMS_SHOWN:
            lines.append(f"    ... and {len(items) - ITEMS_SHOWN} more")
    return lines


def _item(item: dict[str, Any]) -> str:
    """An item of an audit's details, as a developer would look for it on the page."""
    node = item.get("node")
    if isinstance(node, dict):
        parts = [node.get("selector"), node.get("snippet"), node.get("explanation")]
        return " | ".join(str(p)[:300].replace("\n", " ") for p in parts if p)
    fields = []
    for key, value in item.items():
        if isinstance(value, dict):
            value = value.get("url") or value.get("text") or value.get("value")
        if value not in (None, "", [], {}):
            fields.append(f"{key}={value}")
    return "; ".join(fields)[:400]
