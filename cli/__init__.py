"""Operator tooling, never deployed: the local host, the admin commands, OpenAPI."""
