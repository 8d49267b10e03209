"""Reading PinApp and PinScaler bodies: specs, statuses, and env without secret values."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["EnvVar", "cpu_millis", "env_of", "memory_bytes", "requested"]

# Names whose literal values are not shown even when set inline.
_SECRET_NAME: Final = re.compile(r"(pass(word)?|secret|token|api[-_]?key|private|credential)", re.I)
_MEMORY: Final = {
    "": 1,
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "ki": 2**10,
    "mi": 2**20,
    "gi": 2**30,
    "ti": 2**40,
}


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    value: str | None  # None when secret or taken from elsewhere
    source: str  # "value", "secret:<name>/<key>", "config:<name>/<key>", "hidden"


def env_of(spec: dict[str, Any]) -> list[EnvVar]:
    found = []
    for item in spec.get("env") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = item["name"]
        source = item.get("valueFrom") or {}
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"] or {}
            found.append(EnvVar(name, None, f"secret:{ref.get('name')}/{ref.get('key')}"))
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"] or {}
            found.append(EnvVar(name, None, f"config:{ref.get('name')}/{ref.get('key')}"))
        elif _SECRET_NAME.search(name):
            found.append(EnvVar(name, None, "hidden"))
        else:
            value = item.get("value")
            found.append(EnvVar(name, str(value) if value is not None else None, "value"))
    return found


def cpu_millis(quantity: str | None) -> int:
    """``"250m"`` → 250, ``"1.5"`` → 1500; raises ValueError for nonsense."""
    if not quantity:
        return 0
    text = str(quantity).strip()
    if text.endswith("m"):
        return int(float(text[:-1]))
    return int(float(text) * 1000)


def memory_bytes(quantity: str | None) -> int:
    if not quantity:
        return 0
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([KMGT]i?|[kmgt]i?)?", str(quantity).strip())
    if match is None:
        raise ValueError(f"{quantity!r} is not a memory quantity")
    return int(float(match[1]) * _MEMORY[(match[2] or "").lower()])


def requested(spec: dict[str, Any], replicas: int) -> tuple[int, int, int]:
    """(replicas, CPU millis, memory bytes) a workload asks for at ``replicas``."""
    requests = ((spec.get("resources") or {}).get("requests")) or {}
    return (
        replicas,
        replicas * cpu_millis(requests.get("cpu")),
        replicas * memory_bytes(requests.get("memory")),
    )
