"""The settings of a world built from a vote log: how the log is read (`LogOptions`) and what
the world is made of (`BuildSettings`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prefduel.core.errors import SpecError
from prefduel.core.rng import SEED_LIMIT
from prefduel.ranking.battle_schema import BattleSchema
from prefduel.ranking.vote_log import AUTO_CATEGORY_COLUMN
from prefduel.worlds.world import MAX_ARRIVALS, MAX_DIMS


@dataclass(frozen=True)
class LogOptions:
    """How the vote log is read: `prefduel.ranking.vote_log.read_vote_log`'s settings."""

    schema: BattleSchema = field(default_factory=lambda: BattleSchema(min_model_battles=5))
    fmt: str | None = None
    encoding_errors: str = "error"
    category: str | None = AUTO_CATEGORY_COLUMN
    auto_category: bool = True


@dataclass(frozen=True)
class BuildSettings:
    """What the world is made of.

    Attributes:
        models: ``K``, the models with the most votes that become the personas.
        min_votes: Votes among those models a voter needs to be kept.
        rounds: ``S``; None: 24, or the median kept voter's votes when fewer.
        arrivals: ``N``; None: every kept voter once, at most 2,000.
        seed: The world's seed (its layout and draws) and the seed of the fits.
        folds: Folds of the held-out check.
        replicates: Logs replicated from the world for the correlation check.
    """

    models: int = 6
    min_votes: int = 10
    rounds: int | None = None
    arrivals: int | None = None
    seed: int = 0
    folds: int = 5
    replicates: int = 5

    def __post_init__(self) -> None:
        bounds = {
            "models": (2, MAX_DIMS["K"]),
            "min_votes": (1, 1_000_000),
            "rounds": (1, MAX_DIMS["S"]),
            "arrivals": (1, MAX_ARRIVALS),
            "seed": (0, SEED_LIMIT - 1),
            "folds": (2, 100),
            "replicates": (1, 100),
        }
        for name, (low, high) in bounds.items():
            value = getattr(self, name)
            if value is None and name in ("rounds", "arrivals"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise SpecError(
                    f"worlds build: {name} must be an integer from {low:,} to {high:,}, "
                    f"got {value!r}"
                )


__all__ = ["BuildSettings", "LogOptions"]
