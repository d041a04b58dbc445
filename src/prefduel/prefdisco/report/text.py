"""The sentences of the PrefDisco report: shares, NormAlign, the router, each entry's name,
questions, disclosure, stop reasons and follow-up changes, and the summary bullet list.

Shared by the report page (`prefduel.prefdisco.report.render`) and what ``prefdisco report``
prints. An undefined NormAlign always prints as ``undefined (<why>)`` (`norm_align_text`),
never as an empty or bare value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prefduel.core.document import number

_NO_COMPLETE_INSTANCE = "no instance scored in all three conditions"


def share(value: float | None) -> str:
    """A 0-1 share as a percentage with one decimal (``27.3%``), `NO_VALUE` if missing."""
    return number(None if value is None else 100 * value, 1, suffix="%")


def _points(value: float | None) -> str:
    """A difference of two shares in percentage points (``-25.0 points``)."""
    return number(None if value is None else 100 * value, 1, sign=True, suffix=" points")


def norm_align_text(group: Mapping[str, Any]) -> str:
    """NormAlign of a report group: ``18.6 [-5.8, 40.1]``, ``0.0`` (no interval) or
    ``undefined (<why>)``.

    Args:
        group: A NormAlign summary of the report (``norm_align``, ``lo``, ``hi``, ``n``,
            ``note``).
    """
    value = group.get("norm_align")
    if value is None:
        if not group.get("n"):
            return f"undefined ({_NO_COMPLETE_INSTANCE})"
        return f"undefined ({group.get('note') or 'oracle - baseline below min_gap'})"
    if group.get("lo") is None or group.get("hi") is None:
        return number(value, 1)
    return f"{number(value, 1)} [{number(group['lo'], 1)}, {number(group['hi'], 1)}]"


# -- summary -----------------------------------------------------------------------------------


def _negative_shares(task_share: float | None, instance_share: float | None) -> str:
    tasks = (
        f"{share(task_share)} of tasks"
        if task_share is not None
        else "an undefined share of tasks (no task has a defined NormAlign)"
    )
    instances = (
        f"{share(instance_share)} of instances"
        if instance_share is not None
        else "an undefined share of instances (no instance has oracle - baseline >= min_gap)"
    )
    return f"negative NormAlign in {tasks} and {instances}"


def _trend_text(trend: Mapping[str, Any]) -> str:
    if trend["slope"] is not None:
        return (
            f"questions vs gain r = {number(trend['r'], 2)}, slope {number(trend['slope'], 3)} "
            "per question"
        )
    if not trend["n"]:
        return f"questions vs gain undefined ({_NO_COMPLETE_INSTANCE})"
    return "the same number of questions in every episode"


OFFLINE_NOTE = (
    "Offline run: the models under test are scripted (their answers state their style on a "
    "line the scripted judge reads), so these numbers test the pipeline, not a model."
)


def router_text(check: Mapping[str, Any]) -> str:
    """The router a run used and each measured router's accuracy and misroute rate on the
    labelled questions (``run.json``'s router check)."""
    chosen = check.get("chosen")
    if not chosen:
        return "router: not recorded (a run.json without a router check)"
    routers = check.get("routers") or {}
    how = "auto; " if check.get("setting") == "auto" else ""
    if chosen not in routers:
        return f"router: {chosen} ({how}misroute rate not measured)"
    parts = []
    for name, m in routers.items():
        model = f" ({m['model']})" if m.get("model") else ""
        parts.append(
            f"{name}{model} accuracy {share(m['accuracy'])}, misroute rate "
            f"{share(m['misroute_rate'])}"
        )
    return (
        f"router: {chosen} ({how}on {check.get('questions', 0)} labelled questions: "
        + "; ".join(parts)
        + ")"
    )


NO_QUESTIONS = "none (no discovery)"


def label_of(model: Mapping[str, Any]) -> str:
    """The name of a report entry (``model`` or ``model + interviewer``; older reports: the
    model)."""
    return str(model.get("label") or model["model"])


def stops_text(model: Mapping[str, Any]) -> str:
    """Why discovery stopped, counted (``max_turns 30, min_gain 6``)."""
    stops = (model.get("ask_phase") or {}).get("stops") or {}
    return ", ".join(f"{k} {v}" for k, v in stops.items()) or "none"


def follow_up_text(model: Mapping[str, Any]) -> str:
    """The follow-up change rate with its n (``61.1% of 36``), or why there is none."""
    check = (model.get("ask_phase") or {}).get("follow_up") or {}
    if not check.get("n"):
        return "not measured"
    return f"{share(check['rate'])} of {check['n']}"


def strategy_line(model: Mapping[str, Any]) -> str:
    """Questions, disclosure, stops and follow-up changes of one entry, in one line."""
    ask = model.get("ask_phase") or {}
    disc = next((c for c in model["conditions"] if c["condition"] == "discovery"), None)
    questions = number(disc["questions"], 2) if disc else NO_QUESTIONS
    return (
        f"questions {questions} per episode; hidden preferences disclosed "
        f"{share(ask.get('disclosed_share'))}; stopped: {stops_text(model)}; follow-up "
        f"changes when the first reply is altered: {follow_up_text(model)}"
    )


def accuracy_note(offline: bool) -> str:
    """What the per-condition table's accuracy column measures, and why the oracle, the best
    aligned condition, can score lower on it."""
    note = (
        "accuracy: share of episodes whose final answer to the task is right (checked against "
        "the task's reference answer by rule, or by the grader model when the rules cannot "
        "decide; n: the episodes decided). It measures correctness, not how well the answer "
        "fits the user, so the oracle can score below the baseline: the oracle is told every "
        "hidden preference, and an answer reshaped to them (shorter, less step by step, "
        "another format) can get the task wrong more often."
    )
    if offline:
        note += (
            " In this offline run the scripted model is built to be right less often the more "
            "preferences it is told (it simulates that cost), so a lower oracle accuracy is "
            "expected here."
        )
    return note


def instances_text(model: Mapping[str, Any]) -> str:
    """How many instances NormAlign rests on, out of the model's instances."""
    n = model["norm_align"]["n"]
    total = model.get("instances", n)
    return f"n = {n} of {total} instance{'s' if total != 1 else ''}"


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """The run's router and user, one sentence per model (with a warning when judge failures
    dropped too many instances), then one over all models (the report's bullet list)."""
    lines = [
        router_text(report.get("router") or {}) + ".",
        f"simulated user: {report.get('user_style', 'cooperative')}.",
    ]
    for m in report["models"]:
        q = m["questions"]
        lines.append(
            f"{label_of(m)}: NormAlign {norm_align_text(m['norm_align'])}; "
            f"{_negative_shares(m['negative_task_share'], q['negative_instance_share'])}; "
            f"{_trend_text(q['trend'])}; task accuracy oracle - baseline "
            f"{_points(m['accuracy_change'])}; scoring errors {m['error_count']}; "
            f"{instances_text(m)}."
        )
        if m.get("warning"):
            lines.append(f"WARNING: {label_of(m)}: {m['warning']}.")
    t = report["questions_trend"]
    cells = (
        f"Negative NormAlign in {share(report['negative_cell_share'])} of {report['cells']} "
        "model x task cells"
        if report["negative_cell_share"] is not None
        else "Negative NormAlign share undefined (no model x task cell has a defined NormAlign)"
    )
    lines.append(
        f"{cells}; over all models, questions asked vs PrefAlign gain: r = {number(t['r'], 2)} "
        f"(p = {number(t['p'], 4)}, n = {t['n']}), slope {number(t['slope'], 3)} per question."
    )
    return lines


__all__ = [
    "NO_QUESTIONS",
    "OFFLINE_NOTE",
    "accuracy_note",
    "follow_up_text",
    "instances_text",
    "label_of",
    "norm_align_text",
    "router_text",
    "share",
    "stops_text",
    "strategy_line",
    "summary_lines",
]
