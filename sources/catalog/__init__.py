"""The software catalog: Backstage's entity model, its YAML ingestion and its PostgreSQL store."""
