"""What hostile and generated operations are made of: strings, integers and IDs a client could
send, as plain values (for the sweep) and as hypothesis strategies of GraphQL value nodes (for
hypothesis-graphql's ``custom_scalars``, which it consults before its own built-in scalars).

Besides hypothesis's own text, the pools mix in what breaks servers (NUL, lone surrogates, a
hundred thousand characters, SQL and LIKE metacharacters, path climbing, odd Unicode, broken
and hostile YAML, forged cursors and global IDs, boundary integers), what breaks the URLs,
headers and paths a value may be put into (control characters, ``/``, ``..``, ``%``, ``?``,
``#``; ids and Kubernetes names are given them often) and what reaches real code paths (refs of the demo organisation, its clusters, namespaces and workloads, valid manifests
and catalog documents), so generated mutations sometimes succeed.
"""

from __future__ import annotations

import base64
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLList,
    get_named_type,
    get_nullable_type,
)
from hypothesis import strategies as st
from hypothesis_graphql import nodes

from atrium.testing.hostile_values import (
    CATALOG_DOCUMENT,
    CHECKOUT_MANIFEST,
    HOSTILE_IDS,
    HOSTILE_INTS,
    HOSTILE_STRINGS,
    HOSTILE_URL_PARTS,
    HOSTILE_YAML,
    SEARCH_MANIFEST,
)
from atrium.testing.hostile_values import b64 as _b64

__all__ = [
    "BY_ARGUMENT",
    "HOSTILE_INTS",
    "HOSTILE_STRINGS",
    "MEMBER",
    "TARGETS",
    "scalar_strategies",
]

MEMBER = "amelia.chen"  # of checkout-team, which owns component:default/checkout

# Arguments naming one real thing together: a generated operation that asks for these names
# has them replaced by one of these sets (the other arguments stay as generated).
TARGETS = [
    {"cluster": "east", "namespace": "shop", "name": "checkout", "ref": "component:checkout"},
    {"cluster": "west", "namespace": "shop", "name": "search", "ref": "component:default/search"},
    {"cluster": "east", "namespace": "shop", "name": "nope", "ref": "api:default/checkout-api"},
    {"ref": f"user:default/{MEMBER}", "manifest": CHECKOUT_MANIFEST, "yaml": CATALOG_DOCUMENT},
    {"cluster": "east", "manifest": SEARCH_MANIFEST, "image": "registry.example/checkout:3"},
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
    CHECKOUT_MANIFEST,
    SEARCH_MANIFEST,
    CATALOG_DOCUMENT,
    _b64(["name", "checkout", "component:default/checkout"]),  # a name-order cursor
    _b64(["owner", None, "component:default/checkout"]),  # past the owned, by owner
    _b64(["checkout", "component:default/checkout"]),  # a name cursor of an earlier form
    _b64(3),  # a relevance cursor
    base64.b64encode(b"Component:component:default/checkout").decode(),  # a global ID
]
# What the arguments of these names are given, now and then, besides what their type allows:
# the inputs a parser or decoder stands behind.
BY_ARGUMENT = {
    "manifest": [*HOSTILE_YAML, CHECKOUT_MANIFEST, SEARCH_MANIFEST],
    "yaml": [*HOSTILE_YAML, CATALOG_DOCUMENT],
    "after": [*HOSTILE_IDS, _b64(["checkout", "component:default/checkout"]), _b64(3)],
    "id": [
        *HOSTILE_IDS,
        *HOSTILE_URL_PARTS,
        base64.b64encode(b"Component:component:default/checkout").decode(),
    ],
    # Names that go into a cluster's URLs.
    "namespace": [*HOSTILE_URL_PARTS, "shop"],
    "pod": [*HOSTILE_URL_PARTS, "checkout-abc"],
    "container": [*HOSTILE_URL_PARTS, "app"],
    "search": ["%", "_", "\\", "'", '"', "a:* & !b | (c <-> d)", "!!!", "(", "<->", "\x00"],
}


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


def plain_value(argument: GraphQLArgument) -> Any:
    """A well-formed value of an argument's type, for the arguments a probe does not aim at."""
    named = get_named_type(argument.type)
    value: Any
    if isinstance(named, GraphQLEnumType):
        value = next(iter(named.values))
    elif isinstance(named, GraphQLInputObjectType):
        value = {}
    elif named.name == "Int":
        value = 1
    elif named.name == "Boolean":
        value = False
    elif named.name == "Float":
        value = 1.0
    else:
        value = "component:default/checkout"
    return [value] if isinstance(get_nullable_type(argument.type), GraphQLList) else value
