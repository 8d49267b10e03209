"""Printing what a scenario measured: plain-text tables, and targets with their verdict."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["count_range", "print_rows", "print_target", "verdict"]


def print_rows(header: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1) -> None:
    """A plain text table: the first ``left`` columns left-aligned, the others right-aligned,
    a rule under the header."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for i, row in enumerate((header, *rows)):
        print(
            "  ".join(
                cell.ljust(width) if column < left else cell.rjust(width)
                for column, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
        if i == 0:
            print("  ".join("-" * width for width in widths))


def count_range(values: Sequence[int]) -> str:
    """``3``, or ``2-3`` when the counts varied."""
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def verdict(passed: bool, miss: str = "MISS") -> str:
    return "PASS" if passed else miss


def print_target(what: str, measured: str, passed: bool, *, miss: str = "MISS") -> None:
    """``target: <what>: <measured>, PASS`` (or ``miss``)."""
    print(f"target: {what}: {measured}, {verdict(passed, miss)}")
