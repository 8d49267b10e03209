"""The console's components as the server writes them: the templates the build rendered from
the kit's React components (``web/src/kit/``, ``kit.json``), filled here with escaped values.

In a Jinja template, ``ui`` offers each of them::

    {{ ui.badge("failed", "error") }}
    {% call ui.link(href) %}Checkout Service{% endcall %}
    {% call ui.table("Dependencies") %}...{% endcall %}

A template's placeholders are ``⟦name⟧``: text and attributes are escaped, ``children`` is what
the call block rendered (or escaped text). The same component in React gives the same elements
with the same classes, which is how React's first render replaces the server's HTML without
moving it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from markupsafe import Markup, escape

__all__ = ["Kit", "KitError"]

_MARKER = re.compile(r"⟦([a-z]+)⟧")


class KitError(ValueError):
    """The build's kit lacks a component or a placeholder a template asks for."""


class _Template:
    __slots__ = ("fields", "parts")

    def __init__(self, text: str) -> None:
        pieces = _MARKER.split(text)
        self.parts: list[str] = pieces[0::2]
        self.fields: list[str] = pieces[1::2]

    def fill(self, values: dict[str, Any]) -> Markup:
        out = [self.parts[0]]
        for field, part in zip(self.fields, self.parts[1:], strict=True):
            value = values.get(field)
            if value is None:
                raise KitError(f"no value for ⟦{field}⟧")
            out.append(str(escape(value)))
            out.append(part)
        return Markup("".join(out))


class Kit:
    """The kit's templates by name (``badge.error``, ``table``, ...)."""

    def __init__(self, templates: dict[str, str]) -> None:
        self._templates = {name: _Template(text) for name, text in templates.items()}

    @classmethod
    def read(cls, path: Path) -> Kit:
        return cls(orjson.loads(path.read_bytes()))

    def render(self, component: str, /, **values: Any) -> Markup:
        template = self._templates.get(component)
        if template is None:
            raise KitError(f"the console's kit has no {component}: rebuild it (make web)")
        return template.fill(values)

    def globals(self) -> _Components:
        return _Components(self)


def _children(caller: Callable[[], str] | None, text: Any) -> Any:
    """A call block's markup, else the text given (escaped when filled)."""
    return Markup(caller()) if caller is not None else text


class _Components:
    """What templates call, one method per component (names as in web/src/kit/index.tsx)."""

    def __init__(self, kit: Kit) -> None:
        self._kit = kit

    def _block(
        self, component: str, caller: Callable[[], str] | None, text: Any = "", **values: Any
    ) -> Markup:
        return self._kit.render(component, children=_children(caller, text), **values)

    def page_title(self, text: Any = "", caller: Callable[[], str] | None = None) -> Markup:
        return self._block("page-title", caller, text)

    def section_title(
        self, id: str, text: Any = "", caller: Callable[[], str] | None = None
    ) -> Markup:
        return self._block("section-title", caller, text, id=id)

    def card_title(self, text: Any = "", caller: Callable[[], str] | None = None) -> Markup:
        return self._block("card-title", caller, text)

    def para(
        self, text: Any = "", tone: str = "default", caller: Callable[[], str] | None = None
    ) -> Markup:
        return self._block(f"para.{tone}", caller, text)

    def span(
        self, text: Any = "", tone: str = "default", caller: Callable[[], str] | None = None
    ) -> Markup:
        return self._block(f"span.{tone}", caller, text)

    def small(
        self, text: Any = "", tone: str = "subtle", caller: Callable[[], str] | None = None
    ) -> Markup:
        return self._block(f"small.{tone}", caller, text)

    def strong(self, text: Any = "", caller: Callable[[], str] | None = None) -> Markup:
        return self._block("strong", caller, text)

    def clamp(self, text: str) -> Markup:
        return self._kit.render("clamp", text=text)

    def link(
        self,
        href: str,
        text: Any = "",
        strong: bool = False,
        caller: Callable[[], str] | None = None,
    ) -> Markup:
        return self._block("link.strong" if strong else "link", caller, text, href=href)

    def external_link(
        self, href: str, text: Any = "", caller: Callable[[], str] | None = None
    ) -> Markup:
        return self._block("external-link", caller, text, href=href)

    def badge(self, text: str, type: str = "neutral") -> Markup:
        return self._kit.render(f"badge.{type}", text=text)

    def status(self, type: str, title: str) -> Markup:
        return self._kit.render(f"status.{type}", title=title)

    def avatar(self, name: str, src: str | None = None, size: str = "xs") -> Markup:
        if src:
            return self._kit.render(f"avatar-image.{size}", name=name, src=src)
        return self._kit.render(f"avatar.{size}", name=name, initial=(name[:1] or "?").upper())

    def figure(self, title: str, value: str) -> Markup:
        return self._kit.render("figure", title=title, value=value)

    def button_link(self, href: str, text: str) -> Markup:
        return self._kit.render("button-link", href=href, text=text)

    def button(self, text: str, kind: str = "") -> Markup:
        return self._kit.render(f"button.{kind}" if kind else "button", text=text)

    def icon_button(self, icon: str, label: str) -> Markup:
        return self._kit.render(f"icon-button.{icon}", label=label)

    def range_choice(self, selected: int = 0) -> Markup:
        return self._kit.render(f"range.{selected}")

    def icon(self, icon: str, label: str) -> Markup:
        return self._kit.render(f"icon.{icon}", label=label)

    def tabs(self, tabs: list[tuple[str, str]], active: int = 0) -> Markup:
        items = Markup("").join(
            self._kit.render("tab.active" if i == active else "tab", id=id_, text=text)
            for i, (id_, text) in enumerate(tabs)
        )
        return self._kit.render("tabs", children=items)

    def select(self, id: str, label: str, value: str, options: list[tuple[str, str]]) -> Markup:
        items = Markup("").join(
            self._kit.render("option.selected" if v == value else "option", value=v, label=text)
            for v, text in options
        )
        return self._kit.render("select", id=id, label=label, children=items)

    def table(self, label: str, caller: Callable[[], str] | None = None) -> Markup:
        return self._block("table", caller, label=label)

    def thead(self, caller: Callable[[], str] | None = None) -> Markup:
        return self._block("thead", caller)

    def tbody(self, caller: Callable[[], str] | None = None) -> Markup:
        return self._block("tbody", caller)

    def tr(self, caller: Callable[[], str] | None = None) -> Markup:
        return self._block("tr", caller)

    def th(self, text: Any = "", caller: Callable[[], str] | None = None) -> Markup:
        return self._block("th", caller, text)

    def td(self, text: Any = "", caller: Callable[[], str] | None = None) -> Markup:
        return self._block("td", caller, text)
