"""Adapters to the outside world. Nothing here knows about GraphQL."""
