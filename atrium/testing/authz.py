"""``check_authorization``: the authorization matrix, for Atrium's fields and a plugin's.

Every mutation (all of the schema's, or those one plugin adds: a field without a case fails,
so a new one cannot be forgotten) is called by each of ten callers (``ROLES``): nobody, API
tokens of each scope with and without a subject, a person in another part of the organisation,
a member of the owning team's parent group, the owner, and an admin. What each caller meets is
declared once per field (``Case.expected``, a profile such as ``OWNERS``):

- a refusal is the code declared (``UNAUTHENTICATED`` or ``FORBIDDEN``) with no data, exactly
  one audit row for the field's action with the outcome ``denied``, and ``state()`` (what the
  mutations could change, read back after each refusal) as it was before the first: callers
  who are refused go first, for every field;
- an admission is an answer without ``UNAUTHENTICATED`` or ``FORBIDDEN``, audited ``allowed``
  (or ``failed`` with one of ``Case.resolver_codes``: the rule let the caller in and the
  resolver's own check answered, e.g. a backend the test does not run). Admitted callers go
  after every refusal, in ``ROLES`` order, each on the arguments ``Case.admitted_as`` gives
  for them (the owner on one object, an admin on a second) or ``Case.variables``.

``Read`` cases hold the private reads to the same profiles over ``/graphql`` (a refusal is the
code declared; an admission answers, and ``shows(data)`` is true), and ``Page`` cases the
console's pages where the same things show (the page answers 200 to every caller that may read,
and its control, ``marker``, is in the HTML exactly for the callers admitted).

::

    callers = await authz_callers(
        client, owner="ann", non_owner="bob", parent_member="carol"
    )
    await check_authorization(
        client,
        callers,
        {"setCost": Case(OWNERS, {"ref": "component:default/shop", "cost": 3})},
        plugin_id="cost",
        state=lambda: client.services.db.fetch("select * from costs order by ref"),
    )
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from atrium.testing.operations import FieldRef, operation_for, plugin_fields, schema_of

__all__ = [
    "ADMINS",
    "ADMITTED",
    "FORBIDDEN",
    "HIDDEN",
    "OWNERS",
    "PERSONAL",
    "REFUSED",
    "ROLES",
    "UNAUTHENTICATED",
    "AuthorizationFailures",
    "Callers",
    "Case",
    "Matrix",
    "Page",
    "Read",
    "authz_callers",
    "check_authorization",
    "permission",
]

NOBODY: Final = "nobody"
READ_TOKEN: Final = "read token"
WRITE_TOKEN: Final = "write token"
OWNERS_READ_TOKEN: Final = "owner's read token"
NON_OWNER: Final = "non-owner"
PARENT_MEMBER: Final = "parent-group member"
OWNER: Final = "owner"
OWNERS_WRITE_TOKEN: Final = "owner's write token"
ADMIN: Final = "admin"
ADMIN_TOKEN: Final = "admin token"
# Refused callers of a profile go first, so the order here is only that of each phase.
ROLES: Final = (
    NOBODY,
    READ_TOKEN,
    WRITE_TOKEN,
    OWNERS_READ_TOKEN,
    NON_OWNER,
    PARENT_MEMBER,
    OWNER,
    OWNERS_WRITE_TOKEN,
    ADMIN,
    ADMIN_TOKEN,
)

UNAUTHENTICATED: Final = "UNAUTHENTICATED"
FORBIDDEN: Final = "FORBIDDEN"
ADMITTED: Final = "admitted"
# What a read that is not refused, but does not show the thing, is (``permission``).
HIDDEN: Final = "hidden"


def _profile(admitted: set[str], nobody: str = UNAUTHENTICATED) -> dict[str, str]:
    return {
        role: ADMITTED if role in admitted else nobody if role == NOBODY else FORBIDDEN
        for role in ROLES
    }


# The owners of what a field changes (their members, a token acting as one of them with the
# write scope) and admins (a member of the admin group, a token of the admin scope).
OWNERS: Final = _profile({OWNER, OWNERS_WRITE_TOKEN, ADMIN, ADMIN_TOKEN})
# Admins only.
ADMINS: Final = _profile({ADMIN, ADMIN_TOKEN})
# What a person changes of their own (stars): any person signed in, or a write token acting
# as one; never a token that names no person.
PERSONAL: Final = _profile({NON_OWNER, PARENT_MEMBER, OWNER, OWNERS_WRITE_TOKEN, ADMIN})
# Refused to everyone, admins included: a change that would take over what another owns.
REFUSED: Final = _profile(set())


def permission(profile: Mapping[str, str]) -> dict[str, str]:
    """A profile as a read shows it: a field that says whether the viewer may (the console
    draws the control when it does) answers for everyone, true for those ``profile`` admits."""
    return {role: ADMITTED if outcome == ADMITTED else HIDDEN for role, outcome in profile.items()}


@dataclass(frozen=True)
class Callers:
    """The headers each role sends (``ROLES``), and who the people are."""

    headers: Mapping[str, Mapping[str, str]]
    owner: str
    non_owner: str
    parent_member: str
    admin: str


async def authz_callers(
    client: Any,
    *,
    owner: str,
    non_owner: str,
    parent_member: str,
    admin: str = "atrium-matrix-admin",
) -> Callers:
    """The ten callers of the matrix for ``client``'s app: people by the trusted proxy's user
    header (``owner``, ``non_owner``, ``parent_member``: user names of the catalog, the owner
    in the team owning the objects of the cases, the parent-group member in the group above
    it; ``admin`` is made a member of the admin group), and tokens made for the test."""
    from sources.auth import create_token

    db = client.services.db
    settings = client.services.settings
    if settings.admin_group:
        await client._join_groups(admin, [settings.admin_group])
    owner_ref = f"user:default/{owner}"

    async def token(scopes: list[str], subject: str | None) -> dict[str, str]:
        _, secret = await create_token(db, f"matrix-{'-'.join(scopes)}", scopes, subject)
        return {"Authorization": f"Bearer {secret}"}

    def person(name: str) -> dict[str, str]:
        return {settings.user_header: name}

    headers = {
        NOBODY: {},
        READ_TOKEN: await token(["read"], None),
        WRITE_TOKEN: await token(["read", "write"], None),
        OWNERS_READ_TOKEN: await token(["read"], owner_ref),
        NON_OWNER: person(non_owner),
        PARENT_MEMBER: person(parent_member),
        OWNER: person(owner),
        OWNERS_WRITE_TOKEN: await token(["read", "write"], owner_ref),
        ADMIN: person(admin),
        ADMIN_TOKEN: await token(["admin"], None),
    }
    return Callers(headers, owner, non_owner, parent_member, admin)


@dataclass(frozen=True)
class Case:
    """A mutation's expected outcome for each role, declared once. Keyed by the mutation's
    name, or by a label of its own with ``field`` naming the mutation (a second shape of its
    arguments: a manifest aimed at another team's workload, say)."""

    expected: Mapping[str, str]
    # Its arguments (those not given take a plain value of their type).
    variables: Mapping[str, Any] = field(default_factory=dict)
    # An admitted role's own arguments: the owner acts on one object, an admin on a second.
    admitted_as: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Codes the resolver may answer once the rule has admitted the caller (audited ``failed``).
    resolver_codes: frozenset[str] = frozenset()
    field: str | None = None


@dataclass(frozen=True)
class Read:
    """A private read: ``document`` asked by each role with ``variables``. A refusal is the
    code ``expected`` declares; ``ADMITTED`` answers with ``shows(data)`` true, ``HIDDEN``
    (from ``permission``) with it false."""

    document: str
    expected: Mapping[str, str]
    shows: Callable[[Any], bool]
    variables: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    """A console page where a control shows: ``marker`` (text of the HTML, e.g. a button's
    label) is on the page for the roles ``expected`` admits, and not for the others."""

    path: str
    marker: str
    expected: Mapping[str, str]


@dataclass(frozen=True)
class Matrix:
    """What was checked: ``calls`` requests, over ``fields`` mutations (in ``cases`` shapes of
    their arguments), ``reads`` and ``pages``, by ``len(ROLES)`` callers."""

    calls: int
    fields: int
    cases: int
    reads: int
    pages: int


class AuthorizationFailures(AssertionError):
    """Each cell of the matrix that answered otherwise than declared."""

    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        super().__init__(f"{len(failures)} cells answered otherwise:\n" + "\n".join(failures))


def _codes(body: Mapping[str, Any]) -> list[str | None]:
    return [(e.get("extensions") or {}).get("code") for e in body.get("errors") or []]


def _actions(client: Any) -> dict[str, str]:
    """The audit action of every mutation, by field name (its ``Authorize``)."""
    from graph.authz import Authorize

    mutation = client.services.assembly.schema.get_type_by_name("Mutation")
    names = client.services.assembly.schema.config.name_converter
    found = {}
    for definition in mutation.fields if mutation is not None else ():
        rules = [e for e in definition.extensions if isinstance(e, Authorize)]
        found[names.get_graphql_name(definition)] = rules[0].action if rules else ""
    return found


async def check_authorization(
    client: Any,
    callers: Callers,
    cases: Mapping[str, Case],
    *,
    plugin_id: str | None = None,
    state: Callable[[], Awaitable[Any]] | None = None,
    reads: Mapping[str, Read] | None = None,
    pages: Mapping[str, Page] | None = None,
) -> Matrix:
    """Check every mutation (``plugin_id``'s, else the whole schema's) against its ``Case``,
    then ``reads`` and ``pages``; raise ``AuthorizationFailures`` naming every cell that
    answered otherwise. ``state`` reads back what the mutations could change."""
    schema = schema_of(client)
    if plugin_id is None:
        fields = list(schema.mutation_type.fields) if schema.mutation_type else []
    else:
        fields = [
            f.field_name for f in plugin_fields(client, plugin_id) if f.type_name == "Mutation"
        ]
    named = [(label, case.field or label, case) for label, case in cases.items()]
    covered = {name for _, name, _ in named}
    failures = [f"{name}: a mutation with no case" for name in fields if name not in covered]
    failures += [
        f"{label}: a case for no mutation" for label, name, _ in named if name not in fields
    ]
    named = [(label, name, case) for label, name, case in named if name in fields]
    actions = _actions(client)
    db = client.services.db
    calls = 0
    baseline: Any = None  # what ``state`` read before the first refusal

    async def audited(
        since: int, label: str, name: str, outcomes: tuple[str, ...], who: str
    ) -> None:
        rows = await db.fetch(
            "select action, outcome from audit_log where id > $1 order by id", since
        )
        seen = [(r["action"], r["outcome"]) for r in rows]
        if len(seen) != 1 or seen[0][0] != actions.get(name) or seen[0][1] not in outcomes:
            failures.append(
                f"{who}: {label}: audited {seen}, not one {actions.get(name)} {outcomes}"
            )

    async def call(label: str, name: str, case: Case, who: str, refused: bool) -> None:
        nonlocal calls, baseline
        variables = case.variables if refused else case.admitted_as.get(who, case.variables)
        document, bound = operation_for(schema, FieldRef("Mutation", name), variables, {})
        since = await db.fetchval("select coalesce(max(id), 0) from audit_log")
        response = await client.post(
            "/graphql", json={"query": document, "variables": bound}, headers=callers.headers[who]
        )
        calls += 1
        body = response.json()
        codes = _codes(body)
        expected = case.expected[who]
        if refused:
            if codes != [expected] or (body.get("data") or {}).get(name) is not None:
                failures.append(f"{who}: {label}: {expected} expected, got {str(body)[:300]}")
                if state is not None:  # what it did is said: later calls are held to the rest
                    baseline = await state()
                return
            await audited(since, label, name, ("denied",), who)
            if state is not None:
                now = await state()
                if now != baseline:  # said once: later calls are held to what is there now
                    failures.append(f"{who}: {label}: refused, but what it changes changed")
                    baseline = now
            return
        if {UNAUTHENTICATED, FORBIDDEN} & set(codes) or not set(codes) <= case.resolver_codes:
            failures.append(f"{who}: {label}: admitted expected, got {str(body)[:300]}")
            return
        await audited(since, label, name, ("allowed", "failed") if codes else ("allowed",), who)

    if state is not None:
        baseline = await state()
    for who in ROLES:
        for label, name, case in named:
            if case.expected[who] != ADMITTED:
                await call(label, name, case, who, refused=True)
    for label, name, case in named:
        for who in ROLES:
            if case.expected[who] == ADMITTED:
                await call(label, name, case, who, refused=False)

    for name, read in (reads or {}).items():
        for who in ROLES:
            calls += 1
            response = await client.post(
                "/graphql",
                json={"query": read.document, "variables": dict(read.variables)},
                headers=callers.headers[who],
            )
            body = response.json()
            expected = read.expected[who]
            if expected in (UNAUTHENTICATED, FORBIDDEN):
                if expected not in _codes(body):
                    failures.append(f"{who}: {name}: {expected} expected, got {str(body)[:300]}")
            elif body.get("errors") or read.shows(body.get("data")) != (expected == ADMITTED):
                failures.append(f"{who}: {name}: {expected} expected, got {str(body)[:300]}")

    for name, page in (pages or {}).items():
        marker = html.escape(page.marker, quote=False)
        for who in ROLES:
            calls += 1
            response = await client.get(page.path, headers=callers.headers[who])
            if response.status_code != 200:
                failures.append(f"{who}: {name}: {page.path} answered {response.status_code}")
            elif (marker in response.text) != (page.expected[who] == ADMITTED):
                shown = "shows" if marker in response.text else "does not show"
                failures.append(f"{who}: {name}: {page.path} {shown} {page.marker!r}")

    if failures:
        raise AuthorizationFailures(failures)
    return Matrix(calls, len(covered & set(fields)), len(named), len(reads or {}), len(pages or {}))
