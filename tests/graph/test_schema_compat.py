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
The gate itself is ``graph.schema_gate``, which ``atrium schema check --plugin`` runs over a
plugin's fragment; a third-party plugin installed is no part of the schema compared here.
"""

from __future__ import annotations

import subprocess
import warnings
from pathlib import Path

import pytest
from graphql import (
    GraphQLField,
    GraphQLInt,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    build_schema,
    print_schema,
)

from graph.assembly import assemble
from graph.persisted import read_manifest
from graph.schema_file import atrium_plugins
from graph.schema_gate import Operation, check, read_acknowledgements, read_operations
from graph.settings import Settings

ROOT = Path(__file__).resolve().parent.parent.parent
ACKNOWLEDGEMENTS = ROOT / "schema-changes.md"
MANIFEST = ROOT / "web" / "dist" / "persisted-query-manifest.json"
WEB_SOURCES = ROOT / "web" / "src"


# Inputs: the live schema, the baseline, the console's operations.


@pytest.fixture(scope="module")
def live_schema() -> GraphQLSchema:
    """The schema as `atrium schema print` assembles it: the core and the bundled plugins
    (a third-party plugin installed beside them has a gate of its own)."""
    settings = Settings()
    schema = assemble(settings, atrium_plugins(settings)).schema
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


def source_operations() -> list[Operation]:
    """The operations of web/src/**/*.graphql, fragments shared across files."""
    return read_operations([WEB_SOURCES], root=ROOT)


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
