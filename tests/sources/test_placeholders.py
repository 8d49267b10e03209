"""Backstage's placeholders ($text, $json, $yaml) in catalog files, read without GraphQL: what is
substituted where, what cannot be and why, and what is read how often."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import sources.catalog.placeholders as placeholders_module
from sources.catalog.documents import parse_documents, read_paths
from sources.catalog.model import Entity
from sources.catalog.placeholders import FetchPolicy
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.http_files import Served, free_port, http_server

PETSHOP = Path(__file__).resolve().parents[1] / "fixtures" / "petshop"
OPENAPI = "openapi: 3.0.3\ninfo: {title: Cats, version: 1.0.0}\npaths: {}\n"
API = """\
apiVersion: backstage.io/v1alpha1
kind: API
metadata:
  name: {name}
spec:
  type: openapi
  lifecycle: production
  owner: pet-team
  system: petshop
  definition:
    {placeholder}
"""
# A timeout generous enough for a loaded machine to follow a redirect loop within it.
LOCAL = FetchPolicy(hosts=frozenset({"127.0.0.1"}), timeout=3.0, max_bytes=10_000)


@pytest.fixture
def http() -> Iterator[Served]:
    with http_server() as served:
        yield served


def petshop(tmp_path: Path) -> Path:
    root = tmp_path / "petshop"
    shutil.copytree(PETSHOP, root)
    return root


def tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "catalog"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def by_name(entities: list[tuple[str, Entity]]) -> dict[str, Entity]:
    return {entity.name: entity for _, entity in entities}


def test_each_form_reads_a_file_relative_to_its_catalog_file(tmp_path: Path) -> None:
    root = petshop(tmp_path)
    batch = read_paths([root])
    assert batch.errors == [] and batch.unavailable == []
    found = by_name(batch.entities)
    assert set(found) == {
        "pet-team",
        "petshop",
        "pet-store",
        "pets-api",
        "orders-api",
        "pet-helper",
    }
    # $text: the file as text.
    assert found["pets-api"].spec["definition"] == (root / "apis/pets.oas.yaml").read_text()
    assert found["orders-api"].spec["definition"].startswith("asyncapi: 2.6.0\n")
    # $json and $yaml: the file parsed, validated as if written in place.
    assert found["pets-api"].links == [
        {"url": "https://pets.example.org/docs", "title": "Pets guide", "icon": "docs"}
    ]
    assert found["orders-api"].labels == {"tier": "2", "domain": "commerce"}
    # YAML files the placeholders read are definitions, not catalog files: skipped, not rejected.
    assert sorted(Path(s).name for s in batch.skipped) == [
        "labels.yaml",
        "orders.asyncapi.yaml",
        "pets.oas.yaml",
    ]


def test_placeholders_are_substituted_where_backstage_substitutes_them(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "api.yaml": API.format(name="cats", placeholder="$text: ./cats.oas.yaml")
            + "  servers:\n    - {$json: ./server.json}\n    - url: https://b.example\n"
            + "  schema: {$ref: '#/definitions/cat'}\n"
            + "  mixed: {$text: ./cats.oas.yaml, other: 1}\n"
            + "  inside: {$schema: x, properties: {a: {$text: ./cats.oas.yaml}}}\n"
            + "  unknown: {$file: ./cats.oas.yaml}\n"
            + "  read: {$yaml: ./nested.yaml}\n",
            "cats.oas.yaml": OPENAPI,
            "server.json": '{"url": "https://a.example"}',
            "nested.yaml": "again: {$text: ./cats.oas.yaml}\n",
        },
    )
    batch = read_paths([root])
    assert batch.errors == []
    spec = by_name(batch.entities)["cats"].spec
    assert spec["definition"] == OPENAPI
    assert spec["servers"] == [{"url": "https://a.example"}, {"url": "https://b.example"}]
    # A mapping with any other $ key is someone else's syntax (JSON Schema): left alone whole.
    assert spec["schema"] == {"$ref": "#/definitions/cat"}
    assert spec["mixed"] == {"$text": "./cats.oas.yaml", "other": 1}
    assert spec["inside"] == {"$schema": "x", "properties": {"a": {"$text": "./cats.oas.yaml"}}}
    assert spec["unknown"] == {"$file": "./cats.oas.yaml"}
    # What a placeholder read is not searched for placeholders again.
    assert spec["read"] == {"again": {"$text": "./cats.oas.yaml"}}


@pytest.mark.parametrize(
    ("placeholder", "files", "reason"),
    [
        ("$text: ./missing.yaml", {}, "$text './missing.yaml': no such file"),
        ("$text: ../../outside.yaml", {"../outside.yaml": OPENAPI}, "lies outside the tree"),
        ("$text: /etc/hostname", {}, "lies outside the tree being imported"),
        ("$text: ./apis", {"apis/x.txt": "x"}, "is a directory"),
        ("$text: ./latin1.txt", {"latin1.txt": b"caf\xe9"}, "is not UTF-8 text"),
        ("$text: ./nul.txt", {"nul.txt": "a\x00b"}, "holds a NUL character"),
        ("$text: ./big.txt", {"big.txt": "x" * 3000}, "is larger than 2,048 bytes"),
        ("$json: ./bad.json", {"bad.json": "{nope"}, "is not valid JSON"),
        ("$json: ./nul.json", {"nul.json": '"a\\u0000b"'}, "holds a NUL character"),
        ("$yaml: ./bad.yaml", {"bad.yaml": "a: [1\n"}, "is not valid YAML"),
        ("$yaml: ./two.yaml", {"two.yaml": "a: 1\n---\nb: 2\n"}, "exactly one YAML document"),
        (
            "$yaml: ./bomb.yaml",
            {
                "bomb.yaml": "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                + "".join(
                    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                    for p, c in zip("abcde", "bcdef", strict=True)
                )
            },
            "more than 100,000 values",
        ),
        ("$text: file:///etc/hostname", {}, "file: URLs are not read"),
        ("$text: https://example.com/c.yaml", {}, "reading from example.com is not allowed"),
        ("$text: ''", {}, "expected a relative path or an absolute http(s) URL"),
        ("$text: [a, b]", {}, "expected a relative path or an absolute http(s) URL"),
    ],
)
def test_what_cannot_be_read_leaves_the_entity_with_the_reason(
    tmp_path: Path, placeholder: str, files: dict[str, str | bytes], reason: str
) -> None:
    root = tree(tmp_path, {"cats-api.yaml": API.format(name="cats", placeholder=placeholder)})
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    batch = read_paths([root], FetchPolicy(max_bytes=2048))
    assert batch.errors == []
    [(_, entity)] = batch.entities
    # Kept: its owner, system and relations do not depend on its definition.
    assert entity.owner_ref == "group:default/pet-team"
    assert entity.system_ref == "system:default/petshop"
    assert entity.spec["definition"] is None
    assert list(entity.unavailable) == ["spec.definition"]
    assert reason in entity.unavailable["spec.definition"]
    [missing] = batch.unavailable
    assert (missing.location, missing.document, missing.ref, missing.field) == (
        str(root / "cats-api.yaml"),
        1,
        "api:default/cats",
        "spec.definition",
    )


def test_a_symlink_out_of_the_tree_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    root = tree(tmp_path, {"cats.yaml": API.format(name="cats", placeholder="$text: ./link")})
    (root / "link").symlink_to(secret)
    (root / "inner").symlink_to(root / "real.txt")
    (root / "real.txt").write_text(OPENAPI)
    [(_, entity)] = read_paths([root]).entities
    assert "lies outside the tree being imported" in entity.unavailable["spec.definition"]
    assert "hunter2" not in str(entity.spec)
    # A symlink that stays inside the tree is fine.
    (root / "cats.yaml").write_text(API.format(name="cats", placeholder="$text: ./inner"))
    [(_, entity)] = read_paths([root]).entities
    assert entity.spec["definition"] == OPENAPI and entity.unavailable == {}


def test_a_file_given_alone_may_read_beside_it_only(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "team/cats.yaml": API.format(name="cats", placeholder="$text: ./cats.oas.yaml"),
            "team/cats.oas.yaml": OPENAPI,
            "team/dogs.yaml": API.format(name="dogs", placeholder="$text: ../dogs.oas.yaml"),
            "dogs.oas.yaml": OPENAPI,
        },
    )
    found = by_name(read_paths([root / "team/cats.yaml", root / "team/dogs.yaml"]).entities)
    assert found["cats"].spec["definition"] == OPENAPI
    assert "lies outside the tree" in found["dogs"].unavailable["spec.definition"]


def test_urls_on_allowed_hosts(tmp_path: Path, http: Served) -> None:
    http.serve("/cats.yaml", OPENAPI)
    http.serve("/moved", "", status=302, headers={"location": "/cats.yaml"})
    http.serve("/away", "", status=302, headers={"location": "https://example.com/x"})
    http.serve("/loop", "", status=302, headers={"location": "/loop"})
    http.serve("/big", "x" * 20_000)
    http.serve("/down", "later", status=503)
    http.serve("/slow", OPENAPI, delay=4.0)
    http.serve("/links.json", '[{"url": "https://cats.example"}]')
    cases = {
        "plain": f"$text: {http.url}/cats.yaml",
        "moved": f"$text: {http.url}/moved",
        "away": f"$text: {http.url}/away",
        "loop": f"$text: {http.url}/loop",
        "big": f"$text: {http.url}/big",
        "gone": f"$text: {http.url}/gone",
        "down": f"$text: {http.url}/down",
        "slow": f"$text: {http.url}/slow",
        "localhost": f"$text: http://localhost:{http.port}/cats.yaml",
        "unreachable": f"$text: http://127.0.0.1:{free_port()}/cats.yaml",
        "control": f'$text: "{http.url}/cats\\x18.yaml"',  # YAML's escape: a control character
    }
    root = tree(
        tmp_path, {f"{n}.yaml": API.format(name=n, placeholder=p) for n, p in cases.items()}
    )
    (root / "links.yaml").write_text(
        API.format(name="linked", placeholder=f"$text: {http.url}/cats.yaml").replace(
            "metadata:\n", f"metadata:\n  links: {{$json: '{http.url}/links.json'}}\n"
        )
    )
    batch = read_paths([root], LOCAL)
    assert batch.errors == []
    found = by_name(batch.entities)
    assert found["plain"].spec["definition"] == found["moved"].spec["definition"] == OPENAPI
    assert found["linked"].links == [{"url": "https://cats.example"}]
    reasons = {name: e.unavailable.get("spec.definition") for name, e in found.items()}
    assert reasons["plain"] is reasons["moved"] is reasons["linked"] is None
    assert "reading from example.com is not allowed" in reasons["away"]
    assert "ATRIUM_CATALOG_FETCH_HOSTS" in reasons["away"]
    assert "redirected more than 3 times" in reasons["loop"]
    assert "is larger than 10,000 bytes" in reasons["big"]
    assert "answered HTTP 404 Not Found" in reasons["gone"]
    assert "answered HTTP 503 Service Unavailable" in reasons["down"]
    assert "did not answer within 3 s" in reasons["slow"]
    assert "reading from localhost is not allowed" in reasons["localhost"]
    assert "could not connect" in reasons["unreachable"]
    assert "is no URL that can be read: Invalid non-printable" in reasons["control"]
    assert http.count("/big") == 1  # refused by its Content-Length, read no further


def test_each_file_and_url_is_read_once_per_import(
    tmp_path: Path, http: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    http.serve("/cats.yaml", OPENAPI)
    files = {
        f"apis/api-{i}.yaml": API.format(
            name=f"api-{i}",
            placeholder=f"$text: {http.url}/cats.yaml" if i % 2 else "$text: ../cats.oas.yaml",
        ).replace("metadata:\n", "metadata:\n  labels: {$yaml: ../labels.yaml}\n")
        for i in range(40)
    }
    root = tree(tmp_path, {**files, "cats.oas.yaml": OPENAPI, "labels.yaml": "tier: '1'\n"})
    reads: list[Path] = []
    read_file = placeholders_module._read_file

    def counting(path: Path, max_bytes: int) -> str:
        reads.append(path)
        return read_file(path, max_bytes)

    monkeypatch.setattr(placeholders_module, "_read_file", counting)
    batch = read_paths([root], LOCAL)
    assert batch.errors == [] and len(batch.entities) == 40
    assert all(e.spec["definition"] == OPENAPI for _, e in batch.entities)
    assert all(e.labels == {"tier": "1"} for _, e in batch.entities)
    assert http.count("/cats.yaml") == 1
    assert sorted(reads) == sorted(
        [(root / "cats.oas.yaml").resolve(), (root / "labels.yaml").resolve()]
    )
    # The next import reads afresh.
    read_paths([root], LOCAL)
    assert http.count("/cats.yaml") == 2 and len(reads) == 4


def test_the_urls_of_an_import_are_fetched_at_once(tmp_path: Path, http: Served) -> None:
    for i in range(6):
        http.serve(f"/{i}.yaml", OPENAPI, delay=0.5)
    root = tree(
        tmp_path,
        {
            f"{i}.yaml": API.format(name=f"api-{i}", placeholder=f"$text: {http.url}/{i}.yaml")
            for i in range(6)
        },
    )
    started = time.monotonic()
    batch = read_paths([root], FetchPolicy(hosts=frozenset({"127.0.0.1"}), timeout=5))
    elapsed = time.monotonic() - started
    assert all(e.spec["definition"] == OPENAPI for _, e in batch.entities)
    assert elapsed < 2.0, f"six URLs answering in 0.5 s each took {elapsed:.1f} s"


async def test_reading_a_url_from_the_event_loop_is_refused(http: Served) -> None:
    http.serve("/cats.yaml", OPENAPI)
    text = API.format(name="cats", placeholder=f"$text: {http.url}/cats.yaml")
    with pytest.raises(RuntimeError, match="blocking I/O"):
        parse_documents(text, "api", fetch=LOCAL)
    assert http.count("/cats.yaml") == 0
    # Nothing to fetch (no host allowed): nothing to refuse.
    assert parse_documents(text, "api").entities


def test_text_sent_through_the_api_has_no_tree_to_read_from() -> None:
    batch = parse_documents(API.format(name="cats", placeholder="$text: ./cats.oas.yaml"), "api")
    [(_, entity)] = batch.entities
    assert entity.unavailable == {
        "spec.definition": "$text './cats.oas.yaml': a relative path needs a catalog file to be "
        "relative to; text sent through the API has none, so it can only name absolute "
        "http(s) URLs"
    }


def test_validation_errors_say_what_a_placeholder_had_to_do_with_them(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "parsed.yaml": API.format(name="parsed", placeholder="$yaml: ./cats.oas.yaml"),
            "owner.yaml": API.format(name="owner", placeholder="$text: ./cats.oas.yaml").replace(
                "owner: pet-team", "owner: {$text: ./owner.txt}"
            ),
            "cats.oas.yaml": "openapi: 3.0.3\n",
        },
    )
    errors = {e.location.rsplit("/", 1)[1]: e for e in read_paths([root]).errors}
    assert errors["parsed.yaml"].field == "spec.definition"
    assert errors["parsed.yaml"].message == (
        "expected a string, got a mapping (the value $yaml './cats.oas.yaml' read; "
        "$text reads a file as text)"
    )
    assert errors["owner.yaml"].field == "spec.owner"
    assert errors["owner.yaml"].message == (
        "is required; its placeholder could not be read: $text './owner.txt': no such file"
    )


def test_the_hash_covers_what_was_substituted(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {"cats.yaml": API.format(name="cats", placeholder="$text: ./cats.oas.yaml")},
    )

    def hashed() -> str:
        [(_, entity)] = read_paths([root]).entities
        return entity.hash

    missing = hashed()
    (root / "cats.oas.yaml").write_text(OPENAPI)
    first = hashed()
    assert first != missing and hashed() == first
    (root / "cats.oas.yaml").write_text(OPENAPI.replace("1.0.0", "1.0.1"))
    assert hashed() not in (first, missing)


async def test_an_entity_missing_a_field_is_never_unchanged(tmp_path: Path, db: Database) -> None:
    root = tree(
        tmp_path,
        {"cats.yaml": API.format(name="cats", placeholder="$text: ./cats.oas.yaml")},
    )
    first = await apply_batch(db, read_paths([root]))
    assert first.created == ["api:default/cats"]
    assert [(u.ref, u.field) for u in first.unavailable] == [
        ("api:default/cats", "spec.definition")
    ]
    # The same document, the same failure: still written again (and reported), not skipped.
    again = await apply_batch(db, read_paths([root]))
    assert again.updated == ["api:default/cats"] and again.unchanged == []
    assert len(again.unavailable) == 1
    (root / "cats.oas.yaml").write_text(OPENAPI)
    mended = await apply_batch(db, read_paths([root]))
    assert mended.updated == ["api:default/cats"] and mended.unavailable == []
    assert (await apply_batch(db, read_paths([root]))).unchanged == ["api:default/cats"]
    stored = await db.fetchrow(
        "select spec->>'definition' as definition, unavailable from entities where ref = $1",
        "api:default/cats",
    )
    assert stored["definition"] == OPENAPI and stored["unavailable"] == {}
