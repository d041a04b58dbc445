"""The PrefDisco report data: per-condition tables, NormAlign by task and by attribute,
questions vs alignment, accuracy, discovery recall, as one JSON-ready ``dict``.

`build_report` turns the score rows of a run folder into the report data (``report.json``);
`write_report` (`prefduel.prefdisco.report.render`, re-exported here) writes it with
``report.md``, ``report.html`` (one self-contained page: inline CSS and SVG, no network) and
``figures/*.svg``. Everything is deterministic in the rows and the `ReportConfig`.

Definitions (per model and discovery strategy: one entry per ``(model, strategy)`` whose
discovery rows the folder holds, ``label`` the model for ``ask`` and ``model + interviewer``
for the interviewer; baseline and oracle rows are the model's, shared by its strategies):

* **PrefAlign** per condition: mean ± s.e. over scored episodes (1-5).
* **NormAlign** = 100 (mean disc - mean base) / (mean oracle - mean base) over the instances
  scored in all three conditions, with a paired bootstrap interval; undefined when the oracle
  does not beat the baseline by ``min_gap`` (see `prefduel.prefdisco.episode.metrics`).
  *By task* groups instances by the task source (benchmark); *by attribute* uses that
  attribute's judge scores over the instances where it is hidden.
* **Negative share**: share of task groups with NormAlign < 0 (the paper's statistic), and
  share of instances (with oracle - baseline >= min_gap) whose discovery PrefAlign is below
  the baseline.
* **Questions vs alignment**: per number of questions asked, the mean gain discovery -
  baseline; Pearson r and slope (alignment gained per question).
* **Dropped instances**: instances left out of NormAlign because a judgement is missing; above
  ``warn_dropped`` of a model's instances the headline warns.
* **Cost**: calls, tokens and cost per condition (every call of the episode and its scoring,
  priced from its tokens, cached answers included); **ask phase**: why discovery stopped,
  finish reasons per role, how many user replies disclosed a hidden preference, the share of
  hidden preferences disclosed (a value, or a vague user's hint at it) and the **follow-up
  change rate**: the share of discovery episodes whose second question changes topic when
  the first reply is altered (`prefduel.prefdisco.episode.follow_up`), with its n.
* **Router**: the simulated user's router and its accuracy and misroute rate on the labelled
  questions (`prefduel.prefdisco.episode.router_check`), from ``run.json``; **offline**: whether the
  models under test ran on the scripted backend (then the report tests the pipeline, not a
  model).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prefduel.prefdisco.config import CONDITIONS, STRATEGIES, ReportConfig
from prefduel.prefdisco.episode.metrics import mean_se, norm_align, norm_align_ci, trend
from prefduel.prefdisco.errors import DatasetError
from prefduel.prefdisco.report.render import (
    build_document,
    norm_align_text,
    render_html,
    render_markdown,
    write_report,
)
from prefduel.prefdisco.report.rows import check_run_record, load_scores
from prefduel.prefdisco.store import read_json

REPORT_FORMAT = "prefduel/prefdisco-report/1"


def load_run(folder: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Score rows and run settings of a run folder.

    Every row is checked (`prefduel.prefdisco.report.rows.load_scores`: types, ranges, PrefAlign
    against the judge scores, one row per episode, the settings digest of ``run.json``).

    Raises:
        DatasetError: ``scores.jsonl`` or ``run.json`` is missing or malformed (names file
            and line).
    """
    root = Path(folder)
    where = root / "run.json"
    run = check_run_record(read_json(where, what="run settings"), f"run settings {where}")
    rows = load_scores(root / "scores.jsonl", digest=run.get("digest"))
    if not rows:
        raise DatasetError(f"{root / 'scores.jsonl'} has no scored episodes; run prefdisco run")
    return rows, run


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(float(x), nd)


def _instances(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(persona, task) -> condition -> row, for one model."""
    out: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for row in rows:
        out[(row["persona_id"], row["task_id"])][row["condition"]] = row
    return out


def _complete(instances: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Instances with PrefAlign in all three conditions."""
    return [
        dict(conds)
        for _, conds in sorted(instances.items())
        if all(c in conds and conds[c].get("pref_align") is not None for c in CONDITIONS)
    ]


def _summary(
    triples: Sequence[tuple[float, float, float]], config: ReportConfig, label: str
) -> dict[str, Any]:
    d = [t[0] for t in triples]
    b = [t[1] for t in triples]
    o = [t[2] for t in triples]
    s = norm_align_ci(
        d,
        b,
        o,
        min_gap=config.min_gap,
        n_boot=config.bootstrap,
        level=config.level,
        seed=config.seed,
        label=label,
    )
    return {
        "n": s.n,
        "baseline": _r(s.baseline),
        "discovery": _r(s.discovery),
        "oracle": _r(s.oracle),
        "norm_align": _r(s.value, 2),
        "lo": _r(s.lo, 2),
        "hi": _r(s.hi, 2),
        "valid_share": _r(s.valid_share),
        "note": s.reason,
    }


def _condition_table(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    table = []
    for condition in CONDITIONS:
        mine = [r for r in rows if r["condition"] == condition]
        if not mine:
            continue
        align_mean, align_se = mean_se([r["pref_align"] for r in mine])
        decided = [r["correct"] for r in mine if r.get("correct") is not None]
        acc = sum(decided) / len(decided) if decided else None
        q_mean, _ = mean_se([r["questions"] for r in mine])
        recalls = [r["recall"] for r in mine if r.get("recall") is not None]
        rec_mean, _ = mean_se(recalls)
        table.append(
            {
                "condition": condition,
                "episodes": len(mine),
                "scored": sum(1 for r in mine if r.get("pref_align") is not None),
                "pref_align": _r(align_mean),
                "pref_align_se": _r(align_se),
                "accuracy": _r(acc),
                "accuracy_n": len(decided),
                "graded_by_llm": sum(1 for r in mine if r.get("accuracy_method") == "grader"),
                "questions": _r(q_mean, 2),
                "recall": _r(rec_mean) if recalls else None,
                "missing_scores": sum(
                    1 for r in mine for s in (r.get("scores") or {}).values() if s is None
                ),
            }
        )
    return table


def _grouped(
    complete: Sequence[Mapping[str, Any]], key: str, config: ReportConfig, model: str
) -> list[dict[str, Any]]:
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for inst in complete:
        groups[inst["baseline"][key]].append(
            (
                inst["discovery"]["pref_align"],
                inst["baseline"]["pref_align"],
                inst["oracle"]["pref_align"],
            )
        )
    return [
        {key: name, **_summary(triples, config, f"{model}|{key}|{name}")}
        for name, triples in sorted(groups.items())
    ]


def _by_attribute(
    instances: Mapping[tuple[str, str], Mapping[str, Any]], config: ReportConfig, model: str
) -> list[dict[str, Any]]:
    groups: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    asked: dict[str, list[bool]] = defaultdict(list)
    for _, conds in sorted(instances.items()):
        if "discovery" in conds:
            disc = conds["discovery"]
            for attr in disc["weights"]:
                asked[attr].append(attr in (disc.get("asked") or []))
        if not all(c in conds for c in CONDITIONS):
            continue
        for attr in conds["baseline"]["weights"]:
            s = [conds[c]["scores"].get(attr) for c in ("discovery", "baseline", "oracle")]
            if all(x is not None for x in s):
                groups[attr].append((float(s[0]), float(s[1]), float(s[2])))
    out = []
    for attr in sorted(set(groups) | set(asked)):
        summary = _summary(groups.get(attr, []), config, f"{model}|attribute|{attr}")
        flags = asked.get(attr, [])
        summary["asked_share"] = _r(sum(flags) / len(flags)) if flags else None
        out.append({"attribute": attr, **summary})
    return out


def _questions(complete: Sequence[Mapping[str, Any]], config: ReportConfig) -> dict[str, Any]:
    by_q: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    xs, gains = [], []
    negative = valid = 0
    for inst in complete:
        d, b, o = (inst[c]["pref_align"] for c in ("discovery", "baseline", "oracle"))
        q = int(inst["discovery"]["questions"])
        by_q[q].append(inst)
        xs.append(q)
        gains.append(d - b)
        if norm_align(d, b, o, min_gap=config.min_gap) is not None:
            valid += 1
            negative += d < b
    table = []
    for q in sorted(by_q):
        items = by_q[q]
        gain, gain_se = mean_se(
            [i["discovery"]["pref_align"] - i["baseline"]["pref_align"] for i in items]
        )
        recall, _ = mean_se([i["discovery"].get("recall") for i in items])
        table.append(
            {
                "questions": q,
                "n": len(items),
                "gain": _r(gain),
                "gain_se": _r(gain_se),
                "recall": _r(recall),
            }
        )
    t = trend(xs, gains)
    return {
        "by_questions": table,
        "trend": {"n": t.n, "r": _r(t.r), "slope": _r(t.slope), "p": _r(t.p, 4)},
        "points": [{"questions": x, "gain": _r(g)} for x, g in zip(xs, gains, strict=True)],
        "negative_instances": negative,
        "instances_with_gap": valid,
        "negative_instance_share": _r(negative / valid) if valid else None,
    }


def _dropped(
    instances: Mapping[tuple[str, str], Mapping[str, Any]], n: int, config: ReportConfig
) -> dict[str, Any]:
    """Instances left out because a judgement is missing, and the headline's warning."""
    total = len(instances)
    dropped = sum(
        any(row.get("pref_align") is None for row in conds.values()) for conds in instances.values()
    )
    share_dropped = dropped / total if total else 0.0
    warning = None
    if dropped and share_dropped > config.warn_dropped:
        warning = (
            f"{dropped} of {total} instances ({100 * share_dropped:.1f}%) are left out because "
            f"a judgement is missing; NormAlign rests on the other {n} (threshold "
            f"{100 * config.warn_dropped:.0f}%)"
        )
    return {"instances": total, "dropped": dropped, "warning": warning}


def _usage(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Calls, tokens and cost per condition, from the rows that recorded their usage."""
    table = []
    for condition in CONDITIONS:
        mine = [r for r in rows if r["condition"] == condition and r.get("usage")]
        if not mine:
            continue
        total = {k: sum(r["usage"].get(k) or 0 for r in mine) for k in _USAGE_KEYS}
        table.append(
            {
                "condition": condition,
                "episodes": len(mine),
                **total,
                "cost": round(total["cost"], 9),
                "cost_per_episode": round(total["cost"] / len(mine), 9),
                "calls_per_episode": _r(total["calls"] / len(mine), 2),
            }
        )
    return table


_USAGE_KEYS = ("calls", "prompt_tokens", "completion_tokens", "cost")


def _ask_phase(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Why discovery stopped, finish reasons per role, replies that disclosed something."""
    stops = Counter(str(r["stop"]) for r in rows if r["condition"] == "discovery" and r.get("stop"))
    finish: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        for role, reasons in (row.get("finish_reasons") or {}).items():
            finish[role].update(reasons)
    discovery = [r for r in rows if r["condition"] == "discovery"]
    replies = [list(t) for r in discovery for t in r.get("revealed") or []]
    hidden = sum(len(r.get("weights") or {}) for r in discovery)
    disclosed = sum(len(r.get("disclosed") or []) for r in discovery)
    checks = [bool(r["follow_up"]["changed"]) for r in discovery if r.get("follow_up")]
    return {
        "stops": dict(sorted(stops.items())),
        "finish_reasons": {role: dict(sorted(c.items())) for role, c in sorted(finish.items())},
        "replies": len(replies),
        "revealing_replies": sum(1 for t in replies if t),
        "revealed": sum(len(t) for t in replies),
        "hidden": hidden,
        "disclosed": disclosed,
        "disclosed_share": _r(disclosed / hidden) if hidden else None,
        "follow_up": {
            "n": len(checks),
            "changed": sum(checks),
            "rate": _r(sum(checks) / len(checks)) if checks else None,
        },
    }


def _strategy(row: Mapping[str, Any]) -> str:
    """A discovery row's strategy (rows of older runs: ``ask``)."""
    return str(row.get("strategy") or "ask")


def _entries(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str | None, list[Any]]]:
    """``(model, strategy, rows)`` per model and discovery strategy (in `STRATEGIES` order;
    strategy None for a model without discovery rows); each entry holds the model's
    baseline and oracle rows and the discovery rows of its strategy."""
    out: list[tuple[str, str | None, list[Any]]] = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        shared = [r for r in mine if r["condition"] != "discovery"]
        found = {_strategy(r) for r in mine if r["condition"] == "discovery"}
        strategies = [x for x in STRATEGIES if x in found] + sorted(found - set(STRATEGIES))
        if not strategies:
            out.append((model, None, shared))
        for strategy in strategies:
            disc = [r for r in mine if r["condition"] == "discovery" and _strategy(r) == strategy]
            out.append((model, strategy, shared + disc))
    return out


def entry_label(model: str, strategy: str | None) -> str:
    """How the report names a (model, strategy) entry: the model for ``ask`` (the paper's
    discovery condition), ``model + strategy`` otherwise."""
    return model if strategy in (None, "ask") else f"{model} + {strategy}"


def _model_report(
    model: str, strategy: str | None, mine: Sequence[Mapping[str, Any]], config: ReportConfig
) -> dict[str, Any]:
    """The report of one (model, strategy) entry from its score rows."""
    label = entry_label(model, strategy)
    instances = _instances(mine)
    complete = _complete(instances)
    triples = [
        (i["discovery"]["pref_align"], i["baseline"]["pref_align"], i["oracle"]["pref_align"])
        for i in complete
    ]
    by_task = _grouped(complete, "source", config, label)
    defined = [g for g in by_task if g["norm_align"] is not None]
    base_acc = [r["correct"] for r in mine if r["condition"] == "baseline"]
    oracle_acc = [r["correct"] for r in mine if r["condition"] == "oracle"]
    return {
        "model": model,
        "strategy": strategy,
        "label": label,
        "conditions": _condition_table(mine),
        "norm_align": _summary(triples, config, f"{label}|all"),
        "by_task": by_task,
        "by_domain": _grouped(complete, "domain", config, label),
        "by_attribute": _by_attribute(instances, config, label),
        "negative_task_share": (
            _r(sum(g["norm_align"] < 0 for g in defined) / len(defined)) if defined else None
        ),
        "questions": _questions(complete, config),
        "accuracy_change": _accuracy_change(base_acc, oracle_acc),
        "errors": sorted({e for r in mine for e in (r.get("errors") or [])})[:50],
        "error_count": sum(len(r.get("errors") or []) for r in mine),
        **_dropped(instances, len(complete), config),
        "usage": _usage(mine),
        "ask_phase": _ask_phase(mine),
    }


def build_report(
    rows: Sequence[Mapping[str, Any]],
    config: ReportConfig | None = None,
    *,
    run: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Aggregate score rows into the report (a JSON-ready ``dict``).

    Args:
        rows: Score rows (``scores.jsonl``).
        config: Report settings.
        run: The run settings (``run.json``), copied into the report.

    Raises:
        DatasetError: No rows, or a row lacks a field.
    """
    config = config or ReportConfig()
    if not rows:
        raise DatasetError("no score rows to report on")
    needed = {"model", "condition", "persona_id", "task_id", "source", "pref_align", "scores"}
    for i, row in enumerate(rows):
        missing = needed - set(row)
        if missing:
            raise DatasetError(f"score row {i + 1} lacks {sorted(missing)}")
    out: dict[str, Any] = {
        "format": REPORT_FORMAT,
        "settings": dict(config.__dict__),
        "run": dict(run or {}),
        "models": [],
    }
    for model, strategy, mine in _entries(rows):
        out["models"].append(_model_report(model, strategy, mine, config))
    pooled = [p for m in out["models"] for p in m["questions"]["points"]]
    t = trend([p["questions"] for p in pooled], [p["gain"] for p in pooled])
    out["questions_trend"] = {"n": t.n, "r": _r(t.r), "slope": _r(t.slope), "p": _r(t.p, 4)}
    cells = [g for m in out["models"] for g in m["by_task"] if g["norm_align"] is not None]
    out["negative_cell_share"] = (
        _r(sum(g["norm_align"] < 0 for g in cells) / len(cells)) if cells else None
    )
    out["cells"] = len(cells)
    out.update(_run_facts(run or {}))
    return out


def _run_facts(run: Mapping[str, Any]) -> dict[str, Any]:
    """What the report says about the run as a whole: router, user, offline or not."""
    settings = run.get("settings") or {}
    backends = settings.get("backends") or {}
    return {
        "router": dict(run.get("router_check") or {"chosen": settings.get("router")}),
        "user_style": settings.get("user_style", "cooperative"),
        "offline": backends.get("model") == "scripted" if backends else None,
    }


def _accuracy_change(base: Sequence[bool | None], oracle: Sequence[bool | None]) -> float | None:
    b = [x for x in base if x is not None]
    o = [x for x in oracle if x is not None]
    if not b or not o:
        return None
    return _r(sum(o) / len(o) - sum(b) / len(b))


__all__ = [
    "REPORT_FORMAT",
    "build_document",
    "build_report",
    "entry_label",
    "load_run",
    "norm_align_text",
    "render_html",
    "render_markdown",
    "write_report",
]
