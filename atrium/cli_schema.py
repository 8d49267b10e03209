"""``atrium schema print`` and ``atrium schema check``: Atrium's schema, a plugin's fragment of
it, and the breaking-change gate over either."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graph.settings import Settings

__all__ = ["add_schema_commands"]

DESCRIPTION = """\
Atrium's schema is the core's and its bundled plugins' (those Atrium's own package publishes):
what `make schema` writes to schema.graphql and make test guards. A third-party plugin
installed beside them (an atrium.plugins entry point of another package) is never part of it:
it commits its own fragment and runs the same gate over it.

  atrium schema print                    Atrium's schema (the committed schema.graphql)
  atrium schema print --installed        with every installed plugin, as atrium serve serves it
  atrium schema print --plugin ID        what plugin ID adds: its types, and `extend type` for
                                         the fields it adds to others' types
  atrium schema check --plugin ID FILE   plugin ID's schema now against its committed fragment
                                         FILE: removed or renamed fields, changed types and the
                                         like fail (exit 1) unless acknowledged; dangerous and
                                         safe changes (fields, enum values, optional arguments
                                         added) pass; --operations validates the plugin's
                                         console operations (.graphql files) against the schema

ATRIUM_DISABLED_PLUGINS applies to the bundled plugins here as in atrium serve."""


def add_schema_commands(commands: Any) -> None:
    schema = commands.add_parser(
        "schema",
        help="print the schema, or a plugin's part of it; check a plugin's breaking changes",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    schema_commands = schema.add_subparsers(title="commands", metavar="COMMAND", required=True)
    printer = schema_commands.add_parser(
        "print",
        help="print the GraphQL schema (SDL)",
        description="Print the schema assembled from the catalog and the bundled plugins "
        "(schema.graphql); --installed adds every installed plugin; --plugin ID prints only "
        "what that plugin adds (its committed fragment).",
    )
    which = printer.add_mutually_exclusive_group()
    which.add_argument(
        "--plugin", metavar="ID", help="print only what the installed plugin ID adds"
    )
    which.add_argument(
        "--installed",
        action="store_true",
        help="the schema with every installed plugin, third-party ones too, as served",
    )
    printer.set_defaults(run=_print)

    checker = schema_commands.add_parser(
        "check",
        help="check a plugin's schema for breaking changes against its committed fragment",
        description="Compare the schema of Atrium with plugin ID now with the plugin's "
        "committed fragment FILE (what `atrium schema print --plugin ID` printed for the "
        "release clients use) laid on Atrium's schema, by the gate make test runs over "
        "Atrium's own: a breaking change (a field removed or renamed, a type changed, an "
        "argument made required) fails unless acknowledged in --acknowledgements; dangerous "
        "changes are printed and pass, as do safe ones. Every operation of --operations must "
        "validate against the schema. Exits 1 when the check fails.",
    )
    checker.add_argument("--plugin", metavar="ID", required=True, help="the installed plugin")
    checker.add_argument(
        "fragment", type=Path, metavar="FILE", help="the plugin's committed fragment (SDL)"
    )
    checker.add_argument(
        "--acknowledgements",
        type=Path,
        metavar="FILE",
        help="breaking changes allowed, as in schema-changes.md: under `## Acknowledged`, "
        "lines `- <change as printed> Reason: <why>`",
    )
    checker.add_argument(
        "--operations",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="the plugin's console operations: .graphql files, or folders of them; repeat "
        "for several",
    )
    checker.set_defaults(run=_check)


def _print(settings: Settings, args: argparse.Namespace) -> int:
    from graph.assembly import discover_plugins
    from graph.plugin import PluginConflict
    from graph.schema_file import plugin_schema, schema_sdl

    if args.plugin:
        try:
            sys.stdout.write(plugin_schema(settings, args.plugin).fragment)
        except PluginConflict as exc:
            print(f"atrium: {exc}", file=sys.stderr)
            return 1
    elif args.installed:
        sys.stdout.write(schema_sdl(settings, discover_plugins(settings)))
    else:
        sys.stdout.write(schema_sdl(settings))
    return 0


def _check(settings: Settings, args: argparse.Namespace) -> int:
    from graphql import GraphQLError, Source, parse

    from graph.plugin import PluginConflict
    from graph.schema_file import plugin_schema
    from graph.schema_gate import check_plugin, read_operations

    try:
        fragment = args.fragment.read_text(encoding="utf-8")
        parse(Source(fragment, str(args.fragment)))  # its own syntax errors, on its own lines
        acknowledgements = (
            args.acknowledgements.read_text(encoding="utf-8") if args.acknowledgements else ""
        )
        operations = read_operations(args.operations)
        found = plugin_schema(settings, args.plugin)
    except (OSError, GraphQLError, PluginConflict) as exc:
        print(f"atrium: {exc}", file=sys.stderr)
        return 1
    try:
        report = check_plugin(
            found.base_sdl,
            fragment,
            found.live._schema,
            acknowledgements,
            operations,
            acknowledgements_name=str(args.acknowledgements or "--acknowledgements"),
        )
    except (GraphQLError, TypeError) as exc:
        problems = str(exc).split("\n\n")
        more = f"\n  ... and {len(problems) - 5} more" if len(problems) > 5 else ""
        print(
            f"atrium: {args.fragment} does not extend Atrium's schema (is it what "
            f"`atrium schema print --plugin {args.plugin}` prints?):\n  "
            + "\n  ".join(problems[:5])
            + more,
            file=sys.stderr,
        )
        return 1
    for change in report.dangerous:
        print(f"dangerous change (allowed): {change}", file=sys.stderr)
    failures = report.failures()
    for failure in failures:
        print(f"atrium: {failure}", file=sys.stderr)
    if failures:
        return 1
    print(
        f"plugin {args.plugin}: no breaking change from {args.fragment}"
        + (f"; {len(operations)} operations valid" if operations else "")
    )
    return 0
