"""The catalog's GraphQL face, registered through the plugin API like any plugin."""
