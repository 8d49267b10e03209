"""YAML read as the JSON it stands for, within bounds: what clients send (catalog files,
workload manifests) becomes plain data the rest of Atrium can store and validate.

PyYAML's safe loader still builds values JSON and PostgreSQL cannot hold, and a few lines of
text can make it work without end; each of these is refused here as a YAML error with the line
and column of the value, the way a syntax error is:

- values nested deeper than ``max_depth`` (its composer recurses: a few thousand ``[`` end in
  ``RecursionError``), an alias to a node that contains it (a value that never ends), and
  documents whose aliases expand to more than ``max_values`` values (a "billion laughs");
- strings PostgreSQL cannot store (a NUL or a lone surrogate, which YAML escapes can spell),
  integers beyond 64 bits, infinities and NaN, tags with no JSON form (``!!binary``,
  ``!!set``, ``!!omap``, ``!!pairs``), and scalars their explicit tag cannot read
  (``!!int abc``).

Timestamps stay the strings they were written as (entities and manifests are JSON, not Python
dates), and a mapping key YAML reads as a number, boolean or null is kept as written (``1:``
is the key ``"1"``), as Backstage's and Kubernetes' readers do.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

import yaml
from yaml._yaml import CParser  # libyaml, which PyYAML's wheels include
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from sources.text import unstorable

__all__ = [
    "MAX_DEPTH",
    "MAX_VALUES",
    "InvalidYaml",
    "JsonYamlLoader",
    "Yaml12Loader",
    "load_yaml",
    "load_yaml_document",
    "yaml_problem",
]

MAX_DEPTH: Final = 64
MAX_VALUES: Final = 100_000
_INT64: Final = range(-(2**63), 2**64)  # what orjson (and so the store) can write
_NO_JSON_FORM: Final = ("binary", "set", "omap", "pairs")


class InvalidYaml(ValueError):
    """YAML that does not parse, or that stands for no storable JSON; says where."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        where = f" at line {line}, column {column}" if line is not None else ""
        super().__init__(f"invalid YAML{where}: {problem}")
        self.problem = problem
        self.line = line
        self.column = column

    @classmethod
    def of(cls, error: yaml.YAMLError, text: str) -> InvalidYaml:
        if isinstance(error, yaml.reader.ReaderError):
            # A character YAML does not allow (a control character, say): no mark, a position.
            line = text.count("\n", 0, error.position) + 1
            column = error.position - (text.rfind("\n", 0, error.position) + 1) + 1
            return cls(f"the character U+{error.character:04X} is not allowed", line, column)
        mark = getattr(error, "problem_mark", None)
        problem = yaml_problem(error)
        if mark is None:
            return cls(problem)
        return cls(problem, mark.line + 1, mark.column + 1)


class JsonYamlLoader(yaml.SafeLoader):
    """The safe loader, bounded, building only JSON values (see the module's docstring)."""

    max_depth = MAX_DEPTH
    max_values = MAX_VALUES
    unique_keys = False

    def read_int(self, node: Any) -> int:
        return int(super().construct_yaml_int(node))

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._bound()

    def _bound(self) -> None:
        self._depth = 0
        self._open_anchors: set[str] = set()
        self._values: dict[int, int] = {}  # id(node) → values it stands for, aliases expanded

    # Composing: depth, aliases into themselves, and the size aliases expand to.

    def compose_document(self) -> Node | None:
        self._values = {}
        try:
            return super().compose_document()
        finally:
            self._values = {}

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: Any = self.peek_event()  # type: ignore[no-untyped-call]  # untyped in the stubs
        if isinstance(event, AliasEvent):
            if event.anchor in self._open_anchors:
                mark: Any = event.start_mark
                raise ComposerError(
                    None, None, f"alias *{event.anchor} stands for a value that contains it", mark
                )
            return super().compose_node(parent, index)
        if self._depth >= self.max_depth:
            raise ComposerError(
                None, None, f"values are nested more than {self.max_depth} deep", event.start_mark
            )
        anchor = event.anchor if isinstance(event, CollectionStartEvent) else None
        if anchor is not None:
            self._open_anchors.add(anchor)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open_anchors.discard(anchor)
        if node is not None:
            self._count(node)
        return node

    def _count(self, node: Node) -> None:
        values = self._values
        if isinstance(node, SequenceNode):
            size = 1 + sum(values.get(id(item), 1) for item in node.value)
        elif isinstance(node, MappingNode):
            size = 1 + sum(
                values.get(id(key), 1) + values.get(id(value), 1) for key, value in node.value
            )
        else:
            size = 1
        if size > self.max_values:
            raise ComposerError(
                None,
                None,
                f"the document stands for more than {self.max_values:,} values "
                "(an alias counts as many as it stands for)",
                node.start_mark,
            )
        values[id(node)] = size

    # Constructing: only what JSON and PostgreSQL can hold.

    def construct_scalar(self, node: Any) -> Any:
        value = super().construct_scalar(node)
        if isinstance(value, str):
            why = unstorable(value)
            if why is not None:
                raise ConstructorError(
                    None, None, f"a string that {why} cannot be stored", node.start_mark
                )
        return value

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, MappingNode):
            raise ConstructorError(
                None, None, f"expected a mapping, but found a {node.id}", node.start_mark
            )
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        seen: set[tuple[bool, Any]] = set()
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if self.unique_keys:
                # 1 and 1.0 are one number, true is not 1: keys compared as YAML values.
                seen_as = (
                    isinstance(key, bool),
                    key if isinstance(key, str | int | float) else id(key),
                )
                if seen_as in seen:
                    raise ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        f"Map keys must be unique: {key_node.value!r} is given twice",
                        key_node.start_mark,
                    )
                seen.add(seen_as)
            if not isinstance(key, str):
                if not isinstance(key_node, ScalarNode):
                    raise ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        "a key must be a string, not a list or mapping",
                        key_node.start_mark,
                    )
                key = key_node.value  # as written: 1 → "1", true → "true"
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_yaml_int(self, node: Any) -> int:
        text = self.construct_scalar(node)
        if len(text) > 100:
            raise ConstructorError(None, None, "an integer too long to store", node.start_mark)
        value = self._read(self.read_int, node, "an integer")
        if value not in _INT64:
            raise ConstructorError(
                None, None, "an integer beyond 64 bits cannot be stored", node.start_mark
            )
        return int(value)

    def construct_yaml_float(self, node: Any) -> float:
        value = self._read(super().construct_yaml_float, node, "a number")
        if not math.isfinite(value):
            raise ConstructorError(
                None, None, "JSON has no infinity or NaN: write a number", node.start_mark
            )
        return float(value)

    def construct_yaml_bool(self, node: Any) -> bool:
        return bool(self._read(super().construct_yaml_bool, node, "a boolean"))

    def _read(self, construct: Any, node: Any, what: str) -> Any:
        # An explicit tag on a scalar it does not fit (!!int abc, !!float "") breaks PyYAML's
        # constructors with Python errors; they are the text's problem.
        try:
            return construct(node)
        except (ValueError, IndexError, KeyError):
            raise ConstructorError(
                None, None, f"{node.value[:40]!r} is not {what}", node.start_mark
            ) from None

    def construct_timestamp_text(self, node: Any) -> str:
        return self.construct_yaml_str(node)

    def construct_no_json_form(self, node: Any) -> Any:
        raise ConstructorError(
            None,
            None,
            f"the tag {node.tag.replace('tag:yaml.org,2002:', '!!')} has no JSON form: write a "
            "string, list or mapping",
            node.start_mark,
        )


JsonYamlLoader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
JsonYamlLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", JsonYamlLoader.construct_timestamp_text
)
JsonYamlLoader.add_constructor("tag:yaml.org,2002:int", JsonYamlLoader.construct_yaml_int)
JsonYamlLoader.add_constructor("tag:yaml.org,2002:float", JsonYamlLoader.construct_yaml_float)
JsonYamlLoader.add_constructor("tag:yaml.org,2002:bool", JsonYamlLoader.construct_yaml_bool)
for _tag in _NO_JSON_FORM:
    JsonYamlLoader.add_constructor(
        f"tag:yaml.org,2002:{_tag}", JsonYamlLoader.construct_no_json_form
    )


class _Yaml12(JsonYamlLoader):
    """YAML 1.2 (its core schema), as Backstage's reader (the ``yaml`` package) reads catalog
    files, where PyYAML reads YAML 1.1: ``on``, ``off``, ``yes``, ``no``, ``y`` and ``n`` are
    strings, not booleans; ``1_000`` and ``1:30`` are strings, not numbers; ``0o17`` is
    octal and ``017`` seventeen; ``=`` is a string; ``<<`` is a key like any other (1.2 has
    no merge keys); and a key given twice in one mapping is an error, as it is there."""

    unique_keys = True

    def read_int(self, node: Any) -> int:
        text = str(node.value)
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text)


# YAML 1.2's core schema (yaml.org/spec/1.2.2, 10.3.2), in the order its tags are tried.
_Yaml12.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
):
    _Yaml12.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern), list(_first))


class Yaml12Loader(CParser, _Yaml12):
    """YAML 1.2 as ``_Yaml12`` reads it, the text scanned and parsed by libyaml: five times
    as fast as PyYAML's Python parser on catalog files. The events are libyaml's; the nodes
    are still composed here, within the same bounds, and the values built here."""

    def __init__(self, stream: Any) -> None:
        CParser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._bound()

    # libyaml composes nodes too; these are Python's, which the bounds above hook into.
    check_node = Composer.check_node
    get_node = Composer.get_node
    get_single_node = Composer.get_single_node


def yaml_problem(error: yaml.YAMLError) -> str:
    """What is wrong, in Atrium's words where libyaml has its own: from PyYAML 6.0.4 its
    scanner refuses values nested more than 1,000 deep while looking ahead, before Atrium's
    composer counts to ``MAX_DEPTH``; both mean the same to whoever wrote the text."""
    problem = getattr(error, "problem", None) or str(error)
    if problem == "exceeded maximum nesting depth":
        return f"values are nested more than {MAX_DEPTH} deep"
    return str(problem)


def load_yaml(text: str, loader: type[JsonYamlLoader] = JsonYamlLoader) -> list[Any]:
    """A **list** of every document of ``text`` (None for an empty one; ``[]`` for no text),
    even when there is one: ``load_yaml_document`` reads text meant to hold one. ``InvalidYaml``
    says what and where when the text does not parse or stands for something no JSON can be.
    Catalog files are read with ``Yaml12Loader``."""
    try:
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        raise InvalidYaml.of(exc, text) from None


def load_yaml_document(text: str, loader: type[JsonYamlLoader] = JsonYamlLoader) -> Any:
    """The one document of ``text`` (a manifest, a config), empty documents aside: its value
    itself, not a list. ``InvalidYaml`` as ``load_yaml``, and when the text holds no document
    or more than one."""
    documents = [d for d in load_yaml(text, loader) if d is not None]
    if len(documents) != 1:
        found = "none" if not documents else str(len(documents))
        raise InvalidYaml(f"expected one YAML document, found {found}")
    return documents[0]
