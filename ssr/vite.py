"""What a page's client needs from Vite's build manifest (``.vite/manifest.json``).

The entry (``src/boot.ts``) is the page's one module script. After the first paint it fetches
the app (``src/main.tsx``) and the route's lazy chunk with everything they import (``imports``,
recursively; never ``dynamicImports``, which load later, on demand): the page lists those files
for it (``chunks`` in its data). Stylesheets of those chunks are listed too, for the pages that
have none inline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["ENTRY", "PageAssets", "ViteManifest"]

ENTRY = "src/boot.ts"
# The app the entry starts after the first paint (a dynamic import): its chunks are the page's.
APP = "src/main.tsx"
ASSETS_URL = "/assets/"


@dataclass(frozen=True, slots=True)
class PageAssets:
    entry: str
    stylesheets: tuple[str, ...]
    preloads: tuple[str, ...]


class ViteManifest:
    """A build's manifest, read once; a page's assets worked out once per route."""

    def __init__(self, chunks: dict[str, Any]) -> None:
        if ENTRY not in chunks:
            raise ValueError(f"the build's manifest has no entry {ENTRY}")
        self._chunks = chunks
        self._pages: dict[str | None, PageAssets] = {}
        # Every file the build wrote under a hashed name: chunks, their CSS and their assets.
        self.files = frozenset(
            name
            for chunk in chunks.values()
            for name in [chunk.get("file"), *chunk.get("css", ()), *chunk.get("assets", ())]
            if isinstance(name, str)
        )

    @classmethod
    def read(cls, build: Path) -> ViteManifest:
        return cls(orjson.loads((build / ".vite" / "manifest.json").read_bytes()))

    def file_of(self, source: str) -> str | None:
        """The file an entry or chunk of the build (a key such as src/sdk/index.ts) is in."""
        chunk = self._chunks.get(source)
        file = chunk.get("file") if isinstance(chunk, dict) else None
        return file if isinstance(file, str) else None

    def assets(self, route: str | None) -> PageAssets:
        """The entry's assets, and the route chunk's (a key such as src/routes/Team.tsx)."""
        found = self._pages.get(route)
        if found is None:
            found = self._pages[route] = self._work_out(route)
        return found

    def _work_out(self, route: str | None) -> PageAssets:
        stylesheets: list[str] = []
        preloads: list[str] = []
        seen: set[str] = set()

        def visit(key: str) -> None:
            if key in seen or key not in self._chunks:
                return
            seen.add(key)
            chunk = self._chunks[key]
            for imported in chunk.get("imports", ()):
                visit(imported)
            for css in chunk.get("css", ()):
                if ASSETS_URL + css not in stylesheets:
                    stylesheets.append(ASSETS_URL + css)
            if key != ENTRY:
                preloads.append(ASSETS_URL + chunk["file"])

        visit(ENTRY)
        visit(APP)
        if route is not None:
            if route not in self._chunks:
                raise ValueError(f"the build's manifest has no route chunk {route}")
            visit(route)
        entry = ASSETS_URL + self._chunks[ENTRY]["file"]
        return PageAssets(entry, tuple(stylesheets), tuple(preloads))
