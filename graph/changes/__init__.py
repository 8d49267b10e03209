"""Change events in GraphQL: admins register, list, pause and delete the webhooks."""
