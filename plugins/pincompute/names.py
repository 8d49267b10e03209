"""Kubernetes names a client gives, checked before they reach a cluster's API.

kubernetes-asyncio percent-encodes a name it puts in a path, but leaves ``.`` and ``..`` as
they are, and aiohttp resolves those segments: a namespace ``..`` would read
``/api/v1/pods/<pod>/log`` and a pod ``..`` the namespace itself. Nor does the API server's
refusal of anything else help: it reads as the cluster failing (UNAVAILABLE), not as the
client's mistake. So every name from a client is held to Kubernetes' own rules first:
namespaces and containers are DNS labels (RFC 1123, at most 63 characters), pods and other
objects DNS subdomains (dot-separated labels, at most 253).
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["InvalidName", "check_label", "check_subdomain", "is_label", "is_subdomain"]

# As Kubernetes' own validation spells them (IsDNS1123Label, IsDNS1123Subdomain).
_LABEL_RE: Final = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
_PART: Final = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE: Final = re.compile(rf"{_PART}(?:\.{_PART})*")
MAX_SUBDOMAIN: Final = 253


class InvalidName(ValueError):
    """A name Kubernetes would refuse; the message says which argument and why."""


def is_label(value: str) -> bool:
    # fullmatch, not match with ``$``: ``$`` also matches before a final newline.
    return _LABEL_RE.fullmatch(value) is not None


def is_subdomain(value: str) -> bool:
    return len(value) <= MAX_SUBDOMAIN and _SUBDOMAIN_RE.fullmatch(value) is not None


def check_label(what: str, value: str) -> str:
    """``value`` when it is a DNS label; InvalidName naming ``what`` if not."""
    if not is_label(value):
        raise InvalidName(
            f"{what} must be a Kubernetes name: lowercase letters, digits and '-', starting "
            "and ending with a letter or digit, at most 63 characters"
        )
    return value


def check_subdomain(what: str, value: str) -> str:
    """``value`` when it is a DNS subdomain; InvalidName naming ``what`` if not."""
    if not is_subdomain(value):
        raise InvalidName(
            f"{what} must be a Kubernetes name: lowercase letters, digits, '-' and '.', each "
            "part starting and ending with a letter or digit, at most 253 characters"
        )
    return value
