"""Build a world from a vote log: read, choose models and voters, fit, lay out, check, write.

`build_votes_world` is what ``prefduel worlds build --from-votes LOG --out DIR`` runs:

1. read the log as ``prefduel rank`` does (`prefduel.ranking.vote_log.read_vote_log`);
2. keep the ``K`` models with the most votes and the voters with at least ``min_votes``
   votes among them;
3. fit the log's model (`prefduel.ranking.vote_model.fit_vote_model`);
4. lay out the arrivals (`prefduel.voteworlds.layout`) and draw the world
   (`prefduel.voteworlds.world_arrays`);
5. run the posterior predictive check (`prefduel.ranking.vote_check`);
6. write the world, its posterior and the check into a temporary folder beside ``DIR`` and
   rename it to ``DIR`` at the end, so a failed or interrupted build leaves nothing there.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from prefduel.core.errors import SpecError
from prefduel.core.outputs import output_dir
from prefduel.core.rng import SEED_LIMIT
from prefduel.ranking.battle_schema import BattleSchema
from prefduel.ranking.battles import Battles
from prefduel.ranking.errors import RankingError
from prefduel.ranking.vote_check import holdout_check, rho_check
from prefduel.ranking.vote_log import AUTO_CATEGORY_COLUMN, VoteLog, read_vote_log
from prefduel.ranking.vote_model import VoteModel, among_models, fit_vote_model, top_models
from prefduel.voteworlds.layout import default_arrivals, default_rounds
from prefduel.voteworlds.report import write_check
from prefduel.voteworlds.world_arrays import world_of
from prefduel.worlds.votes import VotesPosterior
from prefduel.worlds.world import MAX_ARRIVALS, MAX_DIMS, World

#: Fewest voters a world is built from (one voter has nobody to transfer from).
MIN_VOTERS = 2


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


@dataclass(frozen=True)
class Selection:
    """The models and voters a world is made of.

    Attributes:
        battles: The battles among the chosen models (models re-indexed in vote order).
        category: ``(n,)`` their categories.
        models: ``(K,)`` the chosen models (indices into the log's models).
        model_votes: ``(K,)`` battles of each in the whole log.
        voters: ``(V,)`` the kept voters (indices into ``battles.users``).
        dropped: Voters with a vote among the chosen models but fewer than ``min_votes``.
        votes: ``(V,)`` votes of each kept voter among the chosen models.
    """

    battles: Battles
    category: np.ndarray
    models: np.ndarray
    model_votes: np.ndarray
    voters: np.ndarray
    dropped: int
    votes: np.ndarray


@dataclass
class BuildResult:
    """What `build_votes_world` made (and wrote to ``out``)."""

    out: Path
    world: World
    log: VoteLog
    selection: Selection
    model: VoteModel
    check: dict[str, Any]
    notes: list[str]


def check_out(out: str | Path) -> Path:
    """Refuse an ``--out`` that is not a new or empty folder that can be created, before the
    log is read.

    Raises:
        SpecError: naming the path and what is wrong.
    """
    out = Path(out)
    if os.path.lexists(out):
        if not out.is_dir():
            raise SpecError(f"worlds build: --out {out} is an existing file; give a new folder")
        if any(out.iterdir()):
            raise SpecError(
                f"worlds build: --out {out} is a folder that is not empty; give a new or empty "
                "folder (a world is written whole or not at all)"
            )
    ancestor = out.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise SpecError(f"worlds build: --out {out} cannot be created: {ancestor} is a file")
    output_dir(ancestor, f"worlds build: --out {out} cannot be created: the folder", SpecError)
    return out


def select(log: VoteLog, settings: BuildSettings, notes: list[str]) -> Selection:
    """The ``K`` models with the most votes and the voters with enough votes among them.

    Raises:
        RankingError: fewer than 2 models, or fewer than `MIN_VOTERS` voters kept.
    """
    full = log.battles
    models = top_models(full, settings.models)
    if models.size < settings.models:
        notes.append(
            f"the log has only {models.size} models after the row checks, so the world has "
            f"K = {models.size} personas (asked for {settings.models})"
        )
    counts = np.bincount(full.a, minlength=full.n_models) + np.bincount(
        full.b, minlength=full.n_models
    )
    battles, kept = among_models(full, models)
    votes = battles.votes_per_user()
    voters = np.flatnonzero(votes >= settings.min_votes)
    if voters.size < MIN_VOTERS:
        raise RankingError(
            f"{full.source}: {voters.size} voter(s) cast at least {settings.min_votes} votes "
            f"among the {models.size} models with the most votes; a world needs at least "
            f"{MIN_VOTERS} (the most active cast {int(votes.max(initial=0))}); lower "
            "--min-votes, or raise --models"
        )
    return Selection(
        battles=battles,
        category=log.category[kept],
        models=models,
        model_votes=counts[models],
        voters=voters,
        dropped=int(np.sum((votes > 0) & (votes < settings.min_votes))),
        votes=votes[voters],
    )


def predictive_check(
    selection: Selection, model: VoteModel, n_categories: int, settings: BuildSettings
) -> dict[str, Any]:
    """The held-out log-loss and the per-voter correlation check (`prefduel.ranking.vote_check`)."""
    battles, category = selection.battles, selection.category
    return {
        "holdout": holdout_check(
            battles, category, n_categories, selection.voters,
            folds=settings.folds, seed=settings.seed,
        ),
        "rho": rho_check(
            battles, category, model, replicates=settings.replicates, seed=settings.seed
        ),
    }


def build_votes_world(
    log_path: str | Path,
    out: str | Path,
    settings: BuildSettings | None = None,
    options: LogOptions | None = None,
    *,
    on_stage: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build a world from a vote log and write it to the new folder ``out``.

    Args:
        log_path: The vote log (CSV, JSON, JSONL or Parquet).
        out: The world's folder (new, or an empty folder).
        settings: What the world is made of.
        options: How the log is read.
        on_stage: Called with each stage's name as it starts (``read``, ``fit``, ``world``,
            ``check``, ``write``).

    Raises:
        SpecError: an ``out`` that cannot take the world.
        BattleFormatError: a log that cannot be read (as ``prefduel rank``), or a missing
            category column.
        RankingError: too few models or voters after the thresholds.
    """
    settings, options = settings or BuildSettings(), options or LogOptions()
    stage = on_stage or (lambda name: None)
    out = check_out(out)
    stage("read")
    log = read_vote_log(
        log_path, options.schema, fmt=options.fmt, encoding_errors=options.encoding_errors,
        category=options.category, auto_category=options.auto_category,
    )
    notes: list[str] = []
    selection = select(log, settings, notes)
    stage("fit")
    n_categories = len(log.categories)
    model = fit_vote_model(
        selection.battles, selection.category, n_categories, selection.voters, seed=settings.seed
    )
    stage("world")
    rounds = settings.rounds or default_rounds(selection.votes)
    arrivals = settings.arrivals or default_arrivals(selection.voters.size)
    world, posterior = world_of(log, selection, model, rounds, arrivals, settings.seed, out.name)
    stage("check")
    check = predictive_check(selection, model, n_categories, settings)
    world.info["votes"].update(_provenance(log, selection, model, settings, options, check))
    stage("write")
    _write(world, posterior, check, out)
    return BuildResult(out, world, log, selection, model, check, notes)


def _provenance(
    log: VoteLog,
    selection: Selection,
    model: VoteModel,
    settings: BuildSettings,
    options: LogOptions,
    check: dict[str, Any],
) -> dict[str, Any]:
    """The provenance record of ``world.json`` (``info.votes``): where the world comes from,
    how it was read, chosen and fitted, and how faithful it is."""
    battles = selection.battles
    return {
        "log": {
            "path": log.battles.source, "format": log.format, "sha256": log.sha256,
            "bytes": log.size, "summary": log.battles.summary(),
        },
        "read": {
            "schema": log.battles.schema.to_dict(), "encoding_errors": options.encoding_errors,
            "category_column": log.category_column,
        },
        "settings": asdict(settings),
        "models": {
            "chosen": list(battles.models), "votes": selection.model_votes.tolist(),
            "of": log.battles.n_models, "battles_among_them": battles.n,
        },
        "voters": {
            "min_votes": settings.min_votes, "kept": int(selection.voters.size),
            "dropped": selection.dropped,
        },
        "fit": {
            "model": "hierarchical Bradley-Terry: global strengths + category effects "
            "(empirical Bayes) + each voter's deviation (empirical Bayes, Gaussian posterior)",
            "ties": "half a win each way",
            "tau": model.tau, "tau_category": model.tau_category,
            "beta": model.beta.tolist(), "gamma": model.gamma.tolist(),
            "categories": list(log.categories), "converged": bool(model.converged.all()),
            "seed": settings.seed,
        },
        "check": check,
    }


def _write(world: World, posterior: VotesPosterior, check: dict[str, Any], out: Path) -> None:
    """Write the world into a temporary folder beside ``out``, then rename it to ``out``
    (``out`` is new or an empty folder); nothing is left behind if anything fails."""
    out.parent.mkdir(parents=True, exist_ok=True)
    # a folder of our own beside ``out`` (not mkdtemp's: its mode 0700 would stay the world's)
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        world.save(tmp)
        posterior.save(tmp)
        write_check(check, world, tmp)
        os.replace(tmp, out)  # an empty folder at ``out`` is replaced (POSIX rename)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__ = [
    "MIN_VOTERS",
    "BuildResult",
    "BuildSettings",
    "LogOptions",
    "Selection",
    "build_votes_world",
    "check_out",
    "predictive_check",
    "select",
]
