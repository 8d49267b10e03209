from __future__ import annotations

from pathlib import Path

from sources.catalog.documents import parse_documents, read_paths

GOOD = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: checkout
  annotations: {created: 2024-01-01}
spec: {type: service, lifecycle: production, owner: team-a}
"""


def test_multi_document_yaml_is_read_unchanged() -> None:
    batch = parse_documents(GOOD, "catalog-info.yaml")
    assert [e.ref for _, e in batch.entities] == [
        "group:default/team-a",
        "component:default/checkout",
    ]
    assert batch.errors == []
    assert batch.complete_origins == {"catalog-info.yaml"}
    # Dates stay strings: entities are JSON documents.
    assert batch.entities[1][1].annotations == {"created": "2024-01-01"}


def test_an_invalid_document_is_reported_and_the_others_kept() -> None:
    text = (
        GOOD
        + "---\napiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {name: x}\nspec: {type: service}\n"
    )
    batch = parse_documents(text, "team/catalog-info.yaml")
    assert len(batch.entities) == 2
    [error] = batch.errors
    assert (error.location, error.document, error.field) == (
        "team/catalog-info.yaml",
        3,
        "spec.lifecycle",
    )
    assert str(error) == "team/catalog-info.yaml document 3: spec.lifecycle: is required"
    assert batch.complete_origins == set()


def test_broken_yaml_keeps_the_documents_before_it() -> None:
    batch = parse_documents(GOOD + "---\nkind: [unclosed\n", "broken.yaml")
    assert len(batch.entities) == 2
    [error] = batch.errors
    assert error.document == 3 and "invalid YAML (line" in error.message
    assert batch.complete_origins == set()


def test_empty_documents_are_ignored() -> None:
    assert parse_documents("---\n---\n", "empty.yaml").entities == []


def test_directories_are_searched_for_yaml(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "catalog-info.yaml").write_text(GOOD)
    (tmp_path / "notes.txt").write_text("not yaml")
    (tmp_path / "bad.yml").write_bytes(b"\xff\xfe not utf-8")
    batch = read_paths([tmp_path])
    assert len(batch.entities) == 2
    [error] = batch.errors
    assert error.location.endswith("bad.yml") and "cannot read" in error.message


def test_yaml_declaring_no_entity_is_skipped_in_a_directory_and_checked_when_named(
    tmp_path: Path,
) -> None:
    (tmp_path / "catalog-info.yaml").write_text(GOOD)
    (tmp_path / "openapi.yaml").write_text("openapi: 3.0.3\ninfo: {title: x, version: '1'}\n")
    (tmp_path / "deploy.yaml").write_text("apiVersion: apps/v1\nkind: Deployment\n")
    (tmp_path / "typo.yaml").write_text("kind: component\nmetadata: {name: x}\n")
    (tmp_path / "empty.yaml").write_text("# nothing yet\n")
    batch = read_paths([tmp_path])
    assert sorted(Path(s).name for s in batch.skipped) == ["deploy.yaml", "openapi.yaml"]
    # Meant as an entity (a catalog kind, a Backstage apiVersion): checked and reported.
    [error] = batch.errors
    assert error.location.endswith("typo.yaml") and error.field == "apiVersion"
    # Read whole, declaring nothing: what they once declared goes.
    assert {Path(o).name for o in batch.complete_origins} == {
        "catalog-info.yaml",
        "openapi.yaml",
        "deploy.yaml",
        "empty.yaml",
    }
    named = read_paths([tmp_path / "openapi.yaml"])
    assert named.skipped == [] and [e.field for e in named.errors] == ["apiVersion"]


def test_catalog_files_are_yaml_1_2() -> None:
    text = (
        GOOD.replace("lifecycle: production", "lifecycle: off")
        + "\n---\n"
        + (
            "apiVersion: backstage.io/v1alpha1\nkind: Group\nmetadata: {name: on}\n"
            "spec: {type: team, children: []}\n"
        )
    )
    batch = parse_documents(text, "catalog-info.yaml")
    assert not batch.errors
    refs = {entity.ref: entity for _, entity in batch.entities}
    assert refs["group:default/on"].name == "on"
    assert refs["component:default/checkout"].lifecycle == "off"


def test_a_key_given_twice_is_an_error_of_its_document_alone() -> None:
    text = "apiVersion: backstage.io/v1alpha1\nkind: Group\nkind: User\n---\n" + GOOD
    batch = parse_documents(text, "catalog-info.yaml")
    [error] = batch.errors
    assert error.document == 1
    assert error.message == (
        "invalid YAML (line 3, column 1): Map keys must be unique: 'kind' is given twice"
    )
    # As in Backstage, the documents after it are read on; the file is not read whole.
    assert [e.ref for _, e in batch.entities] == [
        "group:default/team-a",
        "component:default/checkout",
    ]
    assert batch.complete_origins == set()
