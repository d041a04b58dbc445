"""Personalized rankings from pairwise votes: per-user Elo and Bradley-Terry vs the global ranking.

Implements the analysis of *Personalized Benchmarking: Evaluating LLMs by Individual
Preferences* (ACL Findings 2026) on any Arena-format vote log, or on TutorDuel clicks::

    from prefduel.ranking import read_battles, analyze, write_report
    battles = read_battles("battles.jsonl")            # model_a, model_b, winner, judge, ...
    result = analyze(battles, RankConfig(k=32, min_votes=25))
    write_report(result, "out/")

Pieces (pure functions on arrays; pandas and scikit-learn are imported only when needed, from
``pip install "prefduel[rank]"``):

- `battles`: schema, reading CSV/JSON/JSONL/Parquet, validation
  with counted skips (built from `battle_schema`, `battle_files` and `battle_validation`).
- `elo`: online Elo, global, per user (vectorized) and bootstrap.
- `bt`: Bradley-Terry MLE / ridge on aggregated win matrices,
  batched Newton, existence check, multinomial bootstrap.
- `personal`: per-user ratings, Spearman vs global, summary, tests.
- `topics`, `style`: profiles.
- `predict`: MLP prediction of score vectors vs the mean predictor.
- `synthetic`: seeded Arena-format generator with planted clusters, and the sample
  log shipped as ``examples/battles.csv``.
- `clicks`: TutorDuel trajectories as battles.
- `analysis`, `report`: the pipeline (its result and settings in `analysis_result`)
  and its JSON/Markdown/HTML report.

This subpackage imports only ``prefduel.core`` (docs/design.md, section 1).
"""

from prefduel.ranking.analysis import GlobalRatings, RankAnalysis, RankConfig, analyze
from prefduel.ranking.battles import (
    NOTE_REASONS,
    SKIP_REASONS,
    Battles,
    BattleSchema,
    battles_from_arrays,
    battles_from_frame,
    first_user_turn,
    read_battles,
    write_battles,
)
from prefduel.ranking.bt import (
    BTFit,
    bt_bootstrap,
    bt_from_wins,
    bt_per_user,
    bt_ratings,
    strongly_connected,
    to_elo,
    win_matrices,
    win_matrix,
)
from prefduel.ranking.clicks import CLICK_COLUMNS, trajectory_battles
from prefduel.ranking.elo import ARENA_K, PAPER_K, elo_bootstrap, elo_per_user, elo_ratings
from prefduel.ranking.errors import BattleFormatError, MissingDependencyError, RankingError
from prefduel.ranking.personal import (
    PersonalRatings,
    correlation_summary,
    correlation_tests,
    eligible_users,
    personal_ratings,
    spearman_to_global,
)
from prefduel.ranking.predict import Prediction, PredictorSpec, predict_scores
from prefduel.ranking.report import write_report
from prefduel.ranking.style import (
    STYLE_FEATURES,
    MetaStyles,
    handcrafted_features,
    meta_styles,
    style_features,
)
from prefduel.ranking.synthetic import SyntheticTruth, sample_battles, synthetic_arena
from prefduel.ranking.topics import Topics, fit_topics, load_encoder, user_profiles

__all__ = [
    "ARENA_K",
    "CLICK_COLUMNS",
    "NOTE_REASONS",
    "PAPER_K",
    "SKIP_REASONS",
    "STYLE_FEATURES",
    "BTFit",
    "BattleFormatError",
    "BattleSchema",
    "Battles",
    "GlobalRatings",
    "MetaStyles",
    "MissingDependencyError",
    "PersonalRatings",
    "Prediction",
    "PredictorSpec",
    "RankAnalysis",
    "RankConfig",
    "RankingError",
    "SyntheticTruth",
    "Topics",
    "analyze",
    "battles_from_arrays",
    "battles_from_frame",
    "bt_bootstrap",
    "bt_from_wins",
    "bt_per_user",
    "bt_ratings",
    "correlation_summary",
    "correlation_tests",
    "eligible_users",
    "elo_bootstrap",
    "elo_per_user",
    "elo_ratings",
    "first_user_turn",
    "fit_topics",
    "handcrafted_features",
    "load_encoder",
    "meta_styles",
    "personal_ratings",
    "predict_scores",
    "read_battles",
    "sample_battles",
    "spearman_to_global",
    "strongly_connected",
    "style_features",
    "synthetic_arena",
    "to_elo",
    "trajectory_battles",
    "user_profiles",
    "win_matrices",
    "win_matrix",
    "write_battles",
    "write_report",
]
