"""The catalog page's state as its address says it, and the variables of its operations: the
server's half of ``web/src/catalogUrl.ts`` (tests/ssr/test_present.py compares them).

``/catalog?q=pay&kind=component&owner=group:default/payments&lifecycle=production&sort=-owner
&after=<cursor>``: the search, filters (each repeatable; ``owner=mine`` is the viewer's teams,
``starred=1`` what they starred), the order (a column, ``-`` for descending) and the page (a
cursor). With no kind, the catalog shows what teams build (not people or teams themselves).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from ssr.present import kind_label

__all__ = [
    "DEFAULT_KINDS",
    "PAGE_SIZE",
    "SORTS",
    "CatalogState",
    "facet_variables",
    "parse",
    "variables",
]

PAGE_SIZE = 25
DEFAULT_KINDS = ("component", "api", "resource", "system", "domain")
FILTERS = ("kind", "type", "owner", "lifecycle", "tag", "system")
# The columns a person may sort by, as the API orders them.
SORTS = {
    "name": "TITLE",
    "kind": "KIND",
    "type": "TYPE",
    "owner": "OWNER",
    "system": "SYSTEM",
    "lifecycle": "LIFECYCLE",
}


@dataclass(frozen=True)
class CatalogState:
    search: str | None = None
    filters: dict[str, list[str]] = field(default_factory=dict)
    mine: bool = False
    starred: bool = False
    sort: str | None = None  # a key of SORTS, "-" first for descending
    after: str | None = None

    @property
    def kinds(self) -> list[str]:
        return self.filters.get("kind") or list(DEFAULT_KINDS)


def parse(params: Mapping[str, Any]) -> CatalogState:
    """The state of ``/catalog?...`` (a Starlette QueryParams or a dict of lists)."""

    def values(key: str) -> list[str]:
        found = params.getlist(key) if hasattr(params, "getlist") else params.get(key, [])
        return [v.strip() for v in found if v and v.strip()]

    filters: dict[str, list[str]] = {}
    for key in FILTERS:
        found = values(key)
        if key == "owner":
            found = [v for v in found if v != "mine"]
        if key == "kind":
            found = [v.lower() for v in found]
        if found:
            filters[key] = list(dict.fromkeys(found))
    search = " ".join(values("q")) or None
    sorts = values("sort")
    sort = sorts[-1] if sorts and sorts[-1].removeprefix("-") in SORTS else None
    afters = values("after")
    return CatalogState(
        search=search,
        filters=filters,
        mine="mine" in values("owner"),
        starred=(values("starred") or [""])[-1] in ("1", "true", "yes"),
        sort=sort,
        after=afters[-1] if afters else None,
    )


def viewer_refs(answer: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """The viewer's teams (every group they are in, at any depth) and their stars, from the
    CatalogViewer operation's answer."""
    viewer = (answer or {}).get("viewer") or {}
    teams = sorted(str(g["ref"]) for g in viewer.get("groups") or [])
    stars = [str(e["ref"]) for e in viewer.get("starred") or []]
    return teams, stars


def order_by(state: CatalogState) -> str:
    if state.sort is None:
        return "RELEVANCE" if state.search else "TITLE_ASC"
    column = SORTS[state.sort.removeprefix("-")]
    return f"{column}_DESC" if state.sort.startswith("-") else f"{column}_ASC"


def entity_filter(
    state: CatalogState, mine: list[str] | None = None, starred: list[str] | None = None
) -> dict[str, Any]:
    """The API's EntityFilter: the address's filters, the viewer's teams for ``mine`` and
    their stars for ``starred`` (refs the caller looked up)."""
    found: dict[str, Any] = {k: v for k, v in state.filters.items()}
    found["kind"] = state.kinds
    if state.mine:
        found["owner"] = sorted(set(found.get("owner", [])) | set(mine or []))
    if state.starred:
        found["refs"] = list(starred or [])
    return found


def variables(
    state: CatalogState, mine: list[str] | None = None, starred: list[str] | None = None
) -> dict[str, Any]:
    return {
        "filter": entity_filter(state, mine, starred),
        "search": state.search,
        "orderBy": order_by(state),
        "first": PAGE_SIZE,
        "after": state.after,
    }


def facet_variables(
    state: CatalogState, mine: list[str] | None = None, starred: list[str] | None = None
) -> dict[str, Any]:
    """The filters' counts: the kinds' under every filter but the kind (so another kind can be
    chosen), the others' under all of them."""
    found = entity_filter(state, mine, starred)
    kindless = {k: v for k, v in found.items() if k != "kind"}
    return {"filter": found, "kindless": kindless, "search": state.search}


# What the page shows of the state: its table's columns, its filters' choices, its links.
COLUMNS = [
    ("name", "Name"),
    ("kind", "Kind"),
    ("owner", "Owner"),
    ("system", "System"),
    ("lifecycle", "Lifecycle"),
]
_ANY = {
    "kind": "What teams build",
    "owner": "Anyone",
    "type": "Any",
    "lifecycle": "Any",
    "tag": "Any",
}
_FACETS = {
    "kind": "kinds",
    "owner": "owners",
    "type": "types",
    "lifecycle": "lifecycles",
    "tag": "tags",
}


def href(state: CatalogState, **changes: Any) -> str:
    """``/catalog?...`` for the state with some parts changed (``after=None`` drops it)."""
    merged = {
        "q": state.search,
        "filters": state.filters,
        "mine": state.mine,
        "starred": state.starred,
        "sort": state.sort,
        "after": state.after,
    } | changes
    pairs: list[tuple[str, str]] = []
    if merged["q"]:
        pairs.append(("q", merged["q"]))
    for key in FILTERS:
        pairs += [(key, value) for value in merged["filters"].get(key, [])]
    if merged["mine"]:
        pairs.append(("owner", "mine"))
    if merged["starred"]:
        pairs.append(("starred", "1"))
    if merged["sort"]:
        pairs.append(("sort", merged["sort"]))
    if merged["after"]:
        pairs.append(("after", merged["after"]))
    query = urlencode(pairs)
    return "/catalog" + (f"?{query}" if query else "")


def sort_href(state: CatalogState, key: str) -> str:
    """Sorting by a column: ascending first, descending when it already is ascending."""
    return href(state, sort=f"-{key}" if state.sort == key else key, after=None)


def sorted_by(state: CatalogState, key: str) -> bool:
    return state.sort is not None and state.sort.removeprefix("-") == key


def choice(state: CatalogState, field: str) -> str:
    if field == "owner" and state.mine:
        return "mine"
    return (state.filters.get(field) or [""])[0]


def options(
    state: CatalogState, facets: dict[str, Any] | None, field: str, viewer: str | None = None
) -> list[tuple[str, str]]:
    """A filter's choices: any, then the facet's values with their counts (the current one
    even when nothing has it any more)."""
    found = [("", _ANY[field])]
    if field == "owner" and viewer:
        found.append(("mine", "My teams"))
    for facet in (facets or {}).get(_FACETS[field]) or []:
        value = str(facet["value"])
        if field == "kind":
            value, label = value.lower(), kind_label(value, True)
        elif field == "owner":
            label = value.rpartition("/")[2]
        else:
            label = value
        found.append((value, f"{label} ({facet['count']})"))
    current = choice(state, field)
    if current and all(value != current for value, _ in found):
        found.append((current, current))
    return found


def kind_href(kind: str) -> str:
    return href(CatalogState(filters={"kind": [kind.lower()]}))


def owner_href(ref: str) -> str:
    return href(CatalogState(filters={"owner": [ref], "kind": [*DEFAULT_KINDS]}))
