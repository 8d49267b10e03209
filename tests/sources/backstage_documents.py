"""Catalog documents to judge with Atrium and with Backstage's own model: a deterministic mix
of valid documents of every kind and mutations of them, one flaw each.

Each case says which deliberate difference (sources.catalog.differences) it is made to show,
if any; every other case must be judged alike. Some cases are written as YAML text with plain
scalars YAML 1.1 and 1.2 read differently (``on``, ``1_000``, ``1:30``): Atrium reads the text,
Backstage's side gets the values YAML 1.2 gives them.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Case", "cases", "to_yaml"]

V1 = "backstage.io/v1alpha1"


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    document: Any
    difference: str | None = None  # the key of the difference it shows, if any
    yaml: str | None = None  # the text Atrium reads, when the case is about YAML
    unavailable: tuple[str, ...] = ()  # fields whose placeholder cannot be read


_WORDS = ("checkout", "cart", "orders", "ledger", "search", "billing", "pets", "inventory")
_OWNERS = (
    "team-a",
    "group:team-b",
    "payments/team-c",
    "user:default/ann",
    "artists@example.com",
    "Group:Default/Team-D",
    "team:squad-e",
)


def _meta(rng: random.Random, kind: str, index: int) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"{rng.choice(_WORDS)}-{kind.lower()}-{index}"}
    if rng.random() < 0.3:
        metadata["namespace"] = rng.choice(("default", "payments", "team-a"))
    if rng.random() < 0.5:
        metadata["title"] = f"The {metadata['name'].replace('-', ' ')}"
    if rng.random() < 0.6:
        metadata["description"] = rng.choice(("", "Does things.", "Multi\nline"))
    if rng.random() < 0.5:
        metadata["tags"] = rng.sample(["go", "java", "tier-1", "c++", "c#", "k8s:prod", "pci"], 2)
    if rng.random() < 0.4:
        metadata["labels"] = {"tier": "1", "example.com/team": "pay_ments", "empty": ""}
    if rng.random() < 0.5:
        metadata["annotations"] = {
            "github.com/project-slug": "juniper/x",
            "backstage.io/techdocs-ref": "dir:.",
            "note": "any text: even this",
        }
    if rng.random() < 0.4:
        metadata["links"] = [
            {"url": "https://grafana.example.org/d/x", "title": "Dashboard", "icon": "dashboard"},
            {"url": "mailto:team@example.org", "type": "email"},
        ]
    return metadata


def _spec(rng: random.Random, kind: str) -> dict[str, Any]:
    owner = rng.choice(_OWNERS)
    if kind == "Component":
        spec: dict[str, Any] = {"type": "service", "lifecycle": "production", "owner": owner}
        if rng.random() < 0.5:
            spec["system"] = rng.choice(("shop", "system:payments/ledger"))
        if rng.random() < 0.5:
            spec["providesApis"] = ["orders-api", "api:payments/pay-api"]
        if rng.random() < 0.5:
            spec["consumesApis"] = ["catalog-api"]
        if rng.random() < 0.5:
            spec["dependsOn"] = ["component:cart", "resource:default/orders-db"]
        if rng.random() < 0.3:
            spec["dependencyOf"] = ["component:storefront"]
        if rng.random() < 0.2:
            spec["subcomponentOf"] = "checkout"
        return spec
    if kind == "API":
        return {
            "type": rng.choice(("openapi", "graphql", "grpc")),
            "lifecycle": "experimental",
            "owner": owner,
            "definition": "openapi: 3.0.0\n",
            **({"system": "shop"} if rng.random() < 0.5 else {}),
        }
    if kind == "Resource":
        return {"type": "database", "owner": owner, "dependsOn": ["component:ledger"]}
    if kind == "System":
        return {"owner": owner, **({"domain": "commerce"} if rng.random() < 0.5 else {})}
    if kind == "Domain":
        return {"owner": owner, **({"subdomainOf": "retail"} if rng.random() < 0.5 else {})}
    if kind == "Group":
        return {
            "type": "team",
            "profile": {"displayName": "Team", "email": "team@example.org"},
            "parent": "eng",
            "children": ["sub-team"],
            "members": ["ann", "user:bob"],
        }
    if kind == "User":
        return {"profile": {"displayName": "Ann"}, "memberOf": ["team-a", "group:ops/sre"]}
    return {"type": "url", "targets": ["https://example.org/catalog-info.yaml"]}


KINDS = ("Component", "API", "Resource", "System", "Domain", "Group", "User", "Location")


def _valid(rng: random.Random, kind: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": rng.choice((V1, V1, "backstage.io/v1beta1")),
        "kind": kind,
        "metadata": _meta(rng, kind, index),
        "spec": _spec(rng, kind),
    }


def _mcp(rng: random.Random, index: int) -> dict[str, Any]:
    doc = _valid(rng, "API", index)
    doc["spec"] = {
        "type": "mcp-server",
        "lifecycle": "experimental",
        "owner": "team-a",
        "remotes": [{"type": "streamable-http", "url": "https://pets.example.org/mcp"}],
    }
    return doc


Mutation = Callable[[dict[str, Any]], object]


def _set(path: str, value: Any) -> Mutation:
    *parents, last = path.split(".")

    def mutate(doc: dict[str, Any]) -> None:
        target = doc
        for key in parents:
            target = target.setdefault(key, {})
        target[last] = copy.deepcopy(value)

    return mutate


def _drop(path: str) -> Mutation:
    *parents, last = path.split(".")

    def mutate(doc: dict[str, Any]) -> None:
        target = doc
        for key in parents:
            target = target[key]
        target.pop(last, None)

    return mutate


# (name, kinds it applies to or None for any, mutation, the difference it shows)
_MUTATIONS: list[tuple[str, tuple[str, ...] | None, Mutation, str | None]] = [
    ("no apiVersion", None, _drop("apiVersion"), None),
    ("apiVersion v1", None, _set("apiVersion", "backstage.io/v1"), None),
    ("apiVersion bare", None, _set("apiVersion", "v1"), None),
    ("apiVersion number", None, _set("apiVersion", 1), None),
    ("apiVersion empty", None, _set("apiVersion", ""), None),
    ("apiVersion three parts", None, _set("apiVersion", "a/b/c"), None),
    ("kind lowercase", None, lambda d: d.update(kind=d["kind"].lower()), None),
    ("kind unknown", None, _set("kind", "Template"), None),
    ("kind empty", None, _set("kind", ""), None),
    ("kind number", None, _set("kind", 5), None),
    ("kind with dash", None, _set("kind", "Compo-nent"), None),
    ("no metadata", None, _drop("metadata"), None),
    ("metadata list", None, _set("metadata", []), None),
    ("metadata null", None, _set("metadata", None), None),
    ("no name", None, _drop("metadata.name"), None),
    ("name empty", None, _set("metadata.name", ""), None),
    ("name number", None, _set("metadata.name", 5), None),
    ("name with space", None, _set("metadata.name", "bad name!"), None),
    ("name too long", None, _set("metadata.name", "x" * 64), None),
    ("name leading dash", None, _set("metadata.name", "-x"), None),
    ("name dots and underscores", None, _set("metadata.name", "A.b_c-9"), None),
    ("name with at", None, _set("metadata.name", "ann@example.org"), None),
    ("namespace capitals", None, _set("metadata.namespace", "Payments"), None),
    ("namespace underscore", None, _set("metadata.namespace", "team_a"), None),
    ("namespace dot", None, _set("metadata.namespace", "a.b"), None),
    ("namespace empty", None, _set("metadata.namespace", ""), None),
    ("namespace null", None, _set("metadata.namespace", None), None),
    ("namespace too long", None, _set("metadata.namespace", "n" * 64), None),
    ("namespace double dash", None, _set("metadata.namespace", "a--b"), None),
    ("title null", None, _set("metadata.title", None), None),
    ("title empty", None, _set("metadata.title", ""), None),
    ("title blank", None, _set("metadata.title", "  "), None),
    ("title number", None, _set("metadata.title", 5), None),
    ("title 500", None, _set("metadata.title", "t" * 500), None),
    ("title 501", None, _set("metadata.title", "t" * 501), "indexed-text"),
    ("description null", None, _set("metadata.description", None), None),
    ("description number", None, _set("metadata.description", 5), None),
    ("description NUL", None, _set("metadata.description", "a\x00b"), "unstorable-text"),
    ("title surrogate", None, _set("metadata.title", "a\ud800b"), "unstorable-text"),
    ("uid empty", None, _set("metadata.uid", ""), None),
    ("etag given", None, _set("metadata.etag", "abc"), None),
    ("tags null", None, _set("metadata.tags", None), None),
    ("tags empty", None, _set("metadata.tags", []), None),
    ("tags string", None, _set("metadata.tags", "go"), None),
    ("tag capital", None, _set("metadata.tags", ["Go"]), None),
    ("tag space", None, _set("metadata.tags", ["a b"]), None),
    ("tag empty", None, _set("metadata.tags", [""]), None),
    ("tag number", None, _set("metadata.tags", [5]), None),
    ("tag too long", None, _set("metadata.tags", ["x" * 64]), None),
    ("tag double dash", None, _set("metadata.tags", ["a--b"]), None),
    ("tags repeated", None, _set("metadata.tags", ["go", "go"]), None),
    ("labels null", None, _set("metadata.labels", None), None),
    ("labels list", None, _set("metadata.labels", []), None),
    ("label number", None, _set("metadata.labels", {"a": 5}), None),
    ("label value space", None, _set("metadata.labels", {"a": "b c"}), None),
    ("label key empty", None, _set("metadata.labels", {"": "x"}), None),
    ("label key three parts", None, _set("metadata.labels", {"a/b/c": "x"}), None),
    ("label key capital prefix", None, _set("metadata.labels", {"Example.com/x": "y"}), None),
    ("label value too long", None, _set("metadata.labels", {"x": "y" * 64}), None),
    ("label keys digits first", None, _set("metadata.labels", {"b": "x x", "1": "y y"}), None),
    ("annotations null", None, _set("metadata.annotations", None), None),
    ("annotations empty string", None, _set("metadata.annotations", ""), None),
    ("annotations false", None, _set("metadata.annotations", False), None),
    ("annotations list", None, _set("metadata.annotations", []), None),
    ("annotation number", None, _set("metadata.annotations", {"a": 5}), None),
    ("annotation bad key", None, _set("metadata.annotations", {"bad key!": "x"}), None),
    ("annotation value empty", None, _set("metadata.annotations", {"x": ""}), None),
    ("annotation key prefix dash", None, _set("metadata.annotations", {"-a.io/x": "y"}), None),
    ("links null", None, _set("metadata.links", None), None),
    ("links empty", None, _set("metadata.links", []), None),
    ("link relative", None, _set("metadata.links", [{"url": "/runbook"}]), None),
    ("link no scheme", None, _set("metadata.links", [{"url": "example.org/x"}]), None),
    ("link no url", None, _set("metadata.links", [{"title": "x"}]), None),
    ("link url empty", None, _set("metadata.links", [{"url": ""}]), None),
    ("link url number", None, _set("metadata.links", [{"url": 5}]), None),
    (
        "link title empty",
        None,
        _set("metadata.links", [{"url": "https://x.org", "title": ""}]),
        None,
    ),
    (
        "link title blank",
        None,
        _set("metadata.links", [{"url": "https://x.org", "title": " "}]),
        None,
    ),
    (
        "link icon blank",
        None,
        _set("metadata.links", [{"url": "https://x.org", "icon": "\t"}]),
        None,
    ),
    ("link type empty", None, _set("metadata.links", [{"url": "https://x.org", "type": ""}]), None),
    (
        "link type blank",
        None,
        _set("metadata.links", [{"url": "https://x.org", "type": " "}]),
        None,
    ),
    ("link string", None, _set("metadata.links", ["https://x.org"]), None),
    ("link odd scheme", None, _set("metadata.links", [{"url": "slack:channel"}]), None),
    ("link host with space", None, _set("metadata.links", [{"url": "https://a b.org"}]), None),
    ("root extra field", None, _set("extra", 1), None),
    ("root relations", None, _set("relations", []), None),
    ("root status", None, _set("status", {}), None),
    ("root relations string", None, _set("relations", "x"), None),
    ("root relation type", None, _set("relations", [{"type": "a b", "targetRef": "x"}]), None),
    (
        "root relation extra",
        None,
        _set("relations", [{"type": "a", "targetRef": "x", "y": 1}]),
        None,
    ),
    ("no spec", None, _drop("spec"), None),
    ("spec list", None, _set("spec", []), None),
    ("spec null", None, _set("spec", None), None),
    ("spec extra field", None, _set("spec.extra", {"any": ["thing"]}), None),
    ("no owner", ("Component", "API", "Resource", "System", "Domain"), _drop("spec.owner"), None),
    ("owner empty", ("Component", "API", "System"), _set("spec.owner", ""), None),
    ("owner number", ("Component", "Resource"), _set("spec.owner", 5), None),
    ("owner null", ("Component", "Domain"), _set("spec.owner", None), None),
    ("owner email", ("Component", "System"), _set("spec.owner", "artists@example.com"), None),
    ("owner kind only", ("Component",), _set("spec.owner", "group:"), None),
    ("owner no namespace", ("API",), _set("spec.owner", "/x"), None),
    ("owner colons", ("Resource",), _set("spec.owner", "a:b:c"), None),
    ("owner 500", ("Component",), _set("spec.owner", "o" * 490), "indexed-text"),
    ("no type", ("Component", "API", "Resource", "Group"), _drop("spec.type"), None),
    ("type empty", ("Component", "Resource"), _set("spec.type", ""), None),
    ("type 501", ("Component",), _set("spec.type", "y" * 501), "indexed-text"),
    ("no lifecycle", ("Component", "API"), _drop("spec.lifecycle"), None),
    ("lifecycle number", ("Component",), _set("spec.lifecycle", 5), None),
    ("system null", ("Component", "API", "Resource"), _set("spec.system", None), None),
    ("system empty", ("Component",), _set("spec.system", ""), None),
    ("provides string", ("Component",), _set("spec.providesApis", "x"), None),
    ("provides empty item", ("Component",), _set("spec.providesApis", [""]), None),
    ("consumes number", ("Component",), _set("spec.consumesApis", [5]), None),
    ("depends without kind", ("Component", "Resource"), _set("spec.dependsOn", ["x"]), None),
    ("depends with kind", ("Component",), _set("spec.dependsOn", ["resource:x"]), None),
    (
        "dependency of string",
        ("Component", "Resource"),
        _set("spec.dependencyOf", "component:x"),
        "dependency-of-list",
    ),
    (
        "dependency of empty string",
        ("Component",),
        _set("spec.dependencyOf", ""),
        "dependency-of-list",
    ),
    (
        "dependency of mapping item",
        ("Resource",),
        _set("spec.dependencyOf", [{"kind": "component", "name": "x"}]),
        "dependency-of-list",
    ),
    (
        "dependency of without kind",
        ("Component", "Resource"),
        _set("spec.dependencyOf", ["x"]),
        None,
    ),
    ("dependency of null", ("Component",), _set("spec.dependencyOf", None), None),
    ("dependency of null item", ("Resource",), _set("spec.dependencyOf", [None]), None),
    ("subcomponent empty", ("Component",), _set("spec.subcomponentOf", ""), None),
    ("no definition", ("API",), _drop("spec.definition"), None),
    ("definition mapping", ("API",), _set("spec.definition", {"openapi": "3.0.0"}), None),
    ("definition empty", ("API",), _set("spec.definition", ""), None),
    (
        "ai model server",
        ("API",),
        lambda d: (
            d["spec"].update(
                type="ai-model-server", remotes=[{"type": "https", "url": "https://m.example.org"}]
            )
            or d["spec"].pop("definition")
        ),
        None,
    ),
    ("domain number", ("System",), _set("spec.domain", 5), None),
    ("subdomain empty", ("Domain",), _set("spec.subdomainOf", ""), None),
    ("no children", ("Group",), _drop("spec.children"), "member-lists"),
    ("children null", ("Group",), _set("spec.children", None), None),
    ("members string", ("Group",), _set("spec.members", "ann"), None),
    ("profile string", ("Group", "User"), _set("spec.profile", "x"), None),
    ("profile email empty", ("Group",), _set("spec.profile", {"email": ""}), None),
    ("profile picture number", ("User",), _set("spec.profile", {"picture": 5}), None),
    ("profile extra", ("User",), _set("spec.profile", {"nickname": "x"}), None),
    ("parent empty", ("Group",), _set("spec.parent", ""), None),
    ("no member of", ("User",), _drop("spec.memberOf"), "member-lists"),
    ("member of null", ("User",), _set("spec.memberOf", None), None),
    ("member of empty item", ("User",), _set("spec.memberOf", [""]), None),
    ("location target number", ("Location",), _set("spec.target", 5), None),
    ("location targets string", ("Location",), _set("spec.targets", "x"), None),
    ("location presence odd", ("Location",), _set("spec.presence", "maybe"), None),
    ("location presence number", ("Location",), _set("spec.presence", 1), None),
    ("location presence optional", ("Location",), _set("spec.presence", "optional"), None),
    ("location empty spec", ("Location",), _set("spec", {}), None),
]

_MCP_MUTATIONS: list[tuple[str, Mutation, str | None]] = [
    ("as written", lambda d: None, "mcp-server"),
    ("with a definition", _set("spec.definition", "tools: []"), None),
    (
        "definition but no remotes",
        lambda d: d["spec"].update(definition="x") or d["spec"].pop("remotes"),
        "mcp-server",
    ),
    ("no remotes", _drop("spec.remotes"), None),
    ("remotes empty", _set("spec.remotes", []), None),
    (
        "remotes empty with a definition",
        lambda d: d["spec"].update(remotes=[], definition="x"),
        "mcp-server",
    ),
    ("remote without url", _set("spec.remotes", [{"type": "sse"}]), None),
    ("remote url number", _set("spec.remotes", [{"type": "sse", "url": 7}]), None),
    ("remotes mapping", _set("spec.remotes", {"type": "sse", "url": "x"}), None),
    ("definition mapping", _set("spec.definition", {"tools": []}), "mcp-definition-text"),
    ("no lifecycle", _drop("spec.lifecycle"), None),
]

# Plain scalars YAML 1.1 reads as booleans or numbers and YAML 1.2 as strings.
_YAML_WORDS = ("on", "off", "yes", "no", "y", "n", "1_000", "1:30", "Yes", "OFF")


def cases(seed: int = 24) -> Iterator[Case]:
    """A few hundred cases, the same ones for the same seed."""
    rng = random.Random(seed)
    index = 0
    for kind in KINDS:
        for _ in range(8):
            index += 1
            yield Case(f"valid {kind} {index}", _valid(rng, kind, index))
    for name, kinds, mutate, difference in _MUTATIONS:
        for kind in kinds or rng.sample(KINDS, 2):
            index += 1
            doc = _valid(rng, kind, index)
            mutate(doc)
            yield Case(f"{name} ({kind})", doc, difference)
    for name, mutate, difference in _MCP_MUTATIONS:
        index += 1
        doc = _mcp(rng, index)
        mutate(doc)
        yield Case(f"mcp-server {name}", doc, difference)
    for value in (["a", "list"], 5, "text"):
        yield Case(f"root {value!r}", value)
    for word in _YAML_WORDS:
        index += 1
        doc = _valid(rng, "Component", index)
        doc["spec"]["lifecycle"] = word
        doc["metadata"]["labels"] = {"window": "1_000" if word == "1:30" else "x"}
        doc["metadata"]["annotations"] = {"example.com/at": word}
        doc["metadata"]["tags"] = [word.lower()] if word[0].isalpha() else ["t"]
        yield Case(f"YAML 1.2 {word}", doc, yaml=to_yaml(doc))
    for field, placeholder in (
        ("spec.definition", {"$text": "./missing.oas.yaml"}),
        ("metadata.links", {"$json": "./missing-links.json"}),
        ("metadata.labels", {"$yaml": "./missing-labels.yaml"}),
    ):
        index += 1
        doc = _valid(rng, "API", index)
        _set(field, placeholder)(doc)
        yield Case(f"unreadable {field}", doc, "unreadable-placeholder", unavailable=(field,))


_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/@+#:-]*$")
_YAML12_SPECIAL = re.compile(
    r"^(?:true|True|TRUE|false|False|FALSE|~|null|Null|NULL|[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"
    r"|[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?)$"
)


def _scalar(value: Any) -> str:
    if isinstance(value, str) and _PLAIN.match(value) and not _YAML12_SPECIAL.match(value):
        return value  # plain: read as YAML 1.2 reads it
    return json.dumps(value)


def to_yaml(value: dict[str, Any], indent: str = "") -> str:
    """Block YAML for a document, strings plain wherever YAML 1.2 reads them as strings."""
    lines = []
    for key, item in value.items():
        if isinstance(item, dict) and item:
            lines.append(f"{indent}{_scalar(key)}:\n{to_yaml(item, indent + '  ')}")
        elif isinstance(item, list) and item and not any(isinstance(v, dict | list) for v in item):
            entries = (f"{indent}  - {_scalar(v)}" for v in item)
            lines.append(f"{indent}{_scalar(key)}:\n" + "\n".join(entries))
        else:
            lines.append(f"{indent}{_scalar(key)}: {_scalar(item)}")
    return "\n".join(lines)
