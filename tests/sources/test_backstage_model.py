"""Atrium's entity model against Backstage's own: ``@backstage/catalog-model`` run by Node
(tests/clients/catalog_model.mjs, the steps of Backstage's catalog backend) over the
repository's catalogs and a few hundred generated documents.

Every document must be judged alike: accepted by both with the same relations, or refused by
both for the same reason (the same field, the same kind of fault). The exceptions are the
deliberate differences of sources.catalog.differences, and exactly the documents made to show
one may differ, each in its stated direction.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from backstage_documents import Case, cases

from sources.catalog.differences import DIFFERENCES
from sources.catalog.documents import parse_documents
from sources.catalog.model import validate_entity
from sources.catalog.placeholders import Placeholders
from sources.errors import EntityValidationError
from sources.yaml_json import Yaml12Loader, load_yaml

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "tests" / "clients"
CATALOGS = (ROOT / "atrium" / "demo", ROOT / "tests" / "fixtures" / "petshop")


@dataclass(frozen=True, slots=True)
class Verdict:
    accepted: bool
    reason: tuple[str, str] | None  # (field, kind of fault), when refused
    relations: frozenset[tuple[str, str]]
    difference: str | None = None  # Atrium's error or entity names one
    message: str = ""


def backstage(documents: list[Any]) -> list[dict[str, Any]]:
    node = shutil.which("node")
    assert node, "Node runs Backstage's model"
    done = subprocess.run(
        [node, str(CLIENTS / "catalog_model.mjs")],
        input=json.dumps(documents),
        capture_output=True,
        text=True,
        cwd=CLIENTS,
        timeout=120,
        check=True,
    )
    verdicts: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(verdicts) == len(documents)
    return verdicts


def judged_by_backstage(verdict: dict[str, Any]) -> Verdict:
    if verdict["accepted"]:
        return Verdict(True, None, frozenset(map(tuple, verdict["relations"])))
    return Verdict(
        False, backstage_reason(verdict["errors"][-1]), frozenset(), None, verdict["errors"][-1]
    )


def judged_by_atrium(document: Any, unavailable: dict[str, str]) -> Verdict:
    try:
        entity = validate_entity(document, unavailable)
    except EntityValidationError as exc:
        return Verdict(
            False, atrium_reason(exc.field, exc.message), frozenset(), exc.difference, str(exc)
        )
    relations = frozenset(
        (r.type, r.target_ref) for r in entity.relations if r.source_ref == entity.ref
    )
    listed = {"Group": "children", "User": "memberOf"}.get(entity.kind)
    difference = "unreadable-placeholder" if entity.unavailable else None
    if listed and listed not in document["spec"]:
        difference = "member-lists"
    return Verdict(True, None, relations, difference)


# What kind of fault a message describes, on each side.
_FAULTS = (
    ("ref", ("Entity reference",)),
    ("format", ("is not valid", "must have a value")),
    ("required", ("is required", "must have required property")),
    (
        "type",
        ("expected a", "must be string", "must be object", "must be array", "Expected object"),
    ),
    ("empty", ("must not be empty", "must NOT have fewer than")),
    ("enum", ("must be one of", "must be equal to one of")),
    ("unknown", ("Unknown field", "is not allowed here", "must NOT have additional properties")),
    ("pattern", ("must match",)),
    ("foreign", ("no processor recognizes", "No processor recognized")),
)
_ARRAYS = {
    "tags",
    "links",
    "providesApis",
    "consumesApis",
    "dependsOn",
    "dependencyOf",
    "children",
    "members",
    "memberOf",
    "targets",
    "remotes",
    "relations",
    "items",
}


def _fault(message: str) -> str:
    for fault, phrases in _FAULTS:
        if any(phrase in message for phrase in phrases):
            return fault
    return f"? {message}"


def _parent(field: str) -> str:
    cut = max(field.rfind("."), field.rfind("["))
    return field[:cut] if cut > 0 else "(document)"


def atrium_reason(field: str, message: str) -> tuple[str, str]:
    fault = _fault(message)
    if fault == "unknown":
        return _parent(field), fault
    if fault == "foreign":
        return "(apiVersion or kind)", fault
    if fault == "ref":
        return re.sub(r"\s*\(it needs a kind.*", "", message), fault
    return field, fault


def _dotted(pointer: str) -> str:
    """ajv's instance path (/metadata/links/0/url) as Atrium writes it (metadata.links[0].url)."""
    if pointer in ("", "<root>"):
        return ""
    field = ""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    for index, part in enumerate(parts):
        if part.isdigit() and index and parts[index - 1] in _ARRAYS:
            field += f"[{part}]"
        else:
            field += f".{part}" if field else part
    return field


def backstage_reason(message: str) -> tuple[str, str]:
    fault = _fault(message)
    message = message.removeprefix("Malformed envelope, ")
    if fault == "foreign":
        return "(apiVersion or kind)", fault
    if fault == "ref":
        return re.sub(r"\s*\(e\.g\. did not start with.*", "", message), fault
    if message.startswith("Expected object at root"):
        return "(document)", fault
    if fault == "unknown":
        return (_dotted(message.split(" ")[0]) if message[0] in "/<" else "") or "(document)", fault
    quoted = re.match(r'"([^"]*)" (?:is not valid|must have a value)', message)
    if quoted:
        field = re.sub(r"^(labels|annotations|tags|links)\.", r"metadata.\1.", quoted[1])
        field = re.sub(r"\.(tags|links)\.(\d+)", r".\1[\2]", field)
        return field, fault
    pointer = message.split(" ")[0]
    field = _dotted(pointer)
    missing = re.search(r"must have required property '([^']+)'", message)
    if fault == "required" and missing:
        field = f"{field}.{missing[1]}" if field else missing[1]
    return field or "(document)", fault


@dataclass(frozen=True, slots=True)
class Judged:
    case: Case
    atrium: Verdict
    backstage: Verdict
    layered: Verdict


def judged(all_cases: list[Case]) -> list[Judged]:
    answers = backstage([case.document for case in all_cases])
    found = []
    for case, answer in zip(all_cases, answers, strict=True):
        document = case.document
        if case.yaml is not None:
            batch = parse_documents(case.yaml, "case.yaml")
            [document] = [e.document for _, e in batch.entities] or load_yaml(
                case.yaml, Yaml12Loader
            )
        unavailable = {field: "cannot be read" for field in case.unavailable}
        if unavailable:
            document = blanked(document, case.unavailable)
        layered = {**answer, **answer["layered"], "relations": answer["relations"]}
        found.append(
            Judged(
                case,
                judged_by_atrium(document, unavailable),
                judged_by_backstage(answer),
                judged_by_backstage(layered),
            )
        )
    return found


def blanked(document: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """The document as Atrium's placeholders leave it when they cannot read: the field empty."""
    copy = json.loads(json.dumps(document))
    for field in fields:
        *parents, last = field.split(".")
        target = copy
        for key in parents:
            target = target[key]
        target[last] = None
    return copy


def disagreements(results: list[Judged]) -> list[str]:
    """Every case judged otherwise than it should be, said in a line."""
    wrong = []
    for result in results:
        case, atrium, reference = result.case, result.atrium, result.layered
        why = None
        if case.difference is None:
            if result.backstage.accepted != reference.accepted:
                why = "Backstage's model layer changes its verdict, but no difference is named"
            elif atrium.accepted != reference.accepted:
                why = "judged otherwise"
            elif atrium.accepted and atrium.relations != reference.relations:
                why = f"other relations: {sorted(atrium.relations ^ reference.relations)}"
            elif not atrium.accepted and atrium.reason != reference.reason:
                why = f"another reason: {atrium.reason} against {reference.reason}"
            elif atrium.difference is not None:
                why = f"Atrium names the difference {atrium.difference}"
        else:
            difference = DIFFERENCES[case.difference]
            if difference.atrium == "layered":
                if result.backstage.accepted == reference.accepted:
                    why = "the model layer changes nothing here"
                elif atrium.accepted != reference.accepted:
                    why = "judged otherwise than with the model layer"
            elif difference.atrium == "stricter":
                if not reference.accepted or atrium.accepted:
                    why = "not refused by Atrium alone"
                elif atrium.difference != case.difference:
                    why = f"refused for {atrium.difference}"
            elif reference.accepted or not atrium.accepted:
                why = "not taken by Atrium alone"
            elif atrium.difference != case.difference:
                why = f"taken, but as {atrium.difference}"
        if why:
            wrong.append(
                f"{case.name}: {why} (Atrium: {atrium.message or 'accepted'}; "
                f"Backstage: {reference.message or 'accepted'})"
            )
    return wrong


@pytest.fixture(scope="module")
def generated() -> list[Judged]:
    return judged(list(cases()))


def test_generated_documents_are_judged_as_backstage_judges_them(
    generated: list[Judged],
) -> None:
    assert disagreements(generated) == []


def test_the_generated_documents_cover_both_verdicts_and_every_difference(
    generated: list[Judged],
) -> None:
    assert len(generated) >= 300
    verdicts = Counter(j.backstage.accepted for j in generated)
    assert verdicts[True] >= 80 and verdicts[False] >= 150, verdicts
    assert {j.case.difference for j in generated} == {None, *DIFFERENCES}
    faults = {j.backstage.reason[1] for j in generated if j.backstage.reason}
    assert faults == {fault for fault, _ in _FAULTS}


def test_yaml_cases_read_as_yaml_1_2_does() -> None:
    for case in cases():
        if case.yaml is not None:
            [(_, entity)] = parse_documents(case.yaml, "case.yaml").entities
            assert entity.document == case.document, case.name


def catalog_cases() -> list[Case]:
    """Every entity document of the repository's catalogs, placeholders substituted as an
    import substitutes them."""
    found = []
    with Placeholders() as placeholders:
        for root in CATALOGS:
            for path in sorted(root.rglob("*.yaml")):
                for index, document in enumerate(load_yaml(path.read_text(), Yaml12Loader), 1):
                    if not isinstance(document, dict) or "apiVersion" not in document:
                        continue
                    substituted = placeholders.substitute(document, path, root)
                    assert not substituted.unavailable, (path, substituted.unavailable)
                    is_mcp = (document.get("spec") or {}).get("type") == "mcp-server"
                    name = f"{path.relative_to(ROOT)} document {index}"
                    found.append(Case(name, substituted.document, "mcp-server" if is_mcp else None))
    return found


def test_the_repositorys_catalogs_are_judged_as_backstage_judges_them() -> None:
    found = catalog_cases()
    assert len(found) >= 196
    results = judged(found)
    assert disagreements(results) == []
    assert all(j.atrium.accepted for j in results)
