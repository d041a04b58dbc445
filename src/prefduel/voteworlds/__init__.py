"""Worlds built from a vote log: the voters of an Arena-style log as TutorDuel arrivals.

`build_votes_world` reads a vote log as ``prefduel rank`` does, keeps the ``K`` models with
the most votes as personas and the voters with enough votes among them as users, fits the
log's hierarchical Bradley-Terry model (`prefduel.ranking.vote_model`), and writes a stored
world whose seeds redraw each arrival's utilities from its voter's posterior
(`prefduel.worlds.votes`), with a posterior predictive check beside it
(`prefduel.ranking.vote_check`). See docs/votes-worlds.md.

This subpackage imports ``core``, ``ranking`` and ``worlds`` (docs/design.md, section 1): it
is the one place where a fitted model of a vote log becomes a world.
"""

from prefduel.voteworlds.build import BuildResult, build_summary, build_votes_world, check_out
from prefduel.voteworlds.report import check_text
from prefduel.voteworlds.selection import MIN_VOTERS, Selection
from prefduel.voteworlds.settings import BuildSettings, LogOptions

__all__ = [
    "MIN_VOTERS",
    "BuildResult",
    "BuildSettings",
    "LogOptions",
    "Selection",
    "build_summary",
    "build_votes_world",
    "check_out",
    "check_text",
]
