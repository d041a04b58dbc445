"""``prefduel rank``: personalized rankings of a vote log (or of a TutorDuel run's clicks).

::

    prefduel rank BATTLES --out DIR [--user-col judge] [--winner-labels A,B,TIE...]
                       [--k 32] [--min-votes 25] [--bt-mode mle|ridge|hier] [--seed 0]
                       [--elo-orders N] [--user ID] [--no-features] [--no-progress] ...
    prefduel rank --from-run RESULTS --world dev --seed 0 --policy random --out DIR
                       [--export-only]

Each analysis stage is named on stderr while it runs (with a bar counting the fitted nets of
the prediction) and its duration printed when it ends (`StageLog`). Needs
``pip install "prefduel[rank]"`` (pandas, pyarrow, scikit-learn); figures also need
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

from prefduel.cli.rank_args import add_rank_parser
from prefduel.core.errors import SpecError
from prefduel.core.outputs import output_dir


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add ``rank`` to the subcommands ``sub``; return ``{"rank": handler}``."""
    add_rank_parser(sub)
    return {"rank": cmd_rank}


def command_line(argv_args: argparse.Namespace) -> str:
    """A shell-quoted ``prefduel rank`` line reproducing the parsed options."""
    parts = ["prefduel", "rank"]
    if argv_args.battles:
        parts.append(argv_args.battles)
    skip = {"command", "battles"}
    if not argv_args.from_run:
        skip |= {"world", "policy", "allow_test", "export_only"}
    for key, value in sorted(vars(argv_args).items()):
        # the parser also carries what is not an option, such as the command's handler
        if key in skip or value is None or value is False or callable(value):
            continue
        flag = "--" + key.replace("_", "-")
        parts += [flag] if value is True else [flag, str(value)]
    return shlex.join(parts)


#: The files ``rank`` writes into ``--out`` (and ``figures/``, a folder).
_OUTPUT_FILES = (
    "report.json",
    "report.md",
    "report.html",
    "models.csv",
    "users.csv",
    "user_models.csv",
    "user_models.parquet",
    "clicks.csv",
)
_OUT = "rank: output folder (--out)"


def _check_out_dir(out_dir: Path) -> None:
    """Refuse an ``--out`` that exists but cannot take the reports, before the input is read:
    a file, a folder that cannot be written, or one where a report's path is a folder (or
    ``figures`` a file). A folder that does not exist yet is created after the read."""
    if not (out_dir.exists() or out_dir.is_symlink()):
        return
    output_dir(out_dir, _OUT, SpecError)
    for name in _OUTPUT_FILES:
        if (out_dir / name).is_dir():
            raise SpecError(
                f"rank: {out_dir / name} is a folder, and rank writes a file there; move it "
                "or choose another --out"
            )
    figures = out_dir / "figures"
    if figures.exists() or figures.is_symlink():
        output_dir(figures, "rank: figures folder", SpecError)


def _make_out_dir(out_dir: Path) -> None:
    """Create the output folder and check it can be written (after the input was read, so a
    failed read leaves none behind; before the analysis, so nothing computed is lost)."""
    output_dir(out_dir, _OUT, SpecError)


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
    _check_out_dir(out_dir)
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
    log = StageLog(progress=not args.no_progress)
    result = analyze(battles, config, on_stage=log.start, on_progress=log.step)
    log.start("reports and figures")
    paths = write_report(result, out_dir, command=command_line(args), user=user)
    log.finish("analysis and reports")
    out.write(_summary_text(result))
    for message in result.messages:
        out.write(f"note: {message}\n")
    if user is not None:
        from prefduel.core.document_text import table_text
        from prefduel.ranking.report import user_leaderboard_table

        out.write("\n" + table_text(user_leaderboard_table(result, user)) + "\n")
        out.write(f"(this leaderboard is also in {paths['html'].name} and {paths['md'].name})\n\n")
    out.write(
        f"wrote {paths['html']}, {paths['md'].name}, {paths['json'].name}, "
        f"{paths['models_csv'].name}, {paths['users_csv'].name}, "
        f"{paths['user_models_csv'].name}"
        + (", user_models.parquet" if "user_models_parquet" in paths else "")
        + "\n"
    )
    return 0


#: What the steps of a stage are (`prefduel.ranking.analyze` reports them).
_STEP_UNITS = {"prediction": "nets"}


class StageLog:
    """What ``prefduel rank`` is doing, on stderr: while a stage runs, a line naming it (a
    progress bar once the stage counts its steps), and once it ends, its duration."""

    def __init__(self, *, progress: bool = True) -> None:
        self.progress = progress
        self.name: str | None = None
        self.bar: tqdm | None = None
        self.started = self.first = time.perf_counter()

    def start(self, name: str) -> None:
        """End the running stage (printing its duration) and start ``name``."""
        self.end()
        self.name, self.started = name, time.perf_counter()
        self._open(f"prefduel rank: {name} ...", None)

    def step(self, name: str, done: int, total: int) -> None:
        """``done`` of the ``total`` steps of stage ``name`` are finished."""
        if not self.progress or name != self.name:
            return
        if self.bar is None or self.bar.total != total:
            unit = _STEP_UNITS.get(name, "steps")
            self._open(
                f"prefduel rank: {name}: {{percentage:3.0f}}%|{{bar}}| {{n_fmt}}/{{total_fmt}} "
                f"{unit} [{{elapsed}}<{{remaining}}]",
                total,
            )
        assert self.bar is not None
        self.bar.update(done - self.bar.n)
        if done == total:  # the last count shows even within tqdm's refresh interval
            self.bar.refresh()

    def end(self) -> None:
        """Close the running stage's line and print how long the stage took."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.name is not None:
            seconds = time.perf_counter() - self.started
            print(f"prefduel rank: {self.name}: {seconds:.1f} s", file=sys.stderr)
            self.name = None

    def finish(self, what: str) -> None:
        """End the running stage, then print the time since this log was made, as ``what``."""
        self.end()
        print(f"prefduel rank: {what}: {time.perf_counter() - self.first:.1f} s", file=sys.stderr)

    def _open(self, bar_format: str, total: int | None) -> None:
        """Replace the stage's line by a new one (no line at all without progress)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.progress:
            self.bar = tqdm(
                total=total, file=sys.stderr, leave=False, bar_format=bar_format, ncols=100
            )


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
    """Lines naming what the row policies found: missing voter ids, excluded models,
    duplicate rows and both-bad votes (nothing when none was found)."""
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
    lines += _duplicate_lines(summary)
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


def _duplicate_lines(summary: dict[str, Any]) -> list[str]:
    """What the duplicate rules found (nothing when no row repeats an earlier one)."""
    lines = []
    copies = summary["skipped"].get("duplicate", 0)
    if copies:
        lines.append(
            f"duplicates: {copies} exact duplicate rows dropped (same user, models, winner, "
            "prompt and timestamp as an earlier row; the first is kept)"
        )
    untimed = summary["notes"].get("duplicate_untimed", 0)
    if untimed:
        lines.append(
            f"duplicates: {untimed} rows repeat an earlier row without a timestamp (same user, "
            "models, winner and prompt); kept, since without timestamps a repeated vote cannot "
            "be told from a copy"
        )
    return lines


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
    for key, verdict in result.prediction_verdicts().items():
        lines.append(f"  verdict {key:4s} {verdict['text']}")
    return "\n".join(lines) + "\n"
