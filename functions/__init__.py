"""The Evidencia APIs, each whole in its own package, and the registry of entry points."""
