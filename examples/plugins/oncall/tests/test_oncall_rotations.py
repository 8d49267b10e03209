"""The rotations file, read without a server: who is on call when, and what a bad file says."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from atrium_oncall.rotations import InvalidRotations, read_rotations

FILE = """
rotations:
  - team: Payments
    name: Payments
    start: 2026-01-05T09:00:00+01:00
    shiftHours: 12
    people: [ann, User:default/Bob, cat]
    escalationPolicy: Primary, then secondary.
"""


def test_turns_follow_the_shifts() -> None:
    rotation = read_rotations(FILE)["group:default/payments"]
    start = datetime(2026, 1, 5, 8, tzinfo=UTC)
    assert rotation.start == start
    assert rotation.people == ["user:default/ann", "user:default/bob", "user:default/cat"]
    seen = []
    for hours in (-5, 0, 11.9, 12, 30, 36):
        now = rotation.at(start + timedelta(hours=hours))
        seen.append((now.primary[13:], now.secondary and now.secondary[13:], now.until - start))
    shift = timedelta(hours=12)
    assert seen == [
        ("ann", "bob", shift),
        ("ann", "bob", shift),
        ("ann", "bob", shift),
        ("bob", "cat", 2 * shift),
        ("cat", "ann", 3 * shift),
        ("ann", "bob", 4 * shift),
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("rotations: [", r"not YAML: .*line"),
        ("a: 1\n---\nb: 2\n", r"expected one YAML document"),
        (FILE.replace("shiftHours: 12", "shiftHours: 0"), r"rotations\.0\.shiftHours"),
        (FILE.replace("+01:00", ""), r"rotations\.0\.start: .*time zone"),
        (FILE.replace("team: Payments", "team: user:ann"), r"rotations\.0\.team: .*not a group"),
        (
            FILE.replace("people: [ann,", 'people: ["user:default/",'),
            r"rotations\.0\.people\.0: .*form",
        ),
        (
            FILE.replace("people: [ann,", "people: [group:x,"),
            r"rotations\.0\.people\.0: .*not a user",
        ),
        (FILE + FILE.split("rotations:")[1], r"group:default/payments has two rotations"),
        (FILE.replace("name: Payments", "nmae: Payments"), r"rotations\.0\.nmae"),
    ],
)
def test_a_bad_file_says_what_and_where(text: str, problem: str) -> None:
    with pytest.raises(InvalidRotations, match=problem):
        read_rotations(text)
