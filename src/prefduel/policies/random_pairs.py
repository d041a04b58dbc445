"""Uniformly random distinct pairs: the score's zero point."""

from __future__ import annotations

import numpy as np

from prefduel.policies.base import Policy
from prefduel.policies.loading import POLICIES


@POLICIES.register("random")
class RandomPolicy(Policy):
    """Show a uniformly random pair of distinct personas every round; learns nothing."""

    name = "random"

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        i, j = self.rng.choice(self.K, size=2, replace=False)
        return int(i), int(j)
