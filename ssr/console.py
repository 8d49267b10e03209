"""The console's build as the server uses it: Vite's manifest, the persisted operations the
pages run (by name, from the build's persisted-query manifest), and the templates."""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import orjson

from graph.persisted import read_manifest
from ssr.vite import ViteManifest

__all__ = ["Console", "PageCache", "embed_json"]

log = logging.getLogger("atrium.console")

PERSISTED_MANIFEST = "persisted-query-manifest.json"
_TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class Console:
    build: Path
    vite: ViteManifest
    # (hash, body, name) of every operation of the client, as `atrium persisted load` reads them.
    documents: list[tuple[str, str, str | None]]
    operations: dict[str, str]  # name → hash
    templates: jinja2.Environment
    # Identifies the build in page ETags: a new build makes every page new.
    version: str
    pages: PageCache = field(default_factory=lambda: PageCache(max_bytes=16 * 2**20))
    # The users a person may act as in development, and when they were listed.
    demo_users: tuple[float, list[dict[str, Any]]] = (-1e9, [])
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
        if not (build / ".vite" / "manifest.json").is_file():
            log.warning(
                "the console is not built: run `make web` (no %s)", build / ".vite/manifest.json"
            )
            return None
        vite = ViteManifest.read(build)
        documents = read_manifest(build / PERSISTED_MANIFEST)
        operations = {name: digest for digest, _, name in documents if name}
        manifest_bytes = (build / ".vite" / "manifest.json").read_bytes()
        version = hashlib.blake2b(
            manifest_bytes + (build / PERSISTED_MANIFEST).read_bytes(), digest_size=8
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
        environment = _environment(panels)
        return cls(build, vite, documents, operations, environment, version, panels=panels)


def panel_template(panel: Any) -> str | None:
    """A panel's template, as the page's Jinja environment names it."""
    return f"{panel.plugin_id}/{panel.template.name}" if panel.template is not None else None


def _environment(panels: list[Any]) -> jinja2.Environment:
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
    env.filters["entity_url"] = entity_url
    env.filters["entity_name"] = lambda ref: str(ref).rpartition("/")[2]
    env.filters["workload_url"] = workload_url
    env.globals["cluster_errors"] = cluster_errors
    return env


def entity_url(entity: dict[str, Any]) -> str:
    """``/catalog/{namespace}/{kind}/{name}`` of an entity, from its ref."""
    kind, _, rest = str(entity.get("ref", "")).partition(":")
    namespace, _, name = rest.partition("/")
    return "/catalog/" + "/".join(quote(part, safe="") for part in (namespace, kind, name))


def workload_url(workload: dict[str, Any]) -> str:
    parts = (workload.get("cluster", ""), workload.get("namespace", ""), workload.get("name", ""))
    return "/workloads/" + "/".join(quote(str(part), safe="") for part in parts)


def cluster_errors(items: Any) -> dict[str, str]:
    """Clusters that cannot answer, by name, from ``clusters`` or ``clusterErrors``."""
    found: dict[str, str] = {}
    for item in items or ():
        if "healthy" in item:
            if not item.get("healthy"):
                found[item["name"]] = item.get("lastError") or "not answering"
        else:
            found[item["cluster"]] = item.get("message") or "not answering"
    return found


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
    """Rendered pages by ETag. A page's ETag is made of its operations' answers' ETags, so a
    change to anything it shows (which drops those answers) gives it a new ETag: a kept page
    is never stale, only unused, and the oldest go first."""

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._size = 0
        self._pages: OrderedDict[str, bytes] = OrderedDict()

    def get(self, etag: str) -> bytes | None:
        found = self._pages.get(etag)
        if found is not None:
            self._pages.move_to_end(etag)
        return found

    def put(self, etag: str, page: bytes) -> None:
        if len(page) > self.max_bytes // 8 or etag in self._pages:
            return
        self._pages[etag] = page
        self._size += len(page)
        while self._size > self.max_bytes:
            _, dropped = self._pages.popitem(last=False)
            self._size -= len(dropped)
