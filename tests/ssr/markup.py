"""Whether a page's HTML is well formed: every element closed, in order. A template that
closes one element too many (the kit's markup is Gestalt's, in pieces) makes the browser move
the rest of the page out of its place, which no layout test would name."""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["assert_well_formed"]

# Elements that never have a closing tag (HTML's void elements), and SVG's self-closed ones.
_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "param",
    "source",
    "track",
    "wbr",
}


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[tuple[str, tuple[int, int]]] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _VOID:
            self.open.append((tag, self.getpos()))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass  # <path ... /> and the like close themselves

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID:
            return
        if not self.open or self.open[-1][0] != tag:
            expected = self.open[-1] if self.open else None
            self.problems.append(f"</{tag}> at {self.getpos()} closes {expected}")
            return
        self.open.pop()


def assert_well_formed(html: str) -> None:
    checker = _Checker()
    checker.feed(html)
    checker.close()
    problems = checker.problems + [f"<{tag}> at {at} is never closed" for tag, at in checker.open]
    assert not problems, "\n".join(problems[:10])
