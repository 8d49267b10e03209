"""Word lists for generated names, titles and descriptions.

Search quality and speed depend on the vocabulary: a few hundred business words make every
search hit thousands of entities, as in a real catalog, and syllable-built codenames and
surnames give the typo-correction vocabulary the tens of thousands of terms a big organisation
has, so the trigram look-up is measured against a realistic table, not a toy one.
"""

from __future__ import annotations

import random
from typing import Final

__all__ = [
    "BUSINESS",
    "COMPONENT_SUFFIXES",
    "FIRST_NAMES",
    "RESOURCE_TYPES",
    "TAGS",
    "codenames",
]

# What software in a retailer's catalog is about; the first words are the most used.
BUSINESS: Final = (
    "checkout", "payments", "orders", "catalog", "inventory", "shipping", "search", "pricing",
    "identity", "accounts", "billing", "invoice", "ledger", "refunds", "fraud", "risk", "cart",
    "promotions", "coupons", "loyalty", "rewards", "product", "stock", "warehouse",
    "fulfilment", "delivery", "tracking", "carrier", "returns", "customer", "profile",
    "session", "preferences", "notifications", "email", "messaging", "recommendations",
    "ranking", "reviews", "ratings", "content", "media", "images", "video", "assets",
    "marketing", "campaigns", "analytics", "reporting", "metrics", "events", "audit",
    "compliance", "tax", "currency", "exchange", "subscriptions", "plans", "entitlements",
    "licensing", "partners", "vendors", "suppliers", "merchants", "sellers", "marketplace",
    "storefront", "mobile", "backoffice", "support", "tickets", "chat", "feedback", "surveys",
    "onboarding", "signup", "login", "consent", "privacy", "location", "address", "maps",
    "routing", "scheduling", "booking", "reservations", "calendar", "availability",
    "capacity", "forecast", "planning", "procurement", "payroll", "employees", "directory",
    "documents", "storage", "archive", "export", "ingest", "pipeline", "datalake", "features",
    "experiments", "flags", "config", "secrets", "edge", "certificates", "gifting", "wishlist",
    "bundles", "settlement", "reconciliation", "disputes", "chargebacks",
    "kyc", "sanctions", "geofencing", "dispatch", "couriers", "lockers", "labels", "customs",
    "duties", "quotes", "contracts", "catalogue", "taxonomy", "attributes", "variants",
    "translations", "localisation", "accessibility", "telemetry", "observability",
    "alerting", "incidents", "oncall", "deployments", "builds", "artifacts", "registry",
)

COMPONENT_SUFFIXES: Final = (
    "service", "service", "service", "worker", "ui", "web", "app", "lib", "sdk", "job",
    "processor", "consumer", "producer", "adapter", "proxy", "gateway", "scheduler",
    "exporter", "indexer", "sync", "bff",
)

RESOURCE_TYPES: Final = ("database", "bucket", "topic", "queue", "cache", "cluster")

TAGS: Final = (
    "go", "java", "kotlin", "python", "typescript", "grpc", "rest", "kafka", "postgres",
    "tier-1", "tier-2", "tier-3", "pci", "gdpr", "pii", "redis", "react", "rust", "scala",
    "graphql", "batch", "streaming", "legacy", "critical", "internal", "public", "k8s",
    "lambda", "mysql", "elasticsearch", "spark", "terraform", "ruby", "csharp", "swift",
)

FIRST_NAMES: Final = (
    "amelia", "daniel", "priya", "lucas", "sofia", "tom", "wei", "hannah", "kwame", "yuki",
    "oliver", "grace", "maria", "ahmed", "chen", "fatima", "ivan", "julia", "kenji", "laura",
    "mohammed", "nina", "omar", "paula", "quentin", "rosa", "samir", "tara", "umar", "vera",
    "william", "ximena", "yusuf", "zoe", "aditya", "beatriz", "carlos", "deepa", "elena",
    "felix", "gabriel", "hiro", "ines", "jonas", "kofi", "lena", "marco", "noah", "olga",
    "pedro", "rahul", "sara", "tobias", "ursula", "victor", "wanda", "xavier", "yara",
    "zain", "alice", "bruno", "clara", "diego", "emma", "farah", "george", "helena", "isaac",
    "jasmine", "karim", "lucia", "mateo", "nadia", "oscar", "petra", "ravi", "selin",
)

_ONSETS: Final = (
    "b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "kr", "l", "m",
    "n", "p", "pr", "qu", "r", "s", "sh", "st", "t", "tr", "v", "w", "z",
)
_VOWELS: Final = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou")
_CODAS: Final = ("", "", "", "n", "r", "s", "l", "x", "m", "k", "th")


def codenames(rng: random.Random, count: int) -> list[str]:
    """``count`` distinct pronounceable made-up words (``kestavo``, ``brinul``)."""
    found: dict[str, None] = {}
    while len(found) < count:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        word += rng.choice(_CODAS)
        if 5 <= len(word) <= 12:
            found[word] = None
    return list(found)
