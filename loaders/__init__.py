"""DataLoaders per access path, built per request, with their batch functions."""
