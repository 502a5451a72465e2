"""Vectors planted around known directions, for the grouping tests."""

from __future__ import annotations

import numpy as np


def planted(families: int, each: int, spread: float, seed: int = 7) -> list[list[float]]:
    """`each` vectors around each of `families` random directions in 64 dimensions."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(families, 64))
    return [
        list(
            centres[family] / np.linalg.norm(centres[family])
            + rng.normal(scale=spread, size=64) / 8
        )
        for family in range(families)
        for _ in range(each)
    ]
