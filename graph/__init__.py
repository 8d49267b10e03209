"""Atrium's GraphQL face: app factory, settings, schema assembly, plugin API and HTTP view."""
