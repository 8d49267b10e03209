"""How the console words and links things: the server's half of ``web/src/present.ts``, which
the client's components use for the same answers (tests/ssr/test_present.py runs both over the
same cases and compares them)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlencode

__all__ = [
    "KINDS",
    "RELATION_LISTS",
    "address_problem",
    "attention_status",
    "cluster_errors",
    "crumbs_of",
    "display_name",
    "entity_badges",
    "entity_url",
    "home_lead",
    "home_services",
    "image_version",
    "kind_label",
    "lifecycle_tone",
    "missing_search_href",
    "page_sections",
    "picture",
    "pod_status",
    "scaler_bounds",
    "workload_crumbs",
    "workload_status",
    "workload_url",
    "workloads_of",
]

# Kinds as people read them, singular and plural, in the catalog's order.
KINDS: dict[str, tuple[str, str]] = {
    "component": ("Component", "Components"),
    "api": ("API", "APIs"),
    "resource": ("Resource", "Resources"),
    "system": ("System", "Systems"),
    "domain": ("Domain", "Domains"),
    "group": ("Team", "Teams"),
    "user": ("Person", "People"),
    "location": ("Location", "Locations"),
}

LIFECYCLE_TONES = {"production": "success", "experimental": "warning", "deprecated": "error"}


def kind_label(kind: str, plural: bool = False) -> str:
    found = KINDS.get(kind.lower())
    if found is None:
        return kind
    return found[1] if plural else found[0]


def split_ref(ref: str) -> tuple[str, str, str]:
    kind, _, rest = ref.partition(":")
    namespace, slash, name = rest.partition("/")
    return (kind, namespace, name) if slash else (kind, "default", namespace)


def entity_url(entity: dict[str, Any]) -> str:
    """``/catalog/{namespace}/{kind}/{name}`` of an entity, from its ref."""
    kind, namespace, name = split_ref(str(entity.get("ref", "")))
    return "/catalog/" + "/".join(quote(part, safe="") for part in (namespace, kind, name))


def workload_url(workload: dict[str, Any]) -> str:
    parts = (workload.get("cluster", ""), workload.get("namespace", ""), workload.get("name", ""))
    return "/workloads/" + "/".join(quote(str(part), safe="") for part in parts)


def display_name(entity: dict[str, Any]) -> str:
    """A person or team as people call them: display name, then title, then name."""
    profile = entity.get("profile") or {}
    return str(profile.get("displayName") or entity.get("title") or entity.get("name") or "")


def picture(entity: dict[str, Any]) -> str | None:
    profile = entity.get("profile") or {}
    found = profile.get("picture")
    return str(found) if found else None


def lifecycle_tone(lifecycle: str) -> str:
    return LIFECYCLE_TONES.get(lifecycle, "neutral")


def entity_badges(entity: dict[str, Any]) -> list[tuple[str, str]]:
    """Kind, type and lifecycle, as badges: (text, Gestalt badge type)."""
    badges = [(kind_label(str(entity.get("kind") or "")), "neutral")]
    if entity.get("type"):
        badges.append((str(entity["type"]), "info"))
    lifecycle = entity.get("lifecycle")
    if lifecycle:
        badges.append((str(lifecycle), lifecycle_tone(str(lifecycle))))
    return badges


def crumbs_of(entity: dict[str, Any]) -> list[tuple[str, str]]:
    """The catalog, then the entity's kind in it."""
    kind = str(entity.get("kind") or "").lower()
    return [
        ("/catalog", "Catalog"),
        (f"/catalog?kind={quote(kind, safe='')}", kind_label(kind, True)),
    ]


def image_version(image: str | None) -> str:
    """What an image reference says about the version: its tag, else a short digest."""
    if not image:
        return "—"
    name, at, digest = image.partition("@")
    if at:
        return digest.partition(":")[2][:12] or digest
    last = name.rpartition("/")[2]
    return last.partition(":")[2] or "latest"


def workload_status(workload: dict[str, Any], unavailable: dict[str, str]) -> tuple[str, str]:
    """A workload's state as a Gestalt Status: (type, title)."""
    ready, desired = (
        int(workload.get("readyReplicas") or 0),
        int(workload.get("desiredReplicas") or 0),
    )
    counted = f"{ready}/{desired} ready"
    if workload.get("cluster") in unavailable:
        return "warning", f"{counted}, cluster unavailable"
    if desired == 0:
        return "canceled", "scaled to 0"
    if ready >= desired and float(workload.get("rolloutProgress", 1) or 0) >= 1:
        return "ok", counted
    if ready == 0:
        return "problem", counted
    return "inProgress", counted


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


def workloads_of(data: dict[str, Any]) -> dict[str, Any]:
    """A page's workloads (a component's or a team's): whether any cluster is configured, the
    workloads, and the clusters that cannot answer."""
    if "EntityWorkloads" in data:
        answer = data["EntityWorkloads"]
        entity = answer.get("entity") or {}
        clusters = answer.get("clusters") or []
        return {
            "configured": bool(clusters),
            "workloads": entity.get("workloads") or [],
            "errors": cluster_errors(clusters),
        }
    apps = (data.get("TeamWorkloads") or {}).get("pinApps") or {}
    return {
        "configured": None,
        "workloads": apps.get("nodes") or [],
        "errors": cluster_errors(apps.get("clusterErrors")),
    }


def workload_crumbs(app: dict[str, Any]) -> list[tuple[str, str]]:
    crumbs = [("/catalog", "Catalog")]
    if app.get("entity"):
        crumbs.append((entity_url(app["entity"]), display_name(app["entity"])))
    return crumbs


def scaler_bounds(app: dict[str, Any]) -> str:
    """How many replicas it may run: its PinScaler's bounds, else its fixed count."""
    scaler = app.get("scaler")
    if scaler and scaler.get("minReplicas") is not None:
        # An en dash, as a range is written.
        bounds = (scaler["minReplicas"], scaler.get("maxReplicas"))
        return f"{bounds[0]}–{'?' if bounds[1] is None else bounds[1]} (scaled)"  # noqa: RUF001
    return f"{app.get('replicas') if app.get('replicas') is not None else '—'} (fixed)"


def pod_status(pod: dict[str, Any]) -> tuple[str, str]:
    phase = str(pod.get("phase") or "Unknown")
    if pod.get("ready"):
        return "ok", f"{phase}, ready"
    if phase in ("Pending", "ContainerCreating"):
        return "inProgress", phase
    return "problem", f"{phase}, not ready"


def missing_search_href(path: str) -> str:
    """The catalog searched for the last word of an address that led nowhere (the path
    percent-encoded, as the browser's ``location.pathname`` has it)."""
    last = path.rstrip("/").rpartition("/")[2]
    word = unquote(last).strip()
    return f"/catalog?{urlencode({'q': word})}" if word else "/catalog"


# Backstage's rule for names and namespaces (README, The catalog).
NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")


def address_problem(namespace: str, kind: str, name: str) -> tuple[int, str] | None:
    """Why an entity's address cannot name one, as (status, reason): a 400 when no entity can
    be named so, a 404 when the catalog has no such kind; None when it could."""
    if not (NAME.fullmatch(namespace.lower()) and NAME.fullmatch(name.lower()) and len(name) <= 63):
        return 400, "No entity can be named so."
    if kind.lower() not in KINDS:
        return 404, f"The catalog has no kind “{kind}”."
    return None


def page_sections(
    route: str, kind: str | None, panels: list[tuple[str, str]], client: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    """A page's sections, each a tab of its navigation: the page's own, then its panels'."""
    own: list[tuple[str, str]]
    after: list[tuple[str, str]] = []
    if route == "entity":
        own = [("overview", "Overview")]
        if kind == "component":
            after.append(("workloads", "Workloads & logs"))
        if kind == "api":
            after.append(("definition", "API definition"))
    elif route == "team":
        own = [("owned", "Owns"), ("members", "Members")]
        after.append(("workloads", "Workloads & logs"))
    elif route == "workload":
        own = [("overview", "Overview"), ("pods", "Pods"), ("events", "Events")]
    else:
        return []
    sections = [{"tab": tab, "client": False} for tab in [*own, *panels, *after]]
    sections += [{"tab": tab, "client": True} for tab in client]
    return sections


def home_lead(viewer: dict[str, Any]) -> str:
    teams = [display_name(g) for g in viewer.get("groups") or []]
    if not teams:
        return "The directory lists you in no team."
    named = ", ".join(teams[:-1]) + (" and " if len(teams) > 1 else "") + teams[-1]
    return f"You are in {named}."


# How much a level of attention weighs, and how it shows (a Gestalt Status type).
ATTENTION = {"CRITICAL": (0, "problem"), "WARNING": (1, "warning"), "NOTICE": (2, "queued")}


def attention_status(level: str) -> str:
    return ATTENTION.get(level, (3, "unstarted"))[1]


def home_services(
    viewer: dict[str, Any],
) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]]:
    """What the viewer's teams own, each once (under the first team owning it), with the most
    pressing thing about it: what needs attention first, then by title."""
    seen: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for group in viewer.get("groups") or []:
        for entity in group.get("owns") or []:
            seen.setdefault(entity["ref"], (entity, group))
    worst: dict[str, dict[str, Any]] = {}
    for item in viewer.get("attention") or []:
        ref = (item.get("entity") or {}).get("ref")
        if ref and ref not in worst:  # the list comes most pressing first
            worst[ref] = item

    def weight(pair: tuple[dict[str, Any], dict[str, Any]]) -> tuple[int, str]:
        item = worst.get(pair[0]["ref"])
        level = ATTENTION.get(item["level"], (3, ""))[0] if item else 3
        return level, display_name(pair[0]).lower()

    return [(e, g, worst.get(e["ref"])) for e, g in sorted(seen.values(), key=weight)]


# An entity's relations as its overview lists them: (field, title, what to say when empty).
RELATION_LISTS = [
    ("dependencies", "Dependencies", "No dependencies."),
    ("dependents", "Dependents", "Nothing depends on it."),
    ("providesApis", "Provided APIs", "Provides no API."),
    ("consumesApis", "Consumed APIs", "Consumes no API."),
    ("providers", "Providers", "No provider."),
    ("consumers", "Consumers", "No consumer."),
    ("components", "Components", "No components."),
    ("apis", "APIs", "No APIs."),
    ("resources", "Resources", "No resources."),
    ("systems", "Systems", "No systems."),
    ("memberOf", "Teams", "In no team."),
]
