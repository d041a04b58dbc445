"""``prefduel prefdisco generate|run|report``: cold-start preference discovery.

::

    prefduel prefdisco generate DIR [--config study.yaml] [--seed N] [--personas N]
                  [--per-task N] [--tasks FORMAT[:PATH]]... [--limit N] [--enrich]
                  [--refine-rubrics] [LLM flags]
    prefduel prefdisco run DIR [--config study.yaml] [--out RUNDIR] [--models a,b]
                  [--conditions baseline,discovery,oracle] [--strategies ask,interviewer]
                  [--max-turns N]
                  [--router auto|keyword|llm] [--user-style cooperative|terse|vague]
                  [--judge-model M] [--dry-run] [--no-progress] [LLM flags]
    prefduel prefdisco report RUNDIR [--config study.yaml] [--out DIR] [--bootstrap N]
                  [--min-gap X]
    prefduel prefdisco from-inspect LOG [LOG ...] --out RUNDIR

Without ``--config`` everything runs offline on the scripted backend and the built-in tasks
(the demo). LLM flags are the shared ones (``--backend``, ``--base-url``, ``--api-key-env`` or
``--no-api-key``, ``--cache``, ``--budget``, ...); the cache defaults to
``DIR/llm-cache.sqlite``, so re-running an interrupted ``run`` resumes without paying twice for
any answer received (replies in flight at a kill are sent again).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from prefduel.cli.argtypes import int_at_least, positive_float, seed_int
from prefduel.llm.config import add_llm_arguments, config_from_args

#: The bounds of the sizes a flag can ask for: those of `prefduel.prefdisco.config` (a test
#: keeps them equal), repeated because importing that package loads numpy and scipy.
MAX_PERSONAS = 10_000
MAX_TASK_ITEMS = 1_000_000
MAX_TURNS = 100
MAX_BOOTSTRAP = 100_000
FORMATS_HELP = "builtin, math500, medqa, commonsenseqa, logiqa, socialiqa, generic"
RERUN = "re-run the same command to retry the failed episodes (paid answers are cached)"


def _names(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def register(sub: Any) -> dict[str, Callable[[argparse.Namespace, Any], int]]:
    """Add ``prefdisco`` (actions ``generate``, ``run``, ``report``) to ``sub``."""
    parser = sub.add_parser(
        "prefdisco",
        help="cold-start preference discovery (PrefDisco): generate, run, report",
        description="Turn question/answer benchmarks into cold-start personalization tasks "
        "(PrefDisco, ICLR 2026): hidden sparse preferences over a typed attribute taxonomy, a "
        "passive simulated user, baseline / discovery (<= 5 questions) / oracle conditions "
        "with one scaffold, per-attribute rubric scores (PrefAlign, NormAlign), accuracy and "
        "discovery recall. Without --config it runs offline on the scripted backend.",
    )
    actions = parser.add_subparsers(dest="prefdisco_action", required=True, metavar="ACTION")
    _add_generate(actions)
    _add_run(actions)
    _add_report(actions)
    _add_from_inspect(actions)
    return {"prefdisco": cmd_prefdisco}


def _add_generate(actions: Any) -> None:
    gen = actions.add_parser(
        "generate",
        help="personas, tasks, hidden preferences and rubrics into DIR",
        description="Sample the persona library, load the tasks, draw one sparse preference "
        "profile per (persona, task) instance and write the rubrics, into DIR (deterministic "
        "in the config).",
    )
    gen.add_argument("folder", metavar="DIR", help="dataset folder (created)")
    gen.add_argument("--config", default=None, help="YAML config (default: the offline demo)")
    gen.add_argument("--seed", type=seed_int, default=None, help="root seed (0 to 2**32 - 1)")
    gen.add_argument(
        "--personas",
        type=int_at_least(1, MAX_PERSONAS),
        default=None,
        help=f"persona library size (at most {MAX_PERSONAS:,})",
    )
    gen.add_argument(
        "--per-task",
        type=int_at_least(1, MAX_PERSONAS),
        default=None,
        help="personas paired with each task",
    )
    gen.add_argument(
        "--tasks",
        action="append",
        default=None,
        metavar="FORMAT[:PATH]",
        help=f"a task source (repeatable); FORMAT is one of {FORMATS_HELP}",
    )
    gen.add_argument(
        "--limit",
        type=int_at_least(1, MAX_TASK_ITEMS),
        default=None,
        help="items per task source",
    )
    gen.add_argument("--enrich", action="store_true", default=None, help="LLM backstories")
    gen.add_argument(
        "--refine-rubrics", action="store_true", default=None, help="LLM-refined rubrics"
    )
    gen.add_argument("--model", default=None, help="model for --enrich / --refine-rubrics")
    add_llm_arguments(gen)


def _add_run(actions: Any) -> None:
    run = actions.add_parser(
        "run",
        help="run and score every episode (resumable)",
        description="Run every model x condition x instance episode of the dataset in DIR and "
        "score it; finished episodes are skipped, so re-running resumes.",
    )
    run.add_argument("folder", metavar="DIR", help="dataset folder (from generate)")
    run.add_argument("--config", default=None, help="YAML config (default: the dataset's)")
    run.add_argument("--out", default=None, metavar="RUNDIR", help="run folder (default: DIR)")
    run.add_argument("--models", type=_names, default=None, help="models under test (comma list)")
    run.add_argument(
        "--conditions", type=_names, default=None, help="comma list of baseline,discovery,oracle"
    )
    run.add_argument(
        "--strategies",
        type=_names,
        default=None,
        help="comma list of discovery strategies: ask (the model asks), interviewer (the "
        "Bayesian interviewer chooses the questions; settings in run.interviewer)",
    )
    run.add_argument(
        "--max-turns",
        type=int_at_least(1, MAX_TURNS),
        default=None,
        help=f"question budget (at most {MAX_TURNS})",
    )
    run.add_argument(
        "--router",
        choices=("auto", "keyword", "llm"),
        default=None,
        help="user's router (auto: keyword offline, else the more accurate of the two)",
    )
    run.add_argument(
        "--user-style",
        choices=("cooperative", "terse", "vague"),
        default=None,
        help="how helpful the simulated user is",
    )
    run.add_argument("--judge-model", default=None, help="rubric judge model")
    run.add_argument(
        "--dry-run", action="store_true", help="only count the episodes and estimate the calls"
    )
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_llm_arguments(run)


def _add_report(actions: Any) -> None:
    rep = actions.add_parser(
        "report",
        help="Markdown, HTML and JSON report of a run",
        description="Aggregate the scores of RUNDIR into report.md, report.html and "
        "report.json: per-condition tables, NormAlign by task and by attribute with bootstrap "
        "intervals, questions vs alignment, accuracy.",
    )
    rep.add_argument("folder", metavar="RUNDIR", help="run folder (from run)")
    rep.add_argument("--config", default=None, help="YAML config (its report section)")
    rep.add_argument(
        "--out", default=None, metavar="DIR", help="report folder (default: RUNDIR/report)"
    )
    rep.add_argument(
        "--bootstrap",
        type=int_at_least(0, MAX_BOOTSTRAP),
        default=None,
        help="bootstrap replicates",
    )
    rep.add_argument("--min-gap", type=positive_float, default=None, help="NormAlign guard")


def _add_from_inspect(actions: Any) -> None:
    conv = actions.add_parser(
        "from-inspect",
        help="an inspect-ai log of the PrefDisco task into a run folder",
        description="Write the transcripts and score rows kept in inspect-ai logs of the task "
        "prefduel/prefdisco into RUNDIR (run.json, transcripts.jsonl, scores.jsonl), so "
        "'prefduel prefdisco report RUNDIR' reports them. Needs the inspect extra.",
    )
    conv.add_argument("logs", nargs="+", metavar="LOG", help="inspect log files (.eval, .json)")
    conv.add_argument("--out", required=True, metavar="RUNDIR", help="run folder (created)")


def cmd_from_inspect(args: argparse.Namespace, out: Any) -> int:
    """Convert inspect logs into a run folder; exit 1 when some samples had no score."""
    from prefduel.prefdisco.study.inspect_log import from_inspect

    done = from_inspect(args.logs, args.out)
    out.write(
        f"{done.folder}: {done.samples} samples of {', '.join(done.models)} converted, "
        f"{done.episodes} scored episodes in the folder\n"
    )
    for log, sample, error in done.skipped:
        out.write(f"  skipped: {log}, sample {sample}: {error}\n")
    if done.skipped:
        out.write("re-run the failed samples in inspect and convert the new log\n")
        return 1
    out.write(f"next: prefduel prefdisco report {done.folder}\n")
    return 0


def cmd_prefdisco(args: argparse.Namespace, out: Any) -> int:
    """Dispatch ``prefdisco generate|run|report|from-inspect``."""
    action = {
        "generate": cmd_generate,
        "run": cmd_run,
        "report": cmd_report,
        "from-inspect": cmd_from_inspect,
    }
    return action[args.prefdisco_action](args, out)


def _task_sources(specs: list[str], limit: int | None) -> tuple[Any, ...]:
    from prefduel.prefdisco.config import TaskSource
    from prefduel.prefdisco.errors import ConfigError

    sources = []
    for spec in specs:
        fmt, _, path = spec.partition(":")
        try:
            sources.append(TaskSource(format=fmt.strip(), path=path.strip() or None, limit=limit))
        except ConfigError as exc:
            raise ConfigError(f"--tasks {spec}: {exc}") from None
    return tuple(sources)


def _generate_config(args: argparse.Namespace) -> Any:
    """The config file (or the demo) with the flags of ``generate`` applied."""
    from prefduel.prefdisco.config import load_config
    from prefduel.prefdisco.errors import ConfigError

    config = load_config(args.config)
    overrides: dict[str, Any] = {
        name: getattr(args, attr)
        for name, attr in (
            ("seed", "seed"),
            ("personas", "personas"),
            ("personas_per_task", "per_task"),
            ("enrich", "enrich"),
            ("refine_rubrics", "refine_rubrics"),
            ("model", "model"),
        )
        if getattr(args, attr) is not None
    }
    if args.tasks:
        overrides["tasks"] = _task_sources(args.tasks, args.limit)
    elif args.limit is not None:
        overrides["tasks"] = tuple(
            dataclasses.replace(s, limit=args.limit) for s in config.generate.tasks
        )
    try:
        generate = dataclasses.replace(config.generate, **overrides)
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"generate: {exc}") from None
    return dataclasses.replace(config, generate=generate, llm=config_from_args(args, config.llm))


def cmd_generate(args: argparse.Namespace, out: Any) -> int:
    """Write the dataset folder."""
    from prefduel.prefdisco.study.pipeline import generate_from_config
    from prefduel.prefdisco.study.run_folder import calls_line

    config = _generate_config(args)
    generate = config.generate
    summary = generate_from_config(config, args.folder)
    out.write(
        f"wrote {summary.folder}: {summary.personas} personas "
        f"({summary.sampling['implausible']} implausible and {summary.sampling['too_similar']} "
        f"too similar candidates rejected), {summary.tasks} tasks, {summary.instances} "
        f"instances (hidden profiles), {summary.rubrics} rubrics\n"
    )
    if generate.enrich:
        out.write(
            f"backstories: {summary.backstories} written, {summary.backstory_failures} failed "
            "validation (recorded)\n"
        )
    if generate.refine_rubrics:
        out.write(
            f"rubrics refined by {generate.model}: {summary.refined} kept, {summary.rejected} "
            "rejected by validation (templates kept)\n"
        )
    if generate.enrich or generate.refine_rubrics:
        out.write(calls_line(summary.stats) + "\n")
    out.write(f"next: prefduel prefdisco run {summary.folder}\n")
    return 0


def _run_config(args: argparse.Namespace, dataset: Any) -> Any:
    from prefduel.prefdisco.config import load_config
    from prefduel.prefdisco.errors import ConfigError

    config = load_config(args.config) if args.config else dataset.config
    overrides = {
        name: getattr(args, attr)
        for name, attr in (
            ("models", "models"),
            ("conditions", "conditions"),
            ("strategies", "strategies"),
            ("max_turns", "max_turns"),
            ("router", "router"),
            ("user_style", "user_style"),
            ("judge_model", "judge_model"),
        )
        if getattr(args, attr) is not None
    }
    try:
        run = dataclasses.replace(config.run, **overrides)
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"run: {exc}") from None
    return dataclasses.replace(config, run=run, llm=config_from_args(args, config.llm))


def _estimate_text(estimate: dict[str, Any]) -> str:
    from prefduel.prefdisco.study.run_folder import money

    unpriced = estimate["unpriced"]
    currency = estimate["currency"]
    return (
        f"{estimate['episodes']} episodes, {estimate['to_run']} to run "
        f"({estimate['scored']} already scored); an estimated {estimate['calls']:,} calls if "
        f"every reply is well formed, at most {estimate['max_calls']:,} calls if every "
        "malformed reply is asked again; estimated cost if none are cached: "
        f"{money(estimate['cost'])} {currency} (at most {money(estimate['max_cost'])} "
        f"{currency})" + (f"; no price for {', '.join(unpriced)}" if unpriced else "") + "\n"
    )


def failure_lines(failed: Sequence[tuple[str, str]], shown: int = 5) -> list[str]:
    """One line per distinct error of the failed episodes: how many, the first episode, the
    error (which does not repeat the episode id)."""
    by_error: dict[str, list[str]] = {}
    for episode, error in failed:
        by_error.setdefault(error, []).append(episode)
    lines = []
    for error, episodes in list(by_error.items())[:shown]:
        first = episodes[0]
        which = first if len(episodes) == 1 else f"{len(episodes)} episodes ({first}, ...)"
        lines.append(f"  failed: {which}: {error}")
    if len(by_error) > shown:
        lines.append(f"  ... and {len(by_error) - shown} more errors")
    return lines


def router_line(check: Mapping[str, Any]) -> str:
    """The router a run used and how each measured router did on the labelled questions."""
    from prefduel.prefdisco.report.text import router_text

    return router_text(check)


def cmd_run(args: argparse.Namespace, out: Any) -> int:
    """Run and score every episode; print counts and costs."""
    from prefduel.prefdisco.errors import EpisodeError
    from prefduel.prefdisco.study.pipeline import estimate_run, load_dataset, run_from_config
    from prefduel.prefdisco.study.run_folder import calls_line

    dataset = load_dataset(args.folder)
    config = _run_config(args, dataset)
    folder = Path(args.out or args.folder)
    if args.dry_run:
        out.write(_estimate_text(estimate_run(dataset, config, folder)))
        return 0
    try:
        summary = run_from_config(dataset, config, folder, progress=not args.no_progress)
    except EpisodeError as exc:  # the router check's calls failed: no episode was run
        out.write(f"  failed: router check failed (no episode was run): {exc}\n{RERUN}\n")
        return 1
    out.write(
        f"{summary.folder}: {summary.episodes} episodes ({summary.reused} already scored, "
        f"{summary.ran} run now, {len(summary.failed)} failed); {summary.missing_scores} "
        "judgements missing (recorded, not filled in)\n"
    )
    out.write(router_line(summary.router) + "\n")
    out.write(calls_line(summary.stats) + "\n")
    if summary.failed:
        for line in failure_lines(summary.failed):
            out.write(line + "\n")
        out.write(RERUN + "\n")
        return 1
    out.write(f"next: prefduel prefdisco report {summary.folder}\n")
    return 0


def _report_settings(args: argparse.Namespace, folder: Path) -> Any:
    """The report section of ``--config``, else of the folder's manifest (else the defaults),
    with the flags applied."""
    from prefduel.prefdisco.config import ReportConfig, config_from_json, load_config
    from prefduel.prefdisco.errors import ConfigError, DatasetError
    from prefduel.prefdisco.store import read_json

    where = folder / "manifest.json"
    if args.config:
        base = load_config(args.config).report
    elif where.exists():
        manifest = read_json(where, what="dataset manifest")
        config = manifest.get("config") if isinstance(manifest, dict) else None
        if not isinstance(manifest, dict) or not isinstance(config, dict | None):
            raise DatasetError(
                f"dataset manifest {where}: expected a JSON object whose 'config' is an object"
            )
        base = config_from_json(config or {}, source=str(where)).report
    else:
        base = ReportConfig()
    overrides = {
        name: getattr(args, name)
        for name in ("bootstrap", "min_gap")
        if getattr(args, name) is not None
    }
    try:
        return dataclasses.replace(base, **overrides)
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"report: {exc}") from None


def cmd_report(args: argparse.Namespace, out: Any) -> int:
    """Write report.md, report.html and report.json (the folder checked before the report is
    built)."""
    from prefduel.prefdisco.report.build import build_report, load_run, write_report
    from prefduel.prefdisco.report.render import report_paths

    folder = Path(args.folder)
    rows, run = load_run(folder)
    settings = _report_settings(args, folder)
    target = args.out or folder / "report"
    report_paths(target)
    report = build_report(rows, settings, run=run)
    paths = write_report(report, target)
    for line in report_lines(report):
        out.write(line + "\n")
    out.write(f"wrote {paths['md']}, {paths['html']} and {paths['json']}\n")
    return 0


def report_lines(report: Mapping[str, Any]) -> list[str]:
    """What ``prefdisco report`` prints: per model and discovery strategy PrefAlign by
    condition and NormAlign (an undefined one with its reason) on n instances, then questions,
    disclosure, stop reasons and the follow-up change rate; warnings, the simulated user's
    style, the router, and whether the run was offline."""
    from prefduel.prefdisco.report.text import (
        OFFLINE_NOTE,
        instances_text,
        label_of,
        norm_align_text,
        router_text,
        strategy_line,
    )

    lines = []
    for m in report["models"]:
        conds = ", ".join(
            f"{c['condition']} {c['pref_align']:.2f}"
            for c in m["conditions"]
            if c["pref_align"] is not None
        )
        lines.append(
            f"{label_of(m)}: PrefAlign {conds or 'no episode scored'}; "
            f"NormAlign {norm_align_text(m['norm_align'])} ({instances_text(m)})"
        )
        if m.get("strategy"):
            lines.append(f"  {strategy_line(m)}")
        if m.get("warning"):
            lines.append(f"WARNING: {label_of(m)}: {m['warning']}")
    lines.append(f"simulated user: {report.get('user_style', 'cooperative')}")
    lines.append(router_text(report.get("router") or {}))
    if report.get("offline"):
        lines.append(OFFLINE_NOTE)
    return lines
