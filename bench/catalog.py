"""A synthetic organisation's catalog, as the Backstage documents its teams would write.

Generating documents (not rows) and passing them through the app's own ``validate_entity``
keeps the benchmark data honest: refs, owner and system columns, relations in both
directions and the document hash come out exactly as an import would store them.

The shape follows a large company: a few hundred domains and thousands of systems, nested
groups, tens of thousands of people, and components that are owned by a team, belong to a
system, depend on about two others (mostly in their own system, some on popular shared
ones), provide and consume APIs. Popularity is skewed (a few groups own many components,
a few APIs are consumed everywhere), because uniform data hides the slow cases.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from bench.words import BUSINESS, COMPONENT_SUFFIXES, FIRST_NAMES, RESOURCE_TYPES, TAGS, codenames

__all__ = ["API_VERSION", "SMALLEST", "CatalogPlan", "Shape"]

API_VERSION: Final = "backstage.io/v1alpha1"
SMALLEST: Final = 1_000  # the fewest entities a generated catalog may have

# Per 250,000 entities; components take whatever is left.
_PER_250K: Final = {
    "domains": 200,
    "systems": 2_000,
    "groups": 2_000,
    "users": 25_000,
    "apis": 40_000,
    "resources": 30_000,
}


@dataclass(frozen=True, slots=True)
class Shape:
    domains: int
    systems: int
    groups: int
    users: int
    apis: int
    resources: int
    components: int

    @classmethod
    def for_total(cls, total: int) -> Shape:
        """Scale the reference shape to ``total`` entities."""
        if total < SMALLEST:
            raise ValueError(f"the benchmark needs at least {SMALLEST:,} entities")
        counts = {k: max(2, round(v * total / 250_000)) for k, v in _PER_250K.items()}
        return cls(**counts, components=total - sum(counts.values()))

    @property
    def total(self) -> int:
        return (
            self.domains
            + self.systems
            + self.groups
            + self.users
            + self.apis
            + self.resources
            + self.components
        )


class _Skewed:
    """Choices where a few items are popular: weight 1/(rank+1)^s over a shuffled order.

    Draws are made in blocks: ``random.choices`` costs little per item once, much per call.
    """

    _BLOCK: Final = 4_096

    def __init__(self, rng: random.Random, size: int, s: float = 0.9) -> None:
        self._rng = rng
        self._order = list(range(size))
        rng.shuffle(self._order)
        self._cum = list(itertools.accumulate(1.0 / (rank + 1) ** s for rank in range(size)))
        self._drawn: list[int] = []

    def one(self) -> int:
        if not self._drawn:
            self._drawn = self._rng.choices(self._order, cum_weights=self._cum, k=self._BLOCK)
        return self._drawn.pop()

    def pick(self, k: int) -> list[int]:
        return [self.one() for _ in range(k)]


@dataclass(slots=True)
class _System:
    name: str
    title: str
    theme: str
    owner: str  # group name
    domain: str
    components: list[int]
    resources: list[int]


class CatalogPlan:
    """Decides who owns, contains, depends on and provides what, then writes the documents."""

    def __init__(self, shape: Shape, seed: int = 7) -> None:
        self.shape = shape
        self.rng = rng = random.Random(seed)
        # Codenames: one per system, a pool of surnames, a pool of product names for titles.
        names = codenames(rng, shape.systems + 4_000 + 3_000)
        self._system_names = names[: shape.systems]
        self._surnames = names[shape.systems : shape.systems + 4_000]
        self._products = names[shape.systems + 4_000 :]
        self._business = _Skewed(rng, len(BUSINESS), s=0.7)
        self._tags = _Skewed(rng, len(TAGS), s=1.0)
        self._plan_groups()
        self._plan_systems()
        self._plan_parts()

    # -- planning: who is where ----------------------------------------------------------

    def _word(self) -> str:
        return BUSINESS[self._business.one()]

    def _plan_groups(self) -> None:
        n = self.shape.groups
        units = max(1, n // 50)
        teams = max(1, n // 5)
        self.group_names: list[str] = []
        self.group_parent: list[int | None] = []
        self.group_role: list[str] = []
        for i in range(n):
            role = "bu" if i < units else "team" if i < units + teams else "squad"
            parent = (
                None
                if role == "bu"
                else self.rng.randrange(units)
                if role == "team"
                else units + self.rng.randrange(teams)
            )
            self.group_names.append(f"{self._word()}-{role}-{i}")
            self.group_parent.append(parent)
            self.group_role.append(role)
        self._units = range(units)
        self._teams = range(units, units + teams)
        self.squads_of: dict[int, list[int]] = {}
        for i, parent in enumerate(self.group_parent):
            if self.group_role[i] == "squad" and parent is not None:
                self.squads_of.setdefault(parent, []).append(i)
        self._team_pick = _Skewed(self.rng, teams, s=0.8)
        self._group_pick = _Skewed(self.rng, n, s=0.8)

    def _plan_systems(self) -> None:
        self.domain_names = [
            f"{BUSINESS[i % len(BUSINESS)]}-domain-{i}" for i in range(self.shape.domains)
        ]
        self.domain_owner = [self.rng.choice(self._units) for _ in self.domain_names]
        self.systems: list[_System] = []
        for name in self._system_names:
            theme = self._word()
            team = self._teams[self._team_pick.one()]
            self.systems.append(
                _System(
                    name=name,
                    title=f"{name.capitalize()} {theme.capitalize()}",
                    theme=theme,
                    owner=self.group_names[team],
                    domain=self.rng.choice(self.domain_names),
                    components=[],
                    resources=[],
                )
            )

    def _plan_parts(self) -> None:
        shape, rng = self.shape, self.rng
        system_pick = _Skewed(rng, shape.systems, s=0.6)
        self.component_system = system_pick.pick(shape.components)
        self.api_system = system_pick.pick(shape.apis)
        self.resource_system = system_pick.pick(shape.resources)
        for i, s in enumerate(self.component_system):
            self.systems[s].components.append(i)
        for i, s in enumerate(self.resource_system):
            self.systems[s].resources.append(i)
        self.component_names = [
            f"{self._word()}-{rng.choice(COMPONENT_SUFFIXES)}-{i}" for i in range(shape.components)
        ]
        self.api_names = [f"{self._word()}-api-{i}" for i in range(shape.apis)]
        self.resource_names = [
            f"{self._word()}-{rng.choice(RESOURCE_TYPES)}-{i}" for i in range(shape.resources)
        ]
        # Each API is provided by a component of its own system when it has one.
        self.provides: dict[int, list[int]] = {}
        for api, s in enumerate(self.api_system):
            members = self.systems[s].components
            provider = rng.choice(members) if members else rng.randrange(shape.components)
            self.provides.setdefault(provider, []).append(api)
        self._popular_component = _Skewed(rng, shape.components, s=0.8)
        self._popular_api = _Skewed(rng, shape.apis, s=0.8)

    # -- documents -----------------------------------------------------------------------

    def documents(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(origin, document) pairs: the org file, the domains file, one file per system."""
        yield from self._groups()
        yield from self._users()
        yield from self._domains()
        yield from self._systems_docs()
        yield from self._apis()
        yield from self._resources()
        yield from self._components()

    def _metadata(self, name: str, title: str | None, description: str) -> dict[str, Any]:
        rng = self.rng
        tags = list(dict.fromkeys(TAGS[i] for i in self._tags.pick(rng.choice((1, 2, 2, 3, 4)))))
        metadata: dict[str, Any] = {"name": name}
        if title:
            metadata["title"] = title
        metadata["description"] = description
        metadata["tags"] = tags
        metadata["labels"] = {"tier": rng.choice("1223"), "cost-center": f"cc-{rng.randrange(400)}"}
        metadata["annotations"] = {
            "github.com/project-slug": f"juniper/{name}",
            "backstage.io/techdocs-ref": "dir:.",
        }
        metadata["links"] = [
            {
                "url": f"https://grafana.juniper.internal/d/{name}",
                "title": "Dashboard",
                "icon": "dashboard",
            },
            {
                "url": f"https://runbooks.juniper.internal/{name}",
                "title": "Runbook",
                "icon": "docs",
            },
        ]
        return metadata

    @staticmethod
    def _doc(kind: str, metadata: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}

    def _groups(self) -> Iterator[tuple[str, dict[str, Any]]]:
        types = {"bu": "business-unit", "team": "team", "squad": "sub-team"}
        for i, name in enumerate(self.group_names):
            role = self.group_role[i]
            word = name.split("-")[0]
            display = f"{word.capitalize()} {role.upper() if role == 'bu' else role.capitalize()}"
            spec: dict[str, Any] = {
                "type": types[role],
                "profile": {"displayName": display, "email": f"{name}@juniper.example"},
                "children": [],  # Backstage requires the list; the tree is given by parent
            }
            parent = self.group_parent[i]
            if parent is not None:
                spec["parent"] = self.group_names[parent]
            metadata = self._metadata(
                name, display, f"{display}: the people behind {word} at Juniper."
            )
            yield "bench/org.yaml", self._doc("Group", metadata, spec)

    def _users(self) -> Iterator[tuple[str, dict[str, Any]]]:
        rng = self.rng
        seen: set[str] = set()
        teams_and_squads = len(self.group_names) - len(self._units)
        for i in range(self.shape.users):
            first, last = rng.choice(FIRST_NAMES), rng.choice(self._surnames)
            name = f"{first}.{last}"
            if name in seen:
                name = f"{name}{i}"
            seen.add(name)
            groups = {
                self.group_names[len(self._units) + rng.randrange(teams_and_squads)]
                for _ in range(rng.choice((1, 1, 1, 2)))
            }
            display = f"{first.capitalize()} {last.capitalize()}"
            spec = {
                "profile": {"displayName": display, "email": f"{name}@juniper.example"},
                "memberOf": sorted(groups),
            }
            metadata = {"name": name, "description": f"{display}, engineer."}
            yield "bench/org.yaml", self._doc("User", metadata, spec)

    def _domains(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for i, name in enumerate(self.domain_names):
            word = name.split("-")[0]
            metadata = self._metadata(
                name, f"{word.capitalize()} Domain", f"Everything about {word} across Juniper."
            )
            spec = {"type": "business", "owner": self.group_names[self.domain_owner[i]]}
            yield "bench/domains.yaml", self._doc("Domain", metadata, spec)

    def _systems_docs(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for system in self.systems:
            metadata = self._metadata(
                system.name,
                system.title,
                f"The {system.theme} platform: {len(system.components)} components.",
            )
            spec = {"type": "product", "owner": system.owner, "domain": system.domain}
            yield _origin(system), self._doc("System", metadata, spec)

    def _apis(self) -> Iterator[tuple[str, dict[str, Any]]]:
        rng = self.rng
        for i, name in enumerate(self.api_names):
            system = self.systems[self.api_system[i]]
            word = name.split("-")[0]
            api_type = rng.choice(("openapi", "openapi", "grpc", "asyncapi", "graphql"))
            title = f"{rng.choice(self._products).capitalize()} {word.capitalize()} API"
            metadata = self._metadata(
                name, title, f"The {api_type} interface to {word} in {system.title}."
            )
            spec = {
                "type": api_type,
                "lifecycle": _lifecycle(rng),
                "owner": system.owner,
                "system": system.name,
                "definition": f"openapi: 3.0.0\ninfo:\n  title: {title}\n  version: 1.{i % 9}.0\n",
            }
            yield _origin(system), self._doc("API", metadata, spec)

    def _resources(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for i, name in enumerate(self.resource_names):
            system = self.systems[self.resource_system[i]]
            word, rtype = name.split("-")[:2]
            metadata = self._metadata(
                name,
                f"{word.capitalize()} {rtype.capitalize()}",
                f"The {rtype} holding {word} data for {system.title}.",
            )
            spec = {"type": rtype, "owner": system.owner, "system": system.name}
            yield _origin(system), self._doc("Resource", metadata, spec)

    def _components(self) -> Iterator[tuple[str, dict[str, Any]]]:
        rng = self.rng
        group_index = {name: i for i, name in enumerate(self.group_names)}
        component_types = ("service", "service", "service", "website", "library")
        for i, name in enumerate(self.component_names):
            system = self.systems[self.component_system[i]]
            word, suffix = name.split("-")[:2]
            team = group_index[system.owner]
            squads = self.squads_of.get(team, [])
            owner = self._component_owner(system, squads)
            depends = self._dependencies(i, system)
            spec: dict[str, Any] = {
                "type": rng.choice(component_types),
                "lifecycle": _lifecycle(rng),
                "owner": owner,
                "system": system.name,
            }
            if i in self.provides:
                spec["providesApis"] = [self.api_names[a] for a in self.provides[i]]
            consumed = {self.api_names[a] for a in self._popular_api.pick(rng.choice((0, 1, 1, 2)))}
            if consumed:
                spec["consumesApis"] = sorted(consumed)
            if depends:
                spec["dependsOn"] = depends
            product = rng.choice(self._products)
            title = f"{product.capitalize()} {word.capitalize()} {suffix.capitalize()}"
            metadata = self._metadata(
                name,
                title,
                f"The {word} {suffix} of {system.title}, owned by {owner}. "
                f"Handles {self._word()} and {self._word()} for {self._word()}.",
            )
            yield _origin(system), self._doc("Component", metadata, spec)

    def _component_owner(self, system: _System, squads: list[int]) -> str:
        """Mostly the system's team or one of its squads; sometimes a team from elsewhere."""
        roll = self.rng.random()
        if roll < 0.8:
            if squads and roll < 0.4:
                return self.group_names[self.rng.choice(squads)]
            return system.owner
        return self.group_names[self._group_pick.one()]

    def _dependencies(self, i: int, system: _System) -> list[str]:
        rng = self.rng
        found: dict[str, None] = {}
        for _ in range(rng.choice((0, 1, 2, 2, 3, 4))):
            local = system.components
            target = (
                rng.choice(local) if local and rng.random() < 0.6 else self._popular_component.one()
            )
            if target != i:
                found[f"component:{self.component_names[target]}"] = None
        if system.resources and rng.random() < 0.3:
            found[f"resource:{self.resource_names[rng.choice(system.resources)]}"] = None
        return list(found)


def _origin(system: _System) -> str:
    return f"bench/systems/{system.name}/catalog-info.yaml"


def _lifecycle(rng: random.Random) -> str:
    return rng.choice(("production",) * 7 + ("experimental",) * 2 + ("deprecated",))
