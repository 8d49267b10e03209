"""Root query and mutation logic per domain: thin functions over loaders and sources."""
