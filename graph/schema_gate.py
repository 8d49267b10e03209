"""The breaking-change gate: a live schema held against the one deployed clients were built on.

The baseline's SDL and the live schema are compared by graphql-core's ``find_breaking_changes``:
every breaking change (a field removed or renamed, a type changed, an argument made required)
must be acknowledged with a reason, an acknowledgement that matches no change fails too, and
every operation given (a console's) must validate against the live schema, acknowledged or
not. Dangerous changes (``find_dangerous_changes``: an enum value or an optional argument
added) and safe ones (a field added) pass. Atrium's own schema is held to it by
``make test`` (``tests/graph/test_schema_compat.py``, baseline and acknowledgements in
``schema-changes.md``); a plugin's fragment by ``atrium schema check --plugin ID``
(``check_plugin``), its baseline the plugin's committed fragment on Atrium's own schema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLSchema,
    OperationDefinitionNode,
    Source,
    build_schema,
    find_breaking_changes,
    find_dangerous_changes,
    parse,
    print_ast,
    validate,
)

__all__ = [
    "Acknowledgements",
    "Operation",
    "Report",
    "check",
    "check_plugin",
    "read_acknowledgements",
    "read_operations",
    "validate_operations",
]

BASELINE_LINE = re.compile(r"^Baseline: `?(?P<commit>[0-9a-f]{7,40})`?\s*$", re.MULTILINE)
ACK_LINE = re.compile(r"^- (?P<change>[A-Z_]+: .+?) Reason: (?P<reason>\S.*)$")


@dataclass(frozen=True)
class Operation:
    origin: str  # where it comes from, for messages
    name: str
    body: str


@dataclass
class Acknowledgements:
    baseline: str | None
    changes: dict[str, str]  # "TYPE: description" -> reason
    malformed: list[str]


@dataclass
class Report:
    unacknowledged: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)
    invalid_operations: list[str] = field(default_factory=list)
    dangerous: list[str] = field(default_factory=list)
    # Where acknowledgements are written, for messages.
    acknowledgements: str = "schema-changes.md"

    def failures(self) -> list[str]:
        where = self.acknowledgements
        return [
            *(
                f"breaking change not acknowledged in {where}: {c}"
                " (a deployed client may use it: acknowledge it as `- <change> Reason: <why>`"
                " or keep the schema compatible)"
                for c in self.unacknowledged
            ),
            *(
                f"stale acknowledgement in {where} (no such change from the"
                f" baseline any more; remove it): {c}"
                for c in self.stale
            ),
            *(
                f"{where}: not `- TYPE: description Reason: why`: {line!r}"
                for line in self.malformed
            ),
            *(
                f"console operation invalid on the live schema: {e}"
                for e in self.invalid_operations
            ),
        ]


def read_acknowledgements(text: str) -> Acknowledgements:
    """The baseline commit and the acknowledged changes (list items under ``## Acknowledged``)."""
    baseline = BASELINE_LINE.search(text)
    changes: dict[str, str] = {}
    malformed: list[str] = []
    in_section = False
    for line in text.splitlines():
        if line.startswith("## "):
            in_section = line.strip() == "## Acknowledged"
            continue
        if not in_section or not line.startswith("- "):
            continue
        match = ACK_LINE.match(line.rstrip())
        if match is None:
            malformed.append(line)
        else:
            changes[match["change"]] = match["reason"]
    return Acknowledgements(baseline and baseline["commit"], changes, malformed)


def validate_operations(schema: GraphQLSchema, operations: list[Operation]) -> list[str]:
    problems = []
    for op in operations:
        try:
            errors = validate(schema, parse(op.body))
        except GraphQLError as exc:
            errors = [exc]
        problems += [f"{op.name} ({op.origin}): {e.message}" for e in errors]
    return problems


def check(
    baseline_sdl: str,
    live: GraphQLSchema,
    acknowledgements: str,
    operations: list[Operation],
    *,
    acknowledgements_name: str = "schema-changes.md",
) -> Report:
    """The whole gate, in one place: ``live`` against the schema ``baseline_sdl`` describes."""
    baseline = build_schema(baseline_sdl)
    acks = read_acknowledgements(acknowledgements)
    breaking = [f"{c.type.name}: {c.description}" for c in find_breaking_changes(baseline, live)]
    return Report(
        unacknowledged=[c for c in breaking if c not in acks.changes],
        stale=[c for c in acks.changes if c not in breaking],
        malformed=acks.malformed,
        invalid_operations=validate_operations(live, operations),
        dangerous=[
            f"{c.type.name}: {c.description}" for c in find_dangerous_changes(baseline, live)
        ],
        acknowledgements=acknowledgements_name,
    )


def check_plugin(
    base_sdl: str,
    committed_fragment: str,
    live: GraphQLSchema,
    acknowledgements: str = "",
    operations: list[Operation] | None = None,
    *,
    acknowledgements_name: str = "the acknowledgements",
) -> Report:
    """A plugin's gate: its live schema (Atrium's with the plugin) against its committed
    fragment laid on the same Atrium schema (``base_sdl``, without the plugin), so that only
    the plugin's own changes count."""
    return check(
        f"{base_sdl}\n{committed_fragment}",
        live,
        acknowledgements,
        operations or [],
        acknowledgements_name=acknowledgements_name,
    )


def read_operations(paths: Iterable[Path], *, root: Path | None = None) -> list[Operation]:
    """The operations of ``.graphql`` files (folders searched through), each a document of its
    own with the fragments it spreads, fragments shared across files; named by their path
    (relative to ``root`` when given)."""
    files: list[Path] = []
    for path in paths:
        files += sorted(path.rglob("*.graphql")) if path.is_dir() else [path]
    named = {(path.relative_to(root) if root else path).as_posix(): path for path in files}
    documents = {
        origin: parse(Source(path.read_text(encoding="utf-8"), origin))
        for origin, path in named.items()
    }
    fragments = {
        d.name.value: d
        for doc in documents.values()
        for d in doc.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
    operations = []
    for origin, document in documents.items():
        for definition, body in _operations_of(document, fragments):
            label = definition.name.value if definition.name else "(anonymous)"
            operations.append(Operation(origin, label, body))
    return operations


def _operations_of(
    document: DocumentNode, fragments: dict[str, FragmentDefinitionNode]
) -> list[tuple[OperationDefinitionNode, str]]:
    """Each operation of a document as a document of its own, with the fragments it spreads."""
    bodies = []
    for definition in document.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        needed: dict[str, FragmentDefinitionNode] = {}
        pending = [print_ast(definition)]
        while pending:
            for name in re.findall(r"\.\.\.\s*([_A-Za-z]\w*)", pending.pop()):
                if name != "on" and name in fragments and name not in needed:
                    needed[name] = fragments[name]
                    pending.append(print_ast(fragments[name]))
        body = "\n\n".join([print_ast(definition), *map(print_ast, needed.values())])
        bodies.append((definition, body))
    return bodies
