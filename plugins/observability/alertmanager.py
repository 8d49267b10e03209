"""Alertmanager's v2 API, as the plugin reads and writes it, and alert matchers: a component's
alerts are those whose ``service`` label is its name, unless its ``atrium.dev/alert-selector``
annotation gives other matchers (``service="checkout", env=~"prod|canary"``).

A silence's id is the one value from a client that goes into a URL's path: it is held to
Alertmanager's own form (a UUID) first (``silence_id``), so that nothing a client types turns
into another path (``../alerts``), a query or a URL httpx refuses."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import httpx

from plugins.observability.prometheus import Unavailable

__all__ = [
    "SELECTOR_ANNOTATION",
    "Alertmanager",
    "Matcher",
    "SilenceNotFound",
    "matchers_of",
    "parse_selector",
    "silence_id",
]

SELECTOR_ANNOTATION: Final = "atrium.dev/alert-selector"
_MATCHER: Final = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)\s*"((?:[^"\\]|\\.)*)"\s*')
# Alertmanager's ids as it writes them (canonical UUIDs), in either case.
_SILENCE_ID: Final = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE
)


class SilenceNotFound(LookupError):
    """Alertmanager holds no silence of that id."""


def silence_id(text: str) -> str:
    """``text`` as Alertmanager writes silence ids (a UUID, lowercase); ValueError if it is
    not one."""
    if _SILENCE_ID.fullmatch(text) is None:
        raise ValueError("a silence id is a UUID, as Alertmanager gives it")
    return str(uuid.UUID(text))


@dataclass(frozen=True, slots=True)
class Matcher:
    name: str
    value: str
    is_regex: bool = False
    is_equal: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "isRegex": self.is_regex,
            "isEqual": self.is_equal,
        }

    def matches(self, labels: dict[str, str]) -> bool:
        found = labels.get(self.name, "")
        hit = re.fullmatch(self.value, found) is not None if self.is_regex else found == self.value
        return hit == self.is_equal

    def filter(self) -> str:
        """As Alertmanager's ``filter`` parameter takes it."""
        op = {(False, True): "=", (True, True): "=~", (False, False): "!=", (True, False): "!~"}
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.name}{op[self.is_regex, self.is_equal]}"{escaped}"'


def parse_selector(text: str) -> list[Matcher]:
    """``name="value"`` matchers separated by commas (=, !=, =~, !~); ValueError if not."""
    found: list[Matcher] = []
    rest = text.strip().strip("{}")
    while rest.strip():
        match = _MATCHER.match(rest)
        if match is None:
            raise ValueError(f"not a matcher: {rest[:60]!r}")
        name, op, raw = match.groups()
        value = re.sub(r"\\(.)", r"\1", raw)
        if "~" in op:
            re.compile(value)  # a bad regex is the annotation's mistake, said here
        found.append(Matcher(name, value, is_regex="~" in op, is_equal=op in ("=", "=~")))
        rest = rest[match.end() :]
        if rest.startswith(","):
            rest = rest[1:]
        elif rest.strip():
            raise ValueError(f"expected a comma before {rest[:40]!r}")
    if not found or not any(m.is_equal for m in found):
        raise ValueError("a selector needs at least one matcher that selects")
    return found


def matchers_of(name: str, annotations: dict[str, Any]) -> list[Matcher]:
    """The entity's alert matchers: its selector annotation, else ``service="<name>"``."""
    selector = annotations.get(SELECTOR_ANNOTATION)
    if isinstance(selector, str) and selector.strip():
        return parse_selector(selector)
    return [Matcher("service", name)]


class Alertmanager:
    def __init__(self, url: str, http: httpx.AsyncClient, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.http = http
        self.timeout = timeout

    async def _call(self, method: str, path: str, **kw: Any) -> httpx.Response:
        try:
            return await self.http.request(method, f"{self.url}{path}", timeout=self.timeout, **kw)
        except httpx.TimeoutException:
            raise Unavailable("alertmanager", f"no answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise Unavailable("alertmanager", f"cannot reach it: {exc}") from None

    async def alerts(self, matchers: list[Matcher] | None = None) -> list[dict[str, Any]]:
        params = [("filter", m.filter()) for m in matchers or []]
        params += [("active", "true"), ("silenced", "true"), ("inhibited", "true")]
        answer = await self._call("GET", "/api/v2/alerts", params=params)
        if answer.status_code != 200:
            raise Unavailable("alertmanager", f"HTTP {answer.status_code}: {answer.text[:200]}")
        found = answer.json()
        return found if isinstance(found, list) else []

    async def create_silence(
        self, matchers: list[Matcher], starts: datetime, ends: datetime, by: str, comment: str
    ) -> str:
        body = {
            "matchers": [m.to_json() for m in matchers],
            "startsAt": starts.isoformat(),
            "endsAt": ends.isoformat(),
            "createdBy": by,
            "comment": comment,
        }
        answer = await self._call("POST", "/api/v2/silences", json=body)
        if answer.status_code != 200:
            raise Unavailable("alertmanager", f"HTTP {answer.status_code}: {answer.text[:200]}")
        return str(answer.json()["silenceID"])

    async def expire_silence(self, silence: str) -> None:
        """Expire a silence now: ValueError when its id is not a UUID (nothing is sent),
        SilenceNotFound when Alertmanager has no such silence."""
        answer = await self._call("DELETE", f"/api/v2/silence/{silence_id(silence)}")
        # Alertmanager 0.25 answers an unknown id with a 500 saying so; later ones with a 404.
        if answer.status_code == 404 or (
            answer.status_code == 500 and "not found" in answer.text.lower()
        ):
            raise SilenceNotFound(silence)
        if answer.status_code != 200:
            raise Unavailable("alertmanager", f"HTTP {answer.status_code}: {answer.text[:200]}")
