"""Lighthouse's accessibility, best-practices and SEO categories score 100 on five pages of the
console, as a signed-in demo user sees them; a page that scores less names the audits to fix.

Performance is not asserted here (it depends on the machine's load): ``make bench --only
console`` measures it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.console.demo import OWNER
from tests.console.lighthouse import failing_audits, lighthouse
from tests.console.server import Served
from tests.console.test_console_pages import ENTITY_PATH, TEAM_PATH

PAGES = {
    "home": "/",
    "catalog": "/catalog",
    "component": ENTITY_PATH,
    "team": TEAM_PATH,
    "api": "/catalog/default/api/checkout-api",
}
CATEGORIES = ("accessibility", "best-practices", "seo")
# The development server's demo cookie: Lighthouse sends it with every request of the page.
SIGNED_IN = {"Cookie": f"atrium_demo_user={OWNER}"}
# Runs at once: three take the five pages in about half the time of one after another on two
# cores (85 s against 46 s, on a busy machine); five at once are no faster.
AT_ONCE = 3


@pytest.fixture(scope="module")
async def reports(served: Served) -> dict[str, dict[str, Any] | BaseException]:
    """Every page's report, or what stopped Lighthouse on it (each page's test fails alone)."""
    at_once = asyncio.Semaphore(AT_ONCE)

    async def audit(path: str) -> dict[str, Any]:
        async with at_once:
            return await lighthouse(served.url(path), categories=CATEGORIES, headers=SIGNED_IN)

    results = await asyncio.gather(*(audit(p) for p in PAGES.values()), return_exceptions=True)
    return dict(zip(PAGES, results, strict=True))


@pytest.mark.parametrize("name", list(PAGES))
async def test_lighthouse_scores_100(
    reports: dict[str, dict[str, Any] | BaseException], served: Served, name: str
) -> None:
    report = reports[name]
    if isinstance(report, BaseException):
        raise report
    # The page itself was audited, not what a redirect led to.
    assert report["finalDisplayedUrl"] == served.url(PAGES[name]), report["finalDisplayedUrl"]
    scores = {c: report["categories"][c]["score"] for c in CATEGORIES}
    below = [c for c, score in scores.items() if score != 1]
    problems = [
        f"{c}: {'no score' if scores[c] is None else round(scores[c] * 100)}\n"
        + "\n".join(failing_audits(report, c))
        for c in below
    ]
    assert not below, f"{name} ({PAGES[name]}) scores below 100:\n" + "\n".join(problems)
