"""Change events: every committed change to an entity, delivered to the webhooks admins
register, at least once and in order per ref.

The outbox is written by triggers on the entities table (migration 0012) in the transaction of
the change, so no writer can forget it: imports, the directory sync and mutations alike.
``hooks`` keeps the hooks, ``secrets`` seals their secrets, ``targets`` checks where they
point, ``outbox`` claims and records deliveries, ``delivery`` posts them.
"""
