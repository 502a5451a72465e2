"""An org's agent linked to a project, and an accepted hypothesis about it there."""

from __future__ import annotations

from tests.agentconnect.conftest import configured, connect
from tests.loop.linked import loop
from tests.loop.tried import tried

__all__ = ["configured", "connect", "loop", "tried"]
