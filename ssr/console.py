"""The console's build as the server uses it: Vite's manifest, the persisted operations the
pages run (by name, from the build's persisted-query manifest), the kit's templates and the
inline critical CSS, and the Jinja environment the pages render with."""

from __future__ import annotations

import base64
import hashlib
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import orjson
from markupsafe import Markup

import ssr.catalog_url as catalog_url
import ssr.present as present
from graph.persisted import read_manifest
from ssr.kit import Kit
from ssr.vite import ViteManifest

__all__ = ["Console", "Inline", "PageCache", "embed_json"]

log = logging.getLogger("atrium.console")

PERSISTED_MANIFEST = "persisted-query-manifest.json"
SERVER_FILES = ".server"  # what the build writes for the server alone (not served)
_TEMPLATES = Path(__file__).parent / "templates"

# Runs before the first paint: the colour scheme a person chose (the toggle), so a dark page
# never flashes light. Allowed by its hash in the pages' Content-Security-Policy.
THEME_SCRIPT = (
    'try{var s=localStorage.getItem("atrium-color-scheme");'
    'if(s==="dark"||s==="light")document.documentElement.setAttribute("data-color-scheme",s)}'
    "catch(e){}"
)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@dataclass(frozen=True, slots=True)
class Inline:
    """What every page carries inline, and the hashes the page's policy allows them by."""

    style: Markup
    script: Markup
    logo: Markup
    style_hash: str
    script_hash: str

    @classmethod
    def read(cls, build: Path) -> Inline:
        style = (build / SERVER_FILES / "critical.css").read_text()
        logo = (build / "logo.svg").read_text().strip()
        return cls(
            Markup(style),
            Markup(THEME_SCRIPT),
            Markup(logo),
            _csp_hash(style),
            _csp_hash(THEME_SCRIPT),
        )


@dataclass
class Console:
    build: Path
    vite: ViteManifest
    # (hash, body, name) of every operation of the client, as `atrium persisted load` reads them.
    documents: list[tuple[str, str, str | None]]
    operations: dict[str, str]  # name → hash
    templates: jinja2.Environment
    inline: Inline
    # Identifies the build in page ETags: a new build makes every page new.
    version: str
    pages: PageCache = field(default_factory=lambda: PageCache(max_bytes=16 * 2**20))
    # The users a person may act as in development, and when they were listed.
    demo_users: tuple[float, list[dict[str, Any]]] = (-1e9, [])
    # People the pages name (their viewer), by ref: when they were read, and their entry.
    people: dict[str, tuple[float, dict[str, Any] | None]] = field(default_factory=dict)
    # Panels plugins add to pages (graph.plugin.PagePanel).
    panels: list[Any] = field(default_factory=list)

    def panels_of(self, page: str, kind: str | None = None) -> list[Any]:
        """The panels of a page (an entity page's for this kind), in plugin order."""
        return [
            p
            for p in self.panels
            if p.page == page and (p.kinds is None or kind is None or kind in p.kinds)
        ]

    @classmethod
    def load(cls, build: Path, panels: list[Any] | None = None) -> Console | None:
        """The build at ``build``, or None (logged) when there is none or it is incomplete."""
        needed = [
            build / ".vite" / "manifest.json",
            build / PERSISTED_MANIFEST,
            build / SERVER_FILES / "kit.json",
            build / SERVER_FILES / "critical.css",
        ]
        missing = [str(path) for path in needed if not path.is_file()]
        if missing:
            log.warning("the console is not built: run `make web` (no %s)", ", ".join(missing))
            return None
        vite = ViteManifest.read(build)
        documents = read_manifest(build / PERSISTED_MANIFEST)
        operations = {name: digest for digest, _, name in documents if name}
        version = hashlib.blake2b(
            b"".join(path.read_bytes() for path in needed), digest_size=8
        ).hexdigest()
        panels = list(panels or [])
        for panel in panels:
            if panel.operation not in operations:
                log.error(
                    "plugin %s's panel needs the console operation %s, which the build lacks: "
                    "rebuild it (make web)",
                    panel.plugin_id,
                    panel.operation,
                )
        panels = [p for p in panels if p.operation in operations]
        kit = Kit.read(build / SERVER_FILES / "kit.json")
        environment = _environment(panels, kit)
        return cls(
            build,
            vite,
            documents,
            operations,
            environment,
            Inline.read(build),
            version,
            panels=panels,
        )


def panel_template(panel: Any) -> str | None:
    """A panel's template, as the page's Jinja environment names it."""
    return f"{panel.plugin_id}/{panel.template.name}" if panel.template is not None else None


def _environment(panels: list[Any], kit: Kit) -> jinja2.Environment:
    # The core's templates, and each plugin's panel templates under its id (``deployments/x``).
    folders: dict[str, list[str]] = {}
    for panel in panels:
        if panel.template is not None:
            folders.setdefault(panel.plugin_id, []).append(str(panel.template.parent))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [
                jinja2.FileSystemLoader(_TEMPLATES),
                jinja2.PrefixLoader(
                    {pid: jinja2.FileSystemLoader(dirs) for pid, dirs in folders.items()}
                ),
            ]
        ),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.ChainableUndefined,
    )
    env.filters["entity_url"] = present.entity_url
    env.filters["workload_url"] = present.workload_url
    env.filters["display_name"] = present.display_name
    env.filters["picture"] = present.picture
    env.globals["ui"] = kit.globals()
    for name in present.__all__:
        env.globals[name] = getattr(present, name)
    env.globals |= {
        "lifecycle_tone": present.lifecycle_tone,
        "catalog_columns": catalog_url.COLUMNS,
        "catalog_href": catalog_url.href,
        "catalog_sort_href": catalog_url.sort_href,
        "catalog_sorted": catalog_url.sorted_by,
        "catalog_choice": catalog_url.choice,
        "catalog_options": catalog_url.options,
        "catalog_kind_href": catalog_url.kind_href,
        "catalog_owner_href": catalog_url.owner_href,
    }
    return env


_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def embed_json(value: Any) -> str:
    """JSON for a ``<script type="application/json">``: nothing in it can end the element or
    start markup, and it stays the same JSON."""
    raw = orjson.dumps(value)
    for char, escaped in _ESCAPES:
        raw = raw.replace(char, escaped)
    return raw.decode()


class PageCache:
    """Rendered pages by ETag (each with its compressed forms). A page's ETag is made of what
    it renders: its address, its operations' answers' ETags, the build and who is asking; so
    a change to anything it shows gives it a new ETag: a kept page is never stale, only unused,
    and the oldest go first."""

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._size = 0
        self._pages: OrderedDict[str, dict[str, bytes]] = OrderedDict()

    def get(self, etag: str) -> dict[str, bytes] | None:
        found = self._pages.get(etag)
        if found is not None:
            self._pages.move_to_end(etag)
        return found

    def put(self, etag: str, forms: dict[str, bytes]) -> None:
        size = sum(len(body) for body in forms.values())
        if size > self.max_bytes // 8 or etag in self._pages:
            return
        self._pages[etag] = forms
        self.grew(etag, size)

    def grew(self, etag: str, size: int) -> None:
        """A kept page gained ``size`` bytes (a form compressed for another encoding)."""
        if etag not in self._pages:
            return
        self._size += size
        while self._size > self.max_bytes:
            _, dropped = self._pages.popitem(last=False)
            self._size -= sum(len(body) for body in dropped.values())
