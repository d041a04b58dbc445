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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prefduel.core.document import number
from prefduel.core.errors import SpecError
from prefduel.core.outputs import output_dir
from prefduel.ranking.vote_check import holdout_check, rho_check
from prefduel.ranking.vote_log import VoteLog, read_vote_log
from prefduel.ranking.vote_model import VoteModel, fit_vote_model
from prefduel.voteworlds.layout import default_arrivals, default_rounds
from prefduel.voteworlds.report import write_check
from prefduel.voteworlds.selection import Selection, select
from prefduel.voteworlds.settings import BuildSettings, LogOptions
from prefduel.voteworlds.world_arrays import world_of
from prefduel.worlds.votes import VotesPosterior
from prefduel.worlds.world import World


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


def build_summary(result: BuildResult) -> str:
    """What a build chose and made, in a few lines for the terminal (before the check)."""
    sel, model, world = result.selection, result.model, result.world
    models = ", ".join(
        f"{m} ({v:,})" for m, v in zip(sel.battles.models, sel.model_votes.tolist(), strict=True)
    )
    categories = result.log.categories
    cats = (
        f"{len(categories)} from column {result.log.category_column!r} (effects shrunk by "
        f"tau {number(model.tau_category, 2)} logits)"
        if len(categories) > 1
        else "none (one prompt category)"
    )
    arriving = world.info["votes"]["voters_arriving"]
    lines = [
        f"models: the {world.K} with the most votes, in order: {models}",
        f"voters: {sel.voters.size:,} kept (at least {world.info['votes']['settings']['min_votes']}"
        f" votes among these models), {sel.dropped:,} dropped (fewer)",
        f"categories: {cats}",
        f"fit: each voter's deviation from the global strengths shrunk by tau "
        f"{number(model.tau, 2)} logits ({sel.battles.n:,} votes among the models)",
        f"world: {world.N:,} arrivals ({arriving:,} voters) x {world.S} rounds x {world.K} "
        f"personas, d = {world.d}; each seed re-orders the arrivals and redraws their "
        "utilities from the voters' posteriors",
    ]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


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


__all__ = ["BuildResult", "build_summary", "build_votes_world", "check_out", "predictive_check"]
