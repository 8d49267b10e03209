"""Atrium's GraphQL face: settings, schema assembly, plugin API and HTTP view (the app is
composed above it, in ``atrium``)."""
