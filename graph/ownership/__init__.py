"""Ownership's GraphQL face: who owns what, the viewer, directory sync runs, the audit log."""
