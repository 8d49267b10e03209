"""Every mutation of Atrium's schema (the core's and every bundled plugin's) declares who may
call it with ``Authorize``, and so writes the audit log, allowed, denied or failed: read from
the assembled schema, so a mutation added without a rule fails here. Each action names one
mutation in the audit log."""

from __future__ import annotations

from collections import Counter

from graph.assembly import assemble
from graph.authz import Authorize
from graph.schema_file import atrium_plugins
from graph.settings import Settings


def test_every_mutation_declares_who_may_call_it() -> None:
    settings = Settings()
    schema = assemble(settings, atrium_plugins(settings)).schema
    assert schema is not None
    mutation = schema.get_type_by_name("Mutation")
    assert mutation is not None
    fields = {field.python_name: field for field in mutation.fields}  # type: ignore[union-attr]
    # The bundled plugins' mutations are among them.
    assert {"apply_workload_manifest", "promote_release", "create_silence"} <= fields.keys()
    rules = {
        name: [e for e in field.extensions if isinstance(e, Authorize)]
        for name, field in fields.items()
    }
    unguarded = sorted(name for name, found in rules.items() if len(found) != 1)
    assert not unguarded, f"mutations without exactly one Authorize: {unguarded}"
    actions = Counter(found[0].action for found in rules.values())
    assert not [a for a, n in actions.items() if n > 1], actions
