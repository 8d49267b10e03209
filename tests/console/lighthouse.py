"""Lighthouse (npm ``lighthouse``, installed in tests/clients) run against a console page with
Debian's Chromium, and what a category's failing audits say, for an assertion's message."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Mapping, Sequence
from typing import Any

from tests.conftest import ROOT
from tests.console.demo import CHROMIUM

__all__ = ["LIGHTHOUSE", "failing_audits", "lighthouse"]

LIGHTHOUSE = ROOT / "tests" / "clients" / "node_modules" / ".bin" / "lighthouse"
# Headless, as root; and no name resolved but the server's address, so the browser's own
# background requests (sign-in, component and extension updates) go nowhere on a closed network.
CHROME_FLAGS = (
    "--headless=new --no-sandbox --host-resolver-rules='MAP * ~NOTFOUND, EXCLUDE 127.0.0.1'"
)
RUN_TIMEOUT = 150.0  # one run is 10-30 s; five at once on two cores take about twice as long
ITEMS_SHOWN = 3


async def lighthouse(
    url: str, *, categories: Sequence[str], headers: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Lighthouse's JSON report of ``url`` (the default mobile profile) for ``categories``."""
    assert LIGHTHOUSE.is_file(), (
        f"no Lighthouse at {LIGHTHOUSE}: make test installs it (tests/clients)"
    )
    process = await asyncio.create_subprocess_exec(
        str(LIGHTHOUSE),
        url,
        "--quiet",
        "--output=json",  # on stdout
        f"--chrome-flags={CHROME_FLAGS}",
        f"--only-categories={','.join(categories)}",
        f"--extra-headers={json.dumps(dict(headers or {}))}",
        env={**os.environ, "CHROME_PATH": CHROMIUM},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
    except TimeoutError:
        raise AssertionError(f"lighthouse {url} took over {RUN_TIMEOUT:.0f} s") from None
    finally:
        await _stop(process)
    # A page that failed to load still has its report written, with the reason, before the
    # exit status says so.
    try:
        report: dict[str, Any] = json.loads(stdout)
    except ValueError:
        report = {}
    error = report.get("runtimeError")
    assert not error, f"lighthouse could not load {url}: {error}"
    assert process.returncode == 0 and report, (
        f"lighthouse {url} exited with {process.returncode}:\n{stderr.decode()[-3000:]}"
    )
    return report


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGINT first: Lighthouse then kills the Chromium it started (its own process group)."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    try:
        await asyncio.wait_for(process.wait(), 10)
    except TimeoutError:
        process.kill()
        await process.wait()


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
