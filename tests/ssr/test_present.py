"""The console's wording and links, on both sides: the server renders a page with
ssr/present.py and ssr/catalog_url.py, the browser hydrates it with web/src/present.ts and
web/src/catalogUrl.ts, and any answer on which they differ is a page that changes its words or
links as it hydrates. Node runs the TypeScript (tests/ssr/present_driver.mjs bundles it with
the bundler the console is built with) over the cases below, and each answer must be the
Python function's: ``kindLabel`` is ``kind_label``, arrays are tuples, and the catalog's state
is what each side parses from the same query string.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus, unquote

import pytest
from starlette.datastructures import QueryParams

import ssr.catalog_url as catalog_url
import ssr.present as present
from tests.conftest import ROOT

WEB = ROOT / "web"
DRIVER = Path(__file__).with_name("present_driver.mjs")
PYTHON = {"present": present, "catalogUrl": catalog_url}

# Functions of one side only, each with why it has no twin to compare.
ONE_SIDED = {
    ("present", "workloads_of"): "its twin is workloadsOf beside the component whose props it "
    "makes (web/src/components/Workloads.tsx), which would bring React and Gestalt here",
}

# Twins whose calls differ in form, not in what they answer.
ADAPTED: dict[tuple[str, str], Callable[..., Any]] = {
    # The client's own quote, quotePlus and unquote are urllib.parse's.
    ("present", "quote"): lambda part: quote(part, safe=""),
    ("present", "quotePlus"): lambda value: quote_plus(value, safe=""),
    ("present", "unquote"): unquote,
    # A property on the server, a function of the state on the client.
    ("catalogUrl", "kinds"): lambda state: state.kinds,
    # Keyword changes on the server (its ``q`` is the state's ``search``), an object on the client.
    ("catalogUrl", "href"): lambda state, changes=None: catalog_url.href(
        state, **{("q" if k == "search" else k): v for k, v in (changes or {}).items()}
    ),
    # (status, reason) on the server, {status, reason} on the client.
    ("present", "addressProblem"): lambda *address: (
        None
        if (found := present.address_problem(*address)) is None
        else {"status": found[0], "reason": found[1]}
    ),
}


def case(module: str, function: str, *args: Any) -> dict[str, Any]:
    return {"module": module, "function": function, "args": list(args)}


def params(query: str) -> dict[str, str]:
    """The address's query, as Starlette gives it to the server and URLSearchParams to the client."""
    return {"$params": query}


def state(query: str) -> dict[str, str]:
    """The catalog's state, as each side parses it from the query."""
    return {"$state": query}


def p(function: str, *args: Any) -> dict[str, Any]:
    return case("present", function, *args)


def c(function: str, *args: Any) -> dict[str, Any]:
    return case("catalogUrl", function, *args)


HOME_VIEWER = {
    "groups": [
        {
            "ref": "group:default/payments",
            "name": "payments",
            "profile": {"displayName": "Payments"},
            "owns": [
                {"ref": "component:default/checkout", "title": "Checkout"},
                {"ref": "component:default/zebra", "name": "zebra"},
                # Fullwidth "full": after "😀" in UTF-16's order, before it in code points'.
                {"ref": "api:default/full", "title": "\uff46\uff55\uff4c\uff4cwidth"},
                {"ref": "api:default/emoji", "title": "😀 emoji"},
                {"ref": "resource:default/ledger", "title": "ledger"},
                {"ref": "component:default/Ärger", "title": "Ärger"},
            ],
        },
        {
            "ref": "group:platform/sre",
            "name": "sre",
            "owns": [
                {"ref": "component:default/checkout", "title": "Checkout"},
                {"ref": "system:platform/mesh", "title": "Mesh"},
            ],
        },
    ],
    "attention": [
        {"level": "WARNING", "entity": {"ref": "component:default/zebra"}},
        {"level": "CRITICAL", "entity": {"ref": "system:platform/mesh"}},
        {"level": "CRITICAL", "entity": {"ref": "component:default/zebra"}},
        {"level": "INFO", "entity": {"ref": "resource:default/ledger"}},
        {"level": "NOTICE", "entity": None},
        {"level": "NOTICE"},
    ],
}

FACETS = {
    "kinds": [
        {"value": "Component", "count": 3},
        {"value": "API", "count": 1},
        {"value": "Widget", "count": 0},
    ],
    "owners": [
        {"value": "group:default/payments", "count": 2},
        {"value": "group:platform/sre", "count": 1},
    ],
    "types": [{"value": "service", "count": 4}],
    "lifecycles": [{"value": "production", "count": 2}, {"value": "experimental", "count": 1}],
    "tags": [],
}

# Catalog addresses, ordinary and awkward; each is parsed, linked back, and its variables made.
QUERIES = [
    "",
    "q=pay",
    "q=+pay+&q=ments",
    "q=caf%C3%A9+%26+more%3F%23%2F~*",
    "q=%zz",
    "q=a;b",
    "kind=Component&kind=component&kind=API",
    "kind=group&kind=user",
    "owner=mine",
    "owner=group:default/payments&owner=mine&owner=group:default/payments",
    "owner=group%3Ateam-a%2Fzo%C3%AB",
    "starred=1",
    "starred=true",
    "starred=yes&starred=0",
    "starred=0&starred=1",
    "sort=-owner",
    "sort=name&sort=-kind",
    "sort=bogus",
    "sort=--name",
    "sort=constructor",
    "sort=-toString",
    "sort=__proto__",
    "after=YWJj%3D%3D&after=ZGVm",
    "after=",
    "tag=pci&tag=&tag=+&tag=gdpr&tag=pci",
    "system=payments&type=service&lifecycle=production&lifecycle=deprecated",
    "unknown=1&Q=upper",
    "q=checkout&kind=component&owner=mine&starred=1&sort=-lifecycle&after=Y3Vyc29y",
]

CASES: list[dict[str, Any]] = [
    *(
        p("kindLabel", *args)
        for args in [
            ["component"],
            ["Component", True],
            ["group", True],
            ["user"],
            ["API"],
            ["location", True],
            ["widget"],
            ["widget", True],
            [""],
            ["Ärger", True],
            ["constructor"],
            ["__proto__", True],
            ["toString"],
        ]
    ),
    *(
        p("splitRef", ref)
        for ref in [
            "component:default/checkout",
            "component:checkout",
            "group:team-a/payments",
            "checkout",
            "component:ns/a/b",
            "",
            ":",
            "api:default/",
            "user:default/zoë",
        ]
    ),
    *(
        p(function, part)
        for function in ("quote", "quotePlus")
        for part in ["a b/c?d&e=f#g+h", "zoë 😀", "~_.-!'()*", "100%", " ", ""]
    ),
    *(
        p("unquote", text)
        for text in [
            "caf%C3%A9",
            "caf%c3%a9 zoë",
            "a+b%20c",
            "100%",
            "%zz%4",
            "caf%C3%A9%zz",
            "%FF",
            "%E2%82",
            "%E2a%82",
            "%F0%9F%98",
            "%F0%9F%98%80",
            "%C0%AF",
            "%ED%A0%80",
            "%2541",
            "",
        ]
    ),
    *(
        p("entityUrl", entity)
        for entity in [
            {"ref": "component:default/checkout"},
            {"ref": "api:payments/orders-v2"},
            {"ref": "component:checkout"},
            {"ref": "user:default/zoë.müller"},
            {"ref": "resource:default/a b#c?d&e/f"},
            {"ref": "component:default/100%"},
            {"ref": "group:team a/ops"},
            {"ref": ""},
        ]
    ),
    *(
        p("workloadUrl", workload)
        for workload in [
            {"cluster": "eu-1", "namespace": "shop", "name": "checkout"},
            {"cluster": "eu 1", "namespace": "a/b", "name": "zoë?#"},
            {"cluster": "", "namespace": "", "name": ""},
        ]
    ),
    *(
        p("displayName", entity)
        for entity in [
            {"profile": {"displayName": "Zoë Müller"}, "title": "T", "name": "zoe"},
            {"profile": {"displayName": ""}, "title": "Payments", "name": "payments"},
            {"profile": None, "title": "", "name": "payments"},
            {"profile": {}, "name": "payments"},
            {"title": "支払い"},
            {},
        ]
    ),
    *(
        p("picture", entity)
        for entity in [
            {"profile": {"picture": "https://example.com/zoë.png"}},
            {"profile": {"picture": ""}},
            {"profile": {}},
            {"profile": None},
            {},
        ]
    ),
    *(
        p("lifecycleTone", lifecycle)
        for lifecycle in [
            "production",
            "experimental",
            "deprecated",
            "Production",
            "retired",
            "",
            "constructor",
            "toString",
        ]
    ),
    *(
        p("entityBadges", entity)
        for entity in [
            {"kind": "Component", "type": "service", "lifecycle": "production"},
            {"kind": "API", "type": "openapi", "lifecycle": "experimental"},
            {"kind": "Group", "type": "team"},
            {"kind": "Resource", "type": "", "lifecycle": "retired"},
            {"kind": "Widget", "type": None, "lifecycle": None},
            {"kind": "constructor"},
            {"kind": None},
            {},
        ]
    ),
    *(
        p("crumbsOf", entity)
        for entity in [
            {"kind": "Component"},
            {"kind": "group"},
            {"kind": "User"},
            {"kind": "weird kind"},
            {"kind": "a/b&c"},
            {"kind": None},
            {},
        ]
    ),
    *(
        p("imageVersion", image)
        for image in [
            "nginx:1.27",
            "nginx",
            "registry.example.com:5000/team/app:v2.3.1",
            "registry.example.com:5000/team/app",
            "app@sha256:0123456789abcdef0123456789",
            "app:1.0@sha256:abcdef0123456789",
            "app@sha256:",
            "app@digestonly",
            "app:",
            "",
            None,
        ]
    ),
    *(
        p("workloadStatus", workload, unavailable)
        for workload, unavailable in [
            ({"cluster": "eu", "readyReplicas": 3, "desiredReplicas": 3, "rolloutProgress": 1}, {}),
            (
                {"cluster": "eu", "readyReplicas": 3, "desiredReplicas": 3, "rolloutProgress": 0.5},
                {},
            ),
            ({"cluster": "eu", "readyReplicas": 1, "desiredReplicas": 3, "rolloutProgress": 1}, {}),
            ({"cluster": "eu", "readyReplicas": 0, "desiredReplicas": 2, "rolloutProgress": 0}, {}),
            ({"cluster": "eu", "readyReplicas": 0, "desiredReplicas": 0, "rolloutProgress": 1}, {}),
            ({"cluster": "eu", "readyReplicas": 2, "desiredReplicas": 2}, {"eu": "timed out"}),
            ({"cluster": "us", "readyReplicas": 2, "desiredReplicas": 2}, {"eu": "timed out"}),
            ({"cluster": "constructor", "readyReplicas": 2, "desiredReplicas": 2}, {}),
            ({"cluster": "toString", "readyReplicas": 1, "desiredReplicas": 2}, {}),
            ({"readyReplicas": None, "desiredReplicas": None}, {}),
            ({}, {}),
        ]
    ),
    *(
        p("clusterErrors", items)
        for items in [
            [
                {"name": "eu", "healthy": True, "lastError": None},
                {"name": "us", "healthy": False, "lastError": "timeout"},
                {"name": "ap", "healthy": False, "lastError": ""},
            ],
            [{"cluster": "eu", "message": "refused"}, {"cluster": "us", "message": None}],
            [],
            None,
        ]
    ),
    *(
        p("workloadCrumbs", app)
        for app in [
            {"entity": {"ref": "component:default/checkout", "title": "Checkout"}},
            {"entity": {"ref": "component:shop/zoë", "profile": {"displayName": "Zoë"}}},
            {"entity": None},
            {},
        ]
    ),
    *(
        p("scalerBounds", app)
        for app in [
            {"scaler": {"minReplicas": 2, "maxReplicas": 5}, "replicas": 9},
            {"scaler": {"minReplicas": 0, "maxReplicas": 3}},
            {"scaler": {"minReplicas": 2}},
            {"scaler": {"minReplicas": 2, "maxReplicas": None}},
            {"scaler": {"minReplicas": None, "maxReplicas": 4}, "replicas": 3},
            {"scaler": None, "replicas": 0},
            {"replicas": None},
            {},
        ]
    ),
    *(
        p("podStatus", pod)
        for pod in [
            {"phase": "Running", "ready": True},
            {"phase": "Running", "ready": False},
            {"phase": "Pending", "ready": False},
            {"phase": "ContainerCreating"},
            {"phase": "CrashLoopBackOff", "ready": False},
            {"phase": "", "ready": None},
            {},
        ]
    ),
    *(
        p("missingSearchHref", path)
        for path in [
            "/nowhere",
            "/catalog/default/component/checkout/",
            "/",
            "",
            "///",
            "/x/caf%C3%A9",
            "/x/a%20b",
            "/x/a+b",
            "/x/hello%2Fworld",
            "/x/what~is*this",
            "/x/%20%20",
            "/x/100%",
            "/x/%zz",
            "/x/caf%C3%A9%zz",
            "/x/%FF",
            "/x/%E2%82",
            "/x/zoë",
        ]
    ),
    *(
        p("pageSections", *args)
        for args in [
            ["entity", "component", [["docs", "Docs"]], [["cost", "Cost"]]],
            ["entity", "api", [], []],
            ["entity", "system", [["metrics", "Metrics"]], []],
            ["entity", None, [], []],
            ["team", None, [["alerts", "Alerts"]], []],
            ["workload", None, [], [["logs", "Logs"]]],
            ["home", None, [["x", "X"]], [["y", "Y"]]],
        ]
    ),
    *(
        p("homeLead", viewer)
        for viewer in [
            {"groups": []},
            {},
            {"groups": [{"name": "payments", "profile": {"displayName": "Payments"}}]},
            {"groups": [{"name": "payments"}, {"title": "SRE"}]},
            {"groups": [{"name": "a"}, {"title": "Bé"}, {"profile": {"displayName": "支払い"}}]},
        ]
    ),
    *(
        p("attentionStatus", level)
        for level in [
            "CRITICAL",
            "WARNING",
            "NOTICE",
            "critical",
            "INFO",
            "",
            "constructor",
            "__proto__",
        ]
    ),
    p("homeServices", HOME_VIEWER),
    p("homeServices", {"groups": [], "attention": []}),
    p("homeServices", {}),
    *(
        p("addressProblem", *address)
        for address in [
            ["default", "component", "checkout"],
            ["Default", "Component", "Checkout"],
            ["team-a", "api", "orders.v2_1"],
            ["default", "widget", "checkout"],
            ["default", "Widget", "checkout"],
            ["default", "constructor", "checkout"],
            ["default", "__proto__", "checkout"],
            ["default", "component", "bad name"],
            ["default", "component", "checkout\n"],
            ["default\n", "component", "checkout"],
            ["default", "component", "-checkout"],
            ["default", "component", "a" * 63],
            ["default", "component", "a" * 64],
            ["", "component", "checkout"],
            ["default", "component", "zoë"],
            ["default", "component", "\u212a"],
        ]
    ),
    *(c("parse", params(query)) for query in QUERIES),
    *(c("kinds", state(query)) for query in ["", "kind=API", "kind=group&kind=Component"]),
    *(
        c("viewerRefs", answer)
        for answer in [
            None,
            {},
            {"viewer": None},
            {"viewer": {"groups": [], "starred": []}},
            {
                "viewer": {
                    "groups": [{"ref": "group:default/sre"}, {"ref": "group:default/payments"}],
                    "starred": [{"ref": "component:default/zebra"}, {"ref": "api:default/alpha"}],
                }
            },
        ]
    ),
    *(c("orderBy", state(query)) for query in QUERIES),
    *(c("href", state(query)) for query in QUERIES),
    *(c("variables", state(query)) for query in QUERIES),
    *(
        c(function, state(query), mine, starred)
        for function in ("entityFilter", "variables", "facetVariables")
        for query, mine, starred in [
            ("owner=mine", ["group:default/sre", "group:default/payments"], []),
            ("owner=mine&owner=group:default/sre", ["group:default/sre", "group:default/a"], []),
            ("starred=1&kind=api", [], ["api:default/b", "api:default/a"]),
            ("owner=mine&starred=1", [], []),
            ("tag=pci&owner=group:default/sre", ["group:default/x"], ["component:default/x"]),
        ]
    ),
    *(c("facetVariables", state(query)) for query in QUERIES),
    *(
        c("href", state(query), changes)
        for query, changes in [
            ("q=pay&after=Y3Vyc29y", {"after": None}),
            ("q=pay", {"after": "bmV4dA=="}),
            ("sort=name", {"sort": "-name", "after": None}),
            ("", {"search": "zoë & co?"}),
            ("q=pay", {"search": None}),
            ("kind=api", {"filters": {"kind": ["group"], "tag": ["a b", "c&d"]}}),
            ("owner=group:default/sre", {"mine": True}),
            ("owner=mine&starred=1", {"mine": False, "starred": False}),
        ]
    ),
    *(
        c("sortHref", state(query), key)
        for query, key in [
            ("", "name"),
            ("sort=name", "name"),
            ("sort=-name", "name"),
            ("sort=kind&after=Y3Vyc29y", "name"),
            ("q=pay&sort=owner", "owner"),
        ]
    ),
    *(
        c("sortedBy", state(query), key)
        for query, key in [
            ("sort=-owner", "owner"),
            ("sort=owner", "owner"),
            ("sort=owner", "kind"),
            ("", "name"),
        ]
    ),
    *(
        c("choice", state(query), field)
        for query, field in [
            ("owner=mine&owner=group:default/sre", "owner"),
            ("owner=group:default/sre", "owner"),
            ("kind=API&kind=group", "kind"),
            ("", "tag"),
            ("lifecycle=retired", "lifecycle"),
        ]
    ),
    *(
        c("options", state(query), facets, field, *viewer)
        for query, facets, field, viewer in [
            ("", FACETS, "kind", []),
            ("kind=widget", FACETS, "kind", []),
            ("kind=system", FACETS, "kind", []),
            ("", FACETS, "owner", ["user:default/ada"]),
            ("owner=mine", FACETS, "owner", [None]),
            ("owner=group:team-a/zoë", FACETS, "owner", ["user:default/ada"]),
            ("", FACETS, "type", []),
            ("lifecycle=retired", FACETS, "lifecycle", []),
            ("tag=pci", FACETS, "tag", []),
            ("", None, "tag", []),
            ("", {}, "lifecycle", []),
        ]
    ),
    *(c("kindHref", kind) for kind in ["Component", "api", "weird kind", "zoë"]),
    *(
        c("ownerHref", ref)
        for ref in ["group:default/payments", "group:team a/zoë", "user:default/ada&co"]
    ),
    *(
        {"module": module, "constant": name}
        for module, names in [
            ("present", ["KINDS"]),
            ("catalogUrl", ["PAGE_SIZE", "DEFAULT_KINDS", "SORTS", "COLUMNS"]),
        ]
        for name in names
    ),
]


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def plain(value: Any) -> Any:
    """An answer as JSON would carry it: tuples as lists, the catalog's state as an object."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return json.loads(json.dumps(value))


def python_argument(value: Any) -> Any:
    if isinstance(value, dict) and "$params" in value:
        return QueryParams(value["$params"])
    if isinstance(value, dict) and "$state" in value:
        return catalog_url.parse(QueryParams(value["$state"]))
    return value


def python_answer(c: dict[str, Any]) -> dict[str, Any]:
    module = PYTHON[c["module"]]
    try:
        if "constant" in c:
            return {"value": plain(getattr(module, c["constant"]))}
        name = c["function"]
        function = ADAPTED.get((c["module"], name)) or getattr(module, snake(name))
        return {"value": plain(function(*map(python_argument, c["args"])))}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


def describe(c: dict[str, Any]) -> str:
    return f"{c['module']}.{c.get('function') or c.get('constant')}"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The console's answers to every case, and the functions its two modules export."""
    node = shutil.which("node")
    if node is None or not (WEB / "node_modules" / "rolldown").is_dir():
        pytest.fail("Node and web/node_modules are needed: run `make test`")
    done = subprocess.run(
        [node, str(DRIVER), str(WEB), str(tmp_path_factory.mktemp("present"))],
        input=json.dumps(CASES),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    assert len(found["answers"]) == len(CASES)
    return found


@pytest.mark.parametrize(("index", "c"), list(enumerate(CASES)), ids=[describe(c) for c in CASES])
def test_both_sides_answer_alike(console: dict[str, Any], index: int, c: dict[str, Any]) -> None:
    client, server = console["answers"][index], python_answer(c)
    assert "error" not in server, f"the server fails on {c['args']}: {server['error']}"
    assert "error" not in client, f"the console fails on {c['args']}: {client['error']}"
    assert client == server, (
        f"{describe(c)}{tuple(c.get('args', ()))}:\n console: {client}\n server:  {server}"
    )


def _python_functions(module: Any) -> set[str]:
    return {
        name
        for name, value in vars(module).items()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and not name.startswith("_")
    }


def test_every_function_is_compared_or_one_sided(console: dict[str, Any]) -> None:
    compared = {(c["module"], c["function"]) for c in CASES if "function" in c}
    for module, names in console["exports"].items():
        # Each function the console exports has cases, on both sides.
        assert sorted({(module, n) for n in names} - compared) == []
        python = {snake(n) for n in names} | {snake(f) for m, f in ADAPTED if m == module}
        missing = {(module, n) for n in _python_functions(PYTHON[module]) - python}
        # A server function with no client twin is listed, with the reason.
        assert sorted(missing - ONE_SIDED.keys()) == []
        assert sorted(k for k in ONE_SIDED.keys() - missing if k[0] == module) == []


@pytest.mark.parametrize("query", QUERIES)
def test_the_catalog_address_survives_a_round_trip(query: str) -> None:
    """A page's own link (href) leads back to the same state, and says it the same way."""
    state = catalog_url.parse(QueryParams(query))
    link = catalog_url.href(state)
    again = catalog_url.parse(QueryParams(link.partition("?")[2]))
    assert again == state
    assert catalog_url.href(again) == link
