"""The schema guard: a change that would break a deployed client fails ``make test``.

Deployed clients (console bundles still open in browsers, scripts, other teams' tools) were
built against ``schema.graphql`` as committed at the baseline that ``schema-changes.md`` names.
The schema Atrium serves now (assembled as ``atrium schema print`` assembles it) is compared
with it by graphql-core's ``find_breaking_changes``: every breaking change must be acknowledged
in ``schema-changes.md`` with a reason, and an acknowledgement that matches no change fails too.
Comparing with the working tree's ``schema.graphql`` would guard nothing once ``make schema``
has rewritten it (``test_schema_file.py`` keeps that file equal to the generated schema).
Every operation of the console (its persisted-query manifest once built, and the documents
in ``web/src``) must validate against the live schema: no acknowledgement excuses that.
"""

from __future__ import annotations

import re
import subprocess
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from graphql import (
    DocumentNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLField,
    GraphQLInt,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    OperationDefinitionNode,
    build_schema,
    find_breaking_changes,
    find_dangerous_changes,
    parse,
    print_ast,
    print_schema,
    validate,
)

from graph.assembly import assemble, core_plugins, discover_plugins
from graph.persisted import read_manifest
from graph.settings import Settings

ROOT = Path(__file__).resolve().parent.parent.parent
ACKNOWLEDGEMENTS = ROOT / "schema-changes.md"
MANIFEST = ROOT / "web" / "dist" / "persisted-query-manifest.json"
WEB_SOURCES = ROOT / "web" / "src"

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

    def failures(self) -> list[str]:
        return [
            *(
                f"breaking change not acknowledged in schema-changes.md: {c}"
                " (a deployed client may use it: acknowledge it as `- <change> Reason: <why>`"
                " or keep the schema compatible)"
                for c in self.unacknowledged
            ),
            *(
                f"stale acknowledgement in schema-changes.md (no such change from the"
                f" baseline any more; remove it): {c}"
                for c in self.stale
            ),
            *(
                f"schema-changes.md: not `- TYPE: description Reason: why`: {line!r}"
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
    baseline_sdl: str, live: GraphQLSchema, acknowledgements: str, operations: list[Operation]
) -> Report:
    """What ``make test`` holds against a live schema: the whole guard, in one place."""
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
    )


# Inputs: the live schema, the baseline, the console's operations.


@pytest.fixture(scope="module")
def live_schema() -> GraphQLSchema:
    """The schema as `atrium schema print` assembles it: the core and the installed plugins."""
    settings = Settings()
    schema = assemble(settings, [*core_plugins(), *discover_plugins(settings)]).schema
    assert schema is not None
    return schema._schema


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    )


def baseline_sdl(commit: str) -> str:
    shown = git("show", f"{commit}:schema.graphql")
    assert shown.returncode == 0, (
        f"cannot read schema.graphql at the baseline {commit} named by schema-changes.md:"
        f" {shown.stderr.strip()} (the guard needs the repository's history: git fetch"
        " --unshallow)"
    )
    ancestor = git("merge-base", "--is-ancestor", commit, "HEAD")
    assert ancestor.returncode == 0, (
        f"the baseline {commit} of schema-changes.md is not an ancestor of HEAD:"
        " name a commit of this branch that is deployed"
    )
    return shown.stdout


def _operations_of(
    document: DocumentNode, fragments: dict[str, FragmentDefinitionNode]
) -> list[str]:
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
        bodies.append("\n\n".join([print_ast(definition), *map(print_ast, needed.values())]))
    return bodies


def source_operations() -> list[Operation]:
    """The operations of web/src/**/*.graphql, fragments shared across files."""
    documents = {
        path.relative_to(ROOT).as_posix(): parse(path.read_text(encoding="utf-8"))
        for path in sorted(WEB_SOURCES.rglob("*.graphql"))
    }
    fragments = {
        d.name.value: d
        for doc in documents.values()
        for d in doc.definitions
        if isinstance(d, FragmentDefinitionNode)
    }
    operations = []
    for origin, document in documents.items():
        for body in _operations_of(document, fragments):
            name = parse(body).definitions[0]
            assert isinstance(name, OperationDefinitionNode)
            label = name.name.value if name.name else "(anonymous)"
            operations.append(Operation(origin, label, body))
    return operations


def console_operations() -> list[Operation]:
    """The documents in web/src and, once `make web` has built it, the manifest's operations."""
    operations = source_operations()
    if MANIFEST.exists():
        origin = MANIFEST.relative_to(ROOT).as_posix()
        operations += [
            Operation(origin, name or body[:40], body) for _, body, name in read_manifest(MANIFEST)
        ]
    return operations


# The guard as make test runs it.


@pytest.mark.filterwarnings("default:dangerous schema change")
def test_the_live_schema_breaks_no_deployed_client(live_schema: GraphQLSchema) -> None:
    acks = read_acknowledgements(ACKNOWLEDGEMENTS.read_text(encoding="utf-8"))
    assert acks.baseline, "schema-changes.md names no `Baseline: <commit>`"
    operations = console_operations()
    assert any(op.name == "EntityPage" for op in operations), (
        "the console's operations were not found in web/src"
    )
    report = check(
        baseline_sdl(acks.baseline),
        live_schema,
        ACKNOWLEDGEMENTS.read_text(encoding="utf-8"),
        operations,
    )
    for change in report.dangerous:
        warnings.warn(f"dangerous schema change since the baseline: {change}", stacklevel=1)
    failures = report.failures()
    assert not failures, "\n".join(failures)


# The guard, proven: a copy of the live schema with a field removed or retyped fails it.


def _edited(
    live: GraphQLSchema, type_name: str, field_name: str, new_type: GraphQLOutputType | None
) -> GraphQLSchema:
    """A copy of the live schema with one field removed (new_type None) or given another type."""
    copy = build_schema(print_schema(live))
    owner = copy.type_map[type_name]
    assert isinstance(owner, GraphQLObjectType) and field_name in owner.fields, field_name
    if new_type is None:
        del owner.fields[field_name]
    else:
        owner.fields[field_name] = GraphQLField(new_type)
    return build_schema(print_schema(copy))


NO_ACKS = "Baseline: 0000000\n\n## Acknowledged\n"


def test_removing_a_field_the_console_reads_fails(live_schema: GraphQLSchema) -> None:
    baseline = print_schema(live_schema)
    edited = _edited(live_schema, "Component", "dependencies", None)
    report = check(baseline, edited, NO_ACKS, source_operations())
    failures = "\n".join(report.failures())
    assert "FIELD_REMOVED: Field Component.dependencies was removed." in report.unacknowledged, (
        failures
    )
    assert any(
        "EntityPage" in e and "Cannot query field 'dependencies' on type 'Component'" in e
        for e in report.invalid_operations
    ), failures
    # Acknowledging the removal does not excuse the console's operation.
    acked = NO_ACKS + "- FIELD_REMOVED: Field Component.dependencies was removed. Reason: gone\n"
    report = check(baseline, edited, acked, source_operations())
    assert not report.unacknowledged and report.invalid_operations, report.failures()


def test_retyping_a_field_fails_until_acknowledged(live_schema: GraphQLSchema) -> None:
    baseline = print_schema(live_schema)
    edited = _edited(live_schema, "PinApp", "image", GraphQLInt)
    change = "FIELD_CHANGED_KIND: Field PinApp.image changed type from String to Int."
    report = check(baseline, edited, NO_ACKS, source_operations())
    # The operations still validate (a scalar is a scalar): only the comparison catches it.
    assert report.unacknowledged == [change] and not report.invalid_operations, report
    report = check(baseline, edited, f"{NO_ACKS}- {change} Reason: digests as numbers\n", [])
    assert not report.failures(), report.failures()


def test_stale_and_malformed_acknowledgements_fail(live_schema: GraphQLSchema) -> None:
    acks = (
        NO_ACKS
        + "- FIELD_REMOVED: Field Query.entity was removed. Reason: it was not\n"
        + "- FIELD_REMOVED: Field Component.system was removed.\n"
    )
    report = check(print_schema(live_schema), live_schema, acks, [])
    assert report.stale == ["FIELD_REMOVED: Field Query.entity was removed."], report
    assert report.malformed == ["- FIELD_REMOVED: Field Component.system was removed."], report
    assert len(report.failures()) == 2


def test_adding_a_field_is_not_breaking(live_schema: GraphQLSchema) -> None:
    baseline = print_schema(_edited(live_schema, "Component", "lifecycle", None))
    report = check(baseline, live_schema, NO_ACKS, source_operations())
    assert not report.failures(), report.failures()
