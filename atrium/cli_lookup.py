"""``atrium owner`` and ``atrium lookup``: ownership for scripts, asked of a running Atrium over
its API with a token (``--url`` and ``--token``, or ``ATRIUM_URL`` and ``ATRIUM_TOKEN``), as
any other tool asks it. Text by default, one tab-separated line per result, ``-`` where a
value is missing; ``--json`` for the whole answer. Exit 0 with an answer, 1 without one (an
unknown entity, no owner, nothing matching, the API refusing or unreachable).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from typing import Any, Final

import orjson

__all__ = ["add_lookup_commands"]

DEFAULT_URL: Final = "http://127.0.0.1:8000"
_PROFILE: Final = "ref title profile { displayName email }"
OWNER: Final = f"""query AtriumOwner($ref: String!) {{
  ownership(ref: $ref) {{
    entity {{ ref }}
    ownerRef
    owner {{ ref title ... on Group {{ {_PROFILE} }} ... on User {{ {_PROFILE} }} }}
    members {{ {_PROFILE} }}
    chain {{ {_PROFILE} }}
  }}
}}"""
_OWNED: Final = " ".join(
    f"... on {kind} {{ ownerRef }}" for kind in ("Component", "API", "Resource", "System", "Domain")
)
LOOKUP: Final = f"""query AtriumLookup($filter: EntityFilter, $after: String) {{
  entities(filter: $filter, first: 100, after: $after) {{
    nodes {{ ref kind title {_OWNED} }}
    pageInfo {{ hasNextPage endCursor }}
  }}
}}"""


class Refused(Exception):
    """Why there is no answer, as the command says it."""


def add_lookup_commands(commands: Any) -> None:
    owner = commands.add_parser(
        "owner",
        help="who owns an entity (for scripts)",
        description="Who owns an entity: its owner, the people who own it (members of the "
        "owning group and of the groups below it) and the groups above it. Text lines are "
        "'owner|member|parent <TAB> ref <TAB> display name <TAB> email'. Asks the API at "
        "--url (ATRIUM_URL) with --token (ATRIUM_TOKEN).",
    )
    owner.add_argument("ref", metavar="REF", help="an entity ref, e.g. component:checkout")
    _client_arguments(owner)
    owner.set_defaults(run=_owner)

    lookup = commands.add_parser(
        "lookup",
        help="find entities by annotation or label (for scripts)",
        description="Entities whose annotations and labels all have the values given, e.g. "
        "--annotation github.com/project-slug=juniper/checkout. Text lines are 'ref <TAB> "
        "owner'; exit 1 when nothing matches. Asks the API at --url (ATRIUM_URL) with "
        "--token (ATRIUM_TOKEN).",
    )
    lookup.add_argument(
        "--annotation", action="append", default=[], type=_pair, metavar="KEY=VALUE"
    )
    lookup.add_argument("--label", action="append", default=[], type=_pair, metavar="KEY=VALUE")
    lookup.add_argument("--kind", action="append", help="only entities of this kind; repeatable")
    _client_arguments(lookup)
    lookup.set_defaults(run=_lookup)


def _client_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser.add_argument(
        "--url", help=f"where Atrium answers (default: ATRIUM_URL, else {DEFAULT_URL})"
    )
    parser.add_argument(
        "--token",
        help="an API token (default: ATRIUM_TOKEN; the environment keeps it out of process lists)",
    )


def _pair(text: str) -> tuple[str, str]:
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _owner(settings: object, args: argparse.Namespace) -> int:
    def answer() -> dict[str, Any]:
        found = _ask(args, OWNER, {"ref": args.ref})["ownership"]
        if found is None:
            raise Refused(f"no entity {args.ref}")
        if found["ownerRef"] is None:
            raise Refused(f"{found['entity']['ref']} has no owner")
        owner = found["owner"] or {"ref": found["ownerRef"]}
        return {
            "ref": found["entity"]["ref"],
            "owner": _person(owner),
            "members": [_person(p) for p in found["members"]],
            "chain": [_person(p) for p in found["chain"]],
        }

    def lines(found: dict[str, Any]) -> Iterator[str]:
        yield _line("owner", found["owner"])
        yield from (_line("member", p) for p in found["members"])
        yield from (_line("parent", p) for p in found["chain"])

    return _run(args, answer, lines)


def _lookup(settings: object, args: argparse.Namespace) -> int:
    if not args.annotation and not args.label:
        print("atrium: give at least one --annotation or --label", file=sys.stderr)
        return 2

    def answer() -> list[dict[str, Any]]:
        where: dict[str, Any] = {}
        if args.annotation:
            where["annotations"] = dict(args.annotation)
        if args.label:
            where["labels"] = dict(args.label)
        if args.kind:
            where["kind"] = args.kind
        found: list[dict[str, Any]] = []
        after = None
        while True:
            page = _ask(args, LOOKUP, {"filter": where, "after": after})["entities"]
            found += [
                {
                    "ref": n["ref"],
                    "kind": n["kind"],
                    "title": n["title"],
                    "owner": n.get("ownerRef"),
                }
                for n in page["nodes"]
            ]
            if not page["pageInfo"]["hasNextPage"]:
                break
            after = page["pageInfo"]["endCursor"]
        if not found:
            raise Refused("no entity matches")
        return found

    def lines(found: list[dict[str, Any]]) -> Iterator[str]:
        return ("\t".join((e["ref"], e["owner"] or "-")) for e in found)

    return _run(args, answer, lines)


def _run(args: argparse.Namespace, answer: Any, lines: Any) -> int:
    try:
        found = answer()
    except Refused as exc:
        print(f"atrium: {exc}", file=sys.stderr)
        return 1
    if args.json:
        sys.stdout.write(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for line in lines(found):
            print(line)
    return 0


def _ask(args: argparse.Namespace, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    """The data of one query; Refused with the API's own words when there is none."""
    import httpx

    url = (args.url or os.environ.get("ATRIUM_URL") or DEFAULT_URL).rstrip("/")
    token = args.token or os.environ.get("ATRIUM_TOKEN")
    headers = {"accept": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    try:
        response = httpx.post(
            f"{url}/graphql",
            json={"query": query, "variables": variables},
            headers=headers,
            timeout=30,
        )
    except httpx.HTTPError as exc:
        raise Refused(f"cannot reach {url}: {exc}") from None
    try:
        body = response.json()
    except ValueError:
        raise Refused(f"{url} answered {response.status_code}, not GraphQL") from None
    errors = body.get("errors") if isinstance(body, dict) else None
    if errors:
        raise Refused("; ".join(str(e.get("message")) for e in errors))
    if response.status_code != 200 or not isinstance(body.get("data"), dict):
        raise Refused(f"{url} answered {response.status_code}")
    data: dict[str, Any] = body["data"]
    return data


def _person(entity: dict[str, Any]) -> dict[str, Any]:
    profile = entity.get("profile") or {}
    return {
        "ref": entity["ref"],
        "displayName": profile.get("displayName") or entity.get("title"),
        "email": profile.get("email"),
    }


def _line(role: str, person: dict[str, Any]) -> str:
    return "\t".join((role, person["ref"], person["displayName"] or "-", person["email"] or "-"))
