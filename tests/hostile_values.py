"""What hostile and generated operations are made of: strings, integers and IDs a client could
send, as plain values (for the sweep) and as hypothesis strategies of GraphQL value nodes (for
hypothesis-graphql's ``custom_scalars``, which it consults before its own built-in scalars).

Besides hypothesis's own text, the pools mix in what breaks servers (NUL, lone surrogates, a
hundred thousand characters, SQL and LIKE metacharacters, path climbing, odd Unicode, broken
and hostile YAML, forged cursors and global IDs, boundary integers) and what reaches real code
paths (refs of the demo organisation, its clusters, namespaces and workloads, valid manifests
and catalog documents), so generated mutations sometimes succeed.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson
from hypothesis import strategies as st
from hypothesis_graphql import nodes

__all__ = [
    "BY_ARGUMENT",
    "HOSTILE_INTS",
    "HOSTILE_STRINGS",
    "MEMBER",
    "TARGETS",
    "scalar_strategies",
]

MEMBER = "amelia.chen"  # of checkout-team, which owns component:default/checkout

_CHECKOUT_MANIFEST = """\
apiVersion: compute.atrium.dev/v1
kind: PinApp
metadata:
  name: checkout
  namespace: shop
  annotations: {atrium.dev/entity-ref: component:default/checkout}
spec: {image: registry.example/checkout:2.0, replicas: 3}
"""
_SEARCH_MANIFEST = _CHECKOUT_MANIFEST.replace("checkout", "search")
_CATALOG_DOCUMENT = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: hostile-probe, description: "made by a generated operation"}
spec: {type: service, lifecycle: experimental, owner: checkout-team}
"""
_LAUGHS = "a: &a [1,2,3,4,5,6,7,8,9]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def _b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else orjson.dumps(value)
    return base64.urlsafe_b64encode(raw).decode()


# Arguments naming one real thing together: a generated operation that asks for these names
# has them replaced by one of these sets (the other arguments stay as generated).
TARGETS = [
    {"cluster": "east", "namespace": "shop", "name": "checkout", "ref": "component:checkout"},
    {"cluster": "west", "namespace": "shop", "name": "search", "ref": "component:default/search"},
    {"cluster": "east", "namespace": "shop", "name": "nope", "ref": "api:default/checkout-api"},
    {"ref": f"user:default/{MEMBER}", "manifest": _CHECKOUT_MANIFEST, "yaml": _CATALOG_DOCUMENT},
    {"cluster": "east", "manifest": _SEARCH_MANIFEST, "image": "registry.example/checkout:3"},
]
DOMAIN_STRINGS = [
    "component:default/checkout",
    "component:checkout",
    "Component:Default/Checkout",
    "component:default/search",
    "group:default/checkout-team",
    "checkout-team",
    f"user:default/{MEMBER}",
    MEMBER,
    "east",
    "west",
    "shop",
    "checkout",
    "search",
    "registry.example/checkout:2.0",
    _CHECKOUT_MANIFEST,
    _SEARCH_MANIFEST,
    _CATALOG_DOCUMENT,
    _b64(["name", "checkout", "component:default/checkout"]),  # a name-order cursor
    _b64(["owner", None, "component:default/checkout"]),  # past the owned, by owner
    _b64(["checkout", "component:default/checkout"]),  # a name cursor of an earlier form
    _b64(3),  # a relevance cursor
    base64.b64encode(b"Component:component:default/checkout").decode(),  # a global ID
]
HOSTILE_STRINGS = [
    "\x00",
    "component:default/check\x00out",
    "\ud800",
    "check\udfffout",
    "",
    " ",
    "%",
    "_",
    "\\",
    "%_\\%",
    "'; drop table entities; --",
    '" or 1=1 --',
    "a:* & !b | (c <-> d)",
    "../../../../etc/passwd",
    "component:../../x",
    "${jndi:ldap://127.0.0.1/a}",
    "{{7*7}}",
    "<script>alert(1)</script>",
    "\r\nX-Injected: 1",
    "\u202eevil",
    "\ufeff",
    "\U0001f600" * 50,
    "\U0001d518\U0001d52b\U0001d526",  # letters outside the Basic Multilingual Plane
    "a" * 100_000,
    "component:default/" + "a" * 300,
    "atr_x_y",
]
# YAML that does not parse, or stands for what no JSON (nor PostgreSQL) can hold.
HOSTILE_YAML = [
    "a: [b",
    "[" * 5_000,
    "&a [*a]",
    _LAUGHS,
    'a: "\\0"',
    'a: "\\ud800"',
    "a: 123456789012345678901234567890",
    "a: " + "9" * 5_000,
    "a: !!binary aGVsbG8=",
    "a: !!int abc",
    "? [a]\n: b",
    "a: b\n\x07",
    "!!python/object/apply:os.system [id]",
    _CHECKOUT_MANIFEST.replace("ref: component:default/checkout", 'ref: "check\\0out"'),
    _CHECKOUT_MANIFEST.replace("replicas: 3", "replicas: 3, env: {a: 1}"),
    _CHECKOUT_MANIFEST.replace("  annotations: {", "  labels: {a: [1]}\n  annotations: {"),
    _CATALOG_DOCUMENT.replace("experimental", "{x: .nan}"),
]
# Cursors and global IDs this API never issued.
HOSTILE_IDS = [
    "Y3Vyc29y",  # base64 of "cursor"
    _b64(["a\x00", "b"]),
    _b64(b'["a","\\ud800"]'),
    _b64([1, 2]),
    _b64(["title", None, "component:default/checkout"]),  # titles are never missing
    _b64(["owner", "a\x00", "b"]),
    _b64(["nope", "a", "b"]),
    _b64(2**63),
    _b64(-1),
    _b64(b"\xff\xfe\x00"),
    base64.b64encode(b"Query:x").decode(),
    base64.b64encode(b"Nope:x").decode(),
    base64.b64encode(b":").decode(),
    base64.b64encode(b"Component:component:default/a\x00b").decode(),
]
HOSTILE_STRINGS += HOSTILE_YAML + HOSTILE_IDS
# What the arguments of these names are given, now and then, besides what their type allows:
# the inputs a parser or decoder stands behind.
BY_ARGUMENT = {
    "manifest": [*HOSTILE_YAML, _CHECKOUT_MANIFEST, _SEARCH_MANIFEST],
    "yaml": [*HOSTILE_YAML, _CATALOG_DOCUMENT],
    "after": [*HOSTILE_IDS, _b64(["checkout", "component:default/checkout"]), _b64(3)],
    "id": [*HOSTILE_IDS, base64.b64encode(b"Component:component:default/checkout").decode()],
    "search": ["%", "_", "\\", "'", '"', "a:* & !b | (c <-> d)", "!!!", "(", "<->", "\x00"],
}
HOSTILE_INTS = [-(2**31), -1, 0, 1, 2, 20, 99, 100, 101, 500, 501, 1000, 1001, 10_001, 2**31 - 1]


def _text() -> st.SearchStrategy[str]:
    # Weighted towards names that exist, so that generated operations reach real code paths
    # and not only the front door's refusals.
    return st.one_of(
        st.sampled_from(DOMAIN_STRINGS),
        st.sampled_from(DOMAIN_STRINGS),
        st.sampled_from(DOMAIN_STRINGS),
        st.text(max_size=30),
        st.text(max_size=30),
        st.sampled_from(HOSTILE_STRINGS),
        st.text(st.sampled_from("%_\\'\"*:!&|()<>-/. \t\n"), max_size=12),
        # Lone surrogates anywhere: JSON escapes them, as JSON.stringify does.
        st.text(st.characters(codec=None, min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=4),
    )


def _ints() -> st.SearchStrategy[int]:
    return st.one_of(
        st.sampled_from(HOSTILE_INTS), st.integers(min_value=-(2**31), max_value=2**31 - 1)
    )


def _json_value() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.none().map(lambda _: nodes.Null),
        _ints().map(nodes.Int),
        _text().map(nodes.String),
        st.booleans().map(nodes.Boolean),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(nodes.List),
            st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), inner, max_size=3).map(
                lambda d: nodes.Object([_field(k, v) for k, v in d.items()])
            ),
        ),
        max_leaves=6,
    )


def _field(name: str, value: Any) -> Any:
    from graphql import NameNode, ObjectFieldNode

    return ObjectFieldNode(name=NameNode(value=name), value=value)


def scalar_strategies() -> dict[str, st.SearchStrategy[Any]]:
    """Value-node strategies for the schema's scalars, built-in ones included."""
    text = _text().map(nodes.String)
    return {
        "String": text,
        "ID": st.one_of(text, _ints().map(nodes.Int)),
        "Int": st.one_of(
            _ints().map(nodes.Int),
            # Beyond GraphQL's Int now and then: refused as the document is validated.
            st.sampled_from([2**31, 2**53, -(2**63)]).map(nodes.Int),
        ),
        "DateTime": st.datetimes().map(lambda d: d.isoformat()).map(nodes.String),
        "JSON": _json_value(),
    }
