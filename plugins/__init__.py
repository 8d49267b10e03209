"""Plugins bundled with Atrium, written against the public plugin API (graph.plugin) only."""
