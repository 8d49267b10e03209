"""The console's build as the server uses it: Vite's manifest, the persisted operations the
pages run (by name, from the build's persisted-query manifest), the kit's templates and the
inline critical CSS, and the Jinja environment the pages render with."""

from __future__ import annotations

import base64
import hashlib
import logging
import re
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
from ssr.plugin_console import InvalidConsole, PluginModule
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
    # Plugins' console parts from their packages, by plugin id (ssr.plugin_console).
    plugins: dict[str, PluginModule] = field(default_factory=dict)
    # The page's import map when there are any: the console's SDK and React for their modules.
    import_map: ImportMap | None = None
    # The persisted-query manifest the client reads: the build's operations and the plugins'.
    manifest: bytes = b""

    def plugin_modules(self) -> list[dict[str, Any]]:
        """The plugins' console modules, each with the pages it has panels on (page data)."""
        return [
            {
                "plugin": pid,
                "module": module.url,
                "pages": sorted({p.page for p in self.panels if p.plugin_id == pid}),
            }
            for pid, module in self.plugins.items()
        ]

    def panels_of(self, page: str, kind: str | None = None) -> list[Any]:
        """The panels of a page (an entity page's for this kind), in plugin order."""
        return [
            p
            for p in self.panels
            if p.page == page and (p.kinds is None or kind is None or kind in p.kinds)
        ]

    @classmethod
    def load(
        cls,
        build: Path,
        panels: list[Any] | None = None,
        plugins: list[PluginModule] | None = None,
    ) -> Console | None:
        """The build at ``build``, or None (logged) when there is none or it is incomplete;
        with the operations of the plugins' console parts (``plugins``) among its own."""
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
        plugins = list(plugins or [])
        import_map = ImportMap.read(vite) if plugins else None
        if plugins and import_map is None:
            log.error(
                "the console's build has no SDK for plugins' modules (%s): rebuild it "
                "(make web); their panels show only as the server renders them",
                ", ".join(m.plugin_id for m in plugins),
            )
        for module in plugins:
            for digest, body, name in module.documents:
                if name in operations:
                    raise InvalidConsole(
                        f"plugin {module.plugin_id}'s console operation {name} is also one of "
                        "the console's own: rename it"
                    )
                operations[name] = digest
                documents.append((digest, body, name))
        version = hashlib.blake2b(
            b"".join(path.read_bytes() for path in needed)
            + "".join(m.version for m in plugins).encode(),
            digest_size=8,
        ).hexdigest()
        panels = list(panels or [])
        shipped = {m.plugin_id for m in plugins}
        for panel in panels:
            if panel.operation not in operations:
                log.error(
                    "plugin %s's panel needs the console operation %s, which %s",
                    panel.plugin_id,
                    panel.operation,
                    "is not among the .graphql files of its console folder (builder.console)"
                    if panel.plugin_id in shipped
                    else "neither the console's build nor a console folder of the plugin "
                    "(builder.console) has",
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
            plugins={m.plugin_id: m for m in plugins} if import_map is not None else {},
            import_map=import_map,
            manifest=_manifest(documents),
        )


@dataclass(frozen=True, slots=True)
class ImportMap:
    """The page's import map (inline, allowed by its hash): the bare names a plugin's module
    imports, mapped to the console's own modules, so it shares the console's React (one copy:
    hooks and hydration need that) and SDK."""

    text: Markup
    hash: str

    @classmethod
    def read(cls, vite: ViteManifest) -> ImportMap | None:
        imports = {}
        for name, source in SDK_MODULES.items():
            file = vite.file_of(source)
            if file is None:
                return None
            imports[name] = "/assets/" + file
        text = embed_json({"imports": imports})
        return cls(Markup(text), _csp_hash(text))


# The names a plugin's module imports from the console, and the build's entries exporting them.
SDK_MODULES = {
    "@atrium/console": "src/sdk/index.ts",
    "react": "src/sdk/react.ts",
    "react/jsx-runtime": "src/sdk/jsx-runtime.ts",
}


def _manifest(documents: list[tuple[str, str, str | None]]) -> bytes:
    """An Apollo persisted-query manifest of these documents (what the client reads ids from)."""
    operations = [
        {"id": digest, "name": name, "type": _kind(body), "body": body}
        for digest, body, name in documents
        if name
    ]
    return orjson.dumps(
        {"format": "apollo-persisted-query-manifest", "version": 1, "operations": operations}
    )


def _kind(body: str) -> str:
    first = body.lstrip().split(None, 1)[0] if body.strip() else "query"
    return first if first in ("query", "mutation", "subscription") else "query"


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
    env.filters["spaceless"] = spaceless
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


_BETWEEN_TAGS = re.compile(r">\s+<")


def spaceless(html: str) -> Markup:
    """A hydrated panel's HTML without the blanks between its tags, which JSX has not either
    (React would find text nodes where it renders none)."""
    return Markup(_BETWEEN_TAGS.sub("><", str(html)).strip())


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
