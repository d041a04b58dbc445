"""Shared data of the ranking tests: small seeded synthetic logs and one cached analysis.

Importable as ``pb_rank_data`` (pytest puts this folder on ``sys.path``). The analysis is
computed once per test session and shared, to keep the folder fast.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from prefduel.ranking import (
    Battles,
    RankAnalysis,
    RankConfig,
    SyntheticTruth,
    analyze,
    battles_from_frame,
    synthetic_arena,
)

#: Settings small enough for tests, with the paper's analysis steps all switched on.
FAST = RankConfig(bootstrap=30, members=3, folds=4, n_topics=8, meta_styles=4)


@lru_cache(maxsize=4)
def arena(seed: int = 0, n_users: int = 90) -> tuple[Any, SyntheticTruth]:
    """A synthetic Arena log: ``n_users`` users from 3 taste clusters, 8 models."""
    return synthetic_arena(n_users=n_users, n_models=8, votes=(30, 50), seed=seed)


@lru_cache(maxsize=1)
def analysis() -> tuple[Battles, SyntheticTruth, RankAnalysis]:
    """The full analysis of :func:`arena` (computed once)."""
    frame, truth = arena()
    battles = battles_from_frame(frame)
    return battles, truth, analyze(battles, FAST)


def truth_cluster(battles: Battles, truth: SyntheticTruth, users: np.ndarray) -> np.ndarray:
    """Planted cluster of the analysed users (indices into ``battles.users``)."""
    where = {u: i for i, u in enumerate(truth.users)}
    return truth.cluster[[where[battles.users[u]] for u in users.tolist()]]


def rank(argv: list[str]) -> int:
    """Run ``prefduel rank ARGV`` like the real command (exit code; errors on stderr)."""
    from prefduel.cli import main as cli

    return cli.main(["rank", *argv])
