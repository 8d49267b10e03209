"""YAML read as bounded JSON: every refusal says what and where, plain YAML reads as before."""

from __future__ import annotations

import time

import pytest
import yaml

from sources.yaml_json import MAX_VALUES, InvalidYaml, Yaml12Loader, load_yaml, load_yaml_document

LAUGHS = "a: &a [1,2,3,4,5,6,7,8,9]\n" + "".join(
    f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    ("text", "line", "column", "problem"),
    [
        ("a: [b", 1, 6, "expected ',' or ']', but got '<stream end>'"),
        ("[" * 5_000, 1, 65, "values are nested more than 64 deep"),
        ("&a [*a]", 1, 5, "alias *a stands for a value that contains it"),
        ("&a {b: {<<: *a}}", 1, 13, "alias *a stands for a value that contains it"),
        (LAUGHS, 6, 4, f"the document stands for more than {MAX_VALUES:,} values"),
        ('a:\n  - "x\\0y"', 2, 5, "a string that holds a NUL character (U+0000) cannot be stored"),
        ('"\\ud800": b', 1, 1, "a string that holds a lone surrogate"),
        ("a: 18446744073709551616", 1, 4, "an integer beyond 64 bits cannot be stored"),
        ("a: -9223372036854775809", 1, 4, "an integer beyond 64 bits cannot be stored"),
        ("a: " + "9" * 5_000, 1, 4, "an integer too long to store"),
        ("a: .nan", 1, 4, "JSON has no infinity or NaN"),
        ("a: -.inf", 1, 4, "JSON has no infinity or NaN"),
        ("a: !!binary aGVsbG8=", 1, 4, "the tag !!binary has no JSON form"),
        ("a: !!set {x, y}", 1, 4, "the tag !!set has no JSON form"),
        ("a: !!omap [x: 1]", 1, 4, "the tag !!omap has no JSON form"),
        ("a: !!int abc", 1, 4, "'abc' is not an integer"),
        ("a: !!int ''", 1, 4, "'' is not an integer"),
        ("a: !!float x", 1, 4, "'x' is not a number"),
        ("a: !!bool maybe", 1, 4, "'maybe' is not a boolean"),
        ("? [a]\n: b", 1, 3, "a key must be a string, not a list or mapping"),
        ("a: b\n\x07", 2, 1, "the character U+0007 is not allowed"),
        ("!!python/object/apply:os.system [id]", 1, 1, "could not determine a constructor"),
    ],
)
def test_what_no_json_can_hold_is_refused_with_its_place(
    text: str, line: int, column: int, problem: str
) -> None:
    with pytest.raises(InvalidYaml) as raised:
        load_yaml(text)
    error = raised.value
    assert problem in error.problem, error
    assert (error.line, error.column) == (line, column), error
    assert str(error).startswith(f"invalid YAML at line {line}, column {column}: ")


def test_a_bomb_is_refused_before_it_expands() -> None:
    started = time.perf_counter()
    with pytest.raises(InvalidYaml):
        load_yaml(LAUGHS + "j: [*i,*i,*i,*i,*i,*i,*i,*i,*i]\n")
    assert time.perf_counter() - started < 1.0


def test_json_values_read_as_plain_yaml_reads_them() -> None:
    text = """\
apiVersion: backstage.io/v1alpha1
metadata: &meta {name: checkout, tags: [go, grpc]}
copy: {<<: *meta, name: other}
numbers: [0x1f, 1_000, -7, 1.5, 18446744073709551615, -9223372036854775808]
when: 2024-01-02T03:04:05Z
day: !!timestamp 2024-01-02
flags: [true, no, ~]
keys: {1: one, true: y, null: n}
"""
    [document] = load_yaml(text)
    assert document == {
        "apiVersion": "backstage.io/v1alpha1",
        "metadata": {"name": "checkout", "tags": ["go", "grpc"]},
        "copy": {"name": "other", "tags": ["go", "grpc"]},
        "numbers": [31, 1000, -7, 1.5, 2**64 - 1, -(2**63)],
        "when": "2024-01-02T03:04:05Z",
        "day": "2024-01-02",
        "flags": [True, False, None],
        # Keys YAML reads as something else are kept as written, as Backstage's reader does.
        "keys": {"1": "one", "true": "y", "null": "n"},
    }


def test_several_documents_and_empty_ones() -> None:
    assert load_yaml("---\na: 1\n---\n---\nb: 2\n") == [{"a": 1}, None, {"b": 2}]
    assert load_yaml("") == []


def test_the_same_text_reads_the_same_as_pyyaml_when_it_is_json() -> None:
    text = "a: [1, 2.5, x, {b: null}]\nc: 'quoted'\nd: |\n  block\n  text\n"
    assert load_yaml(text) == list(yaml.safe_load_all(text))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # YAML 1.1's booleans and sexagesimal and underscored numbers are strings in 1.2.
        ("on", "on"),
        ("Off", "Off"),
        ("yes", "yes"),
        ("n", "n"),
        ("1_000", "1_000"),
        ("1:30", "1:30"),
        ("=", "="),
        ("2024-01-01", "2024-01-01"),
        # 1.2's core schema: its booleans, nulls, octals, hexadecimals and floats.
        ("true", True),
        ("FALSE", False),
        ("~", None),
        ("Null", None),
        ("", None),
        ("0o17", 15),
        ("017", 17),
        ("0x1F", 31),
        ("+12", 12),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("0o8", "0o8"),
        ('"on"', "on"),
    ],
)
def test_catalog_yaml_is_yaml_1_2(text: str, value: object) -> None:
    assert load_yaml(f"a: {text}", Yaml12Loader) == [{"a": value}]


def test_yaml_1_2_has_no_merge_keys() -> None:
    text = "base: &b {x: 1}\nmerged: {<<: *b, y: 2}"
    assert load_yaml(text, Yaml12Loader) == [{"base": {"x": 1}, "merged": {"<<": {"x": 1}, "y": 2}}]
    assert load_yaml(text) == [{"base": {"x": 1}, "merged": {"x": 1, "y": 2}}]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a: 1\nb: 2\na: 3", 3),
        ("m: {x: 1, 'x': 2}", 1),
        ("- k: 1\n  k: 1", 2),
    ],
)
def test_a_key_given_twice_is_refused_in_catalog_yaml(text: str, line: int) -> None:
    with pytest.raises(InvalidYaml) as caught:
        load_yaml(text, Yaml12Loader)
    assert caught.value.line == line
    assert "Map keys must be unique" in caught.value.problem


def test_numbers_and_booleans_are_distinct_keys() -> None:
    assert load_yaml("1: a\ntrue: b\n'x': c", Yaml12Loader) == [{"1": "a", "true": "b", "x": "c"}]


def test_one_document_is_its_value_and_anything_else_is_invalid() -> None:
    assert load_yaml_document("a: 1\n") == {"a": 1}
    assert load_yaml_document("---\n---\n- x\n...\n") == ["x"]  # empty documents aside
    assert load_yaml("a: 1\n") == [{"a": 1}]  # the list, as before
    for text, found in (("", "none"), ("---\n---\n", "none"), ("a: 1\n---\nb: 2\n", "2")):
        with pytest.raises(InvalidYaml, match=f"expected one YAML document, found {found}"):
            load_yaml_document(text)
    with pytest.raises(InvalidYaml, match="at line 2, column 1"):
        load_yaml_document("a: [1\n")
