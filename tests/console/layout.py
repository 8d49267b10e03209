"""Layout shift between the server's HTML and React's first render, scored as Chrome scores a
layout shift (impact fraction times distance fraction).

The browser's own layout-shift entries cannot see this one: React's first render replaces
every node under #root (createRoot, not hydration), and new nodes never count as shifted. So
the same landmarks (sections, headings, paragraphs, list items, links by address, form
fields, terms) are located in the server's HTML (JavaScript off) and after React's render,
and their moves scored."""

from __future__ import annotations

from dataclasses import dataclass

from playwright.async_api import Page

# Visible landmarks of #root, keyed so the server's and React's versions of one match.
LANDMARKS = """() => {
  const seen = new Map();
  const boxes = [];
  for (const el of document.querySelectorAll(
      '#root header, #root section, #root aside, #root fieldset, #root h1, #root h2, #root h3,' +
      ' #root p, #root li, #root dt, #root dd, #root a[href], #root input')) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const what = el.getAttribute('href') || el.getAttribute('aria-label') ||
      el.getAttribute('aria-labelledby') || el.textContent.trim().slice(0, 40);
    const base = el.tagName + ' ' + what;
    const n = seen.get(base) || 0;
    seen.set(base, n + 1);
    boxes.push({key: base + ' #' + n, x: r.x, y: r.y + window.scrollY, w: r.width, h: r.height});
  }
  return {boxes, width: window.innerWidth, height: window.innerHeight};
}"""

MIN_MOVE = 3.0  # pixels: Chrome ignores smaller moves too
CELL = 8  # pixels: the grid the impact region is measured on


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float


@dataclass
class Layout:
    boxes: dict[str, Box]
    width: int
    height: int


async def landmarks(page: Page) -> Layout:
    found = await page.evaluate(LANDMARKS)
    boxes = {b["key"]: Box(b["x"], b["y"], b["w"], b["h"]) for b in found["boxes"]}
    return Layout(boxes, int(found["width"]), int(found["height"]))


def shift_score(before: Layout, after: Layout) -> tuple[float, list[str]]:
    """The layout-shift score of moving from `before` to `after`, and what moved."""
    moved = [
        (key, before.boxes[key], after.boxes[key])
        for key in before.boxes.keys() & after.boxes.keys()
        if max(
            abs(before.boxes[key].x - after.boxes[key].x),
            abs(before.boxes[key].y - after.boxes[key].y),
        )
        >= MIN_MOVE
    ]
    if not moved:
        return 0.0, []
    width, height = after.width, after.height
    cells: set[tuple[int, int]] = set()
    for _, old, new in moved:
        for box in (old, new):
            left, top = max(0.0, box.x), max(0.0, box.y)
            right, bottom = min(float(width), box.x + box.w), min(float(height), box.y + box.h)
            for cx in range(int(left // CELL), int((right - 1) // CELL) + 1 if right > left else 0):
                for cy in range(
                    int(top // CELL), int((bottom - 1) // CELL) + 1 if bottom > top else 0
                ):
                    cells.add((cx, cy))
    impact = min(1.0, len(cells) * CELL * CELL / (width * height))
    distance = max(max(abs(o.x - n.x), abs(o.y - n.y)) for _, o, n in moved) / max(width, height)
    described = [f"{key}: ({o.x:.0f},{o.y:.0f}) -> ({n.x:.0f},{n.y:.0f})" for key, o, n in moved]
    return impact * distance, described
