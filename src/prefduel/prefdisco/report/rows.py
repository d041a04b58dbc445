"""Score rows (``scores.jsonl``) and run settings (``run.json``) checked on read.

Every number the report aggregates is checked against its type, its range and the rest of
its row before it is used, so a damaged file is a named error naming file and line, never a
traceback and never a report with a number no run produced:

* the key: one row per episode id (an exact repeat is counted once with a warning, another row
  with the same id is refused naming both lines), and the id agrees with the row's model,
  condition, strategy, persona and task;
* judge scores are integers in the rubric's range (`SCORE_RANGE`) or missing (null), one per
  hidden attribute; weights are positive and sum to 1; PrefAlign is ``Σ w·score`` (null exactly
  when a score is missing); recall is the share of hidden attributes asked about;
* counts are non-negative integers with upper bounds no episode reaches (`MAX_QUESTIONS`,
  `MAX_CALLS`, `MAX_TOKENS`), costs are finite and at most `MAX_COST`;
* rows of one (persona, task) instance agree on its source, domain and hidden profile, and
  every row carries the settings digest of ``run.json``;
* ``run.json`` has its format, a digest that is the digest of its settings, and a router
  check whose chosen router is the settings' and whose rates are its counts over n.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefduel.prefdisco.config import CONDITIONS, MAX_TURNS, ROUTERS, STRATEGIES
from prefduel.prefdisco.episode.episodes import settings_digest
from prefduel.prefdisco.episode.metrics import SCORE_RANGE
from prefduel.prefdisco.errors import DatasetError
from prefduel.prefdisco.store import dumps, read_keyed_jsonl

#: More questions than any question budget allows.
MAX_QUESTIONS = MAX_TURNS
#: Calls of one episode (and counts of finish reasons) no episode reaches.
MAX_CALLS = 10**6
#: Tokens of one episode no episode reaches.
MAX_TOKENS = 10**12
#: Cost of one episode (in the price table's currency) no episode reaches.
MAX_COST = 10**6
RUN_FORMAT = "prefduel/prefdisco-run/1"
ACCURACY_METHODS = ("choice", "numeric", "exact", "grader", "none")
#: Why discovery stopped, by strategy (`prefduel.prefdisco.episode.episodes`, ``.interviewer``).
DISCOVERY_STOPS = {
    "ask": ("ready", "malformed", "max_turns"),
    "interviewer": ("min_gain", "exhausted", "max_turns"),
}
_TOLERANCE = 1e-6


_MISSING = object()


class _Row:
    """Field checks of one row; each failure names the row's place and the field."""

    def __init__(self, row: Mapping[str, Any], where: str) -> None:
        self.row = row
        self.where = where

    def fail(self, name: str, expected: str, got: Any = _MISSING) -> DatasetError:
        shown = "nothing (the field is missing)" if got is _MISSING else _shown(got)
        return DatasetError(f"{self.where}: {name}: expected {expected}, got {shown}")

    def get(self, name: str, required: bool) -> Any:
        if name not in self.row and required:
            raise self.fail(name, "a value")
        return self.row.get(name)

    def text(self, name: str, *, optional: bool = False, required: bool = True) -> str | None:
        value = self.get(name, required)
        if value is None and (optional or name not in self.row):
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(name, "a non-empty string" + (" or null" if optional else ""), value)
        return value

    def count(self, name: str, high: int, value: Any = _MISSING) -> int:
        if value is _MISSING:
            value = self.row.get(name, _MISSING)
        if not _is_int(value) or not 0 <= value <= high:
            raise self.fail(name, f"an integer from 0 to {high:,}", value)
        return int(value)

    def share(self, name: str) -> float | None:
        value = self.get(name, True)
        if value is not None and not (_is_number(value) and 0 <= value <= 1):
            raise self.fail(name, "a number from 0 to 1 or null", value)
        return value

    def strings(self, name: str, value: Any = _MISSING) -> list[str]:
        value = self.get(name, True) if value is _MISSING else value
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self.fail(name, "a list of strings", value)
        return value

    def mapping(self, name: str, *, required: bool = True) -> dict[str, Any]:
        value = self.get(name, required)
        if value is None and not required:
            return {}
        if not isinstance(value, dict):
            raise self.fail(name, "an object", value)
        return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_score_row(row: Mapping[str, Any], where: str) -> None:
    """Check every field of one score row the report reads, and their agreement.

    Raises:
        DatasetError: A field is missing, of the wrong type or out of range, or disagrees
            with the rest of the row (names ``where`` and the field).
    """
    r = _Row(row, where)
    _check_key(r)
    weights = _check_profile(r)
    _check_scores(r, weights)
    _check_discovery(r, weights)
    _check_accuracy(r)
    for name in ("errors", "asked", "disclosed"):
        r.strings(name)
    r.text("settings")
    _check_stop(r)
    calls = row.get("calls")
    if calls is not None and not (
        isinstance(calls, list) and all(isinstance(c, dict) for c in calls)
    ):
        raise r.fail("calls", "a list of objects", calls)
    _check_usage(r)


def _check_key(r: _Row) -> None:
    model = r.text("model")
    condition = r.text("condition")
    if condition not in CONDITIONS:
        raise r.fail("condition", f"one of {list(CONDITIONS)}", condition)
    strategy = r.text("strategy", optional=True, required=False)
    if condition != "discovery" and strategy is not None:
        raise r.fail("strategy", f"null outside discovery (condition {condition})", strategy)
    if strategy is not None and strategy not in STRATEGIES:
        raise r.fail("strategy", f"one of {list(STRATEGIES)} or null", strategy)
    for name in ("persona_id", "task_id", "source", "domain"):
        r.text(name)
    label = condition if strategy in (None, "ask") else f"{condition}:{strategy}"
    expected = f"{model}|{label}|{r.row['persona_id']}|{r.row['task_id']}"
    if r.row.get("episode_id") != expected:
        raise r.fail(
            "episode_id",
            f"{expected!r} (its model, condition, persona and task)",
            r.row.get("episode_id"),
        )


def _check_profile(r: _Row) -> dict[str, float]:
    weights = r.mapping("weights")
    if not weights or not all(_is_number(w) and w > 0 for w in weights.values()):
        raise r.fail("weights", "a non-empty object of numbers > 0", weights)
    total = math.fsum(weights.values())
    if abs(total - 1) > _TOLERANCE:
        raise r.fail("weights", "weights summing to 1", f"a sum of {total!r}")
    values = r.mapping("values")
    if set(values) != set(weights) or not all(isinstance(v, str) for v in values.values()):
        raise r.fail("values", f"a string for each weighted attribute {sorted(weights)}", values)
    return weights


def _check_scores(r: _Row, weights: Mapping[str, float]) -> None:
    scores = r.mapping("scores")
    if set(scores) != set(weights):
        raise r.fail(
            "scores", f"a score for each weighted attribute {sorted(weights)}", sorted(scores)
        )
    low, high = SCORE_RANGE
    for attribute, score in scores.items():
        if score is not None and not (_is_int(score) and low <= score <= high):
            raise r.fail(
                f"scores.{attribute}",
                f"an integer from {low} to {high} (the rubric's range) or null (missing)",
                score,
            )
    attempts = r.mapping("judge_attempts")
    if set(attempts) != set(weights):
        raise r.fail(
            "judge_attempts",
            f"a count for each weighted attribute {sorted(weights)}",
            sorted(attempts),
        )
    for attribute, value in attempts.items():
        r.count(f"judge_attempts.{attribute}", MAX_CALLS, value)
    align = r.get("pref_align", True)
    if any(s is None for s in scores.values()):
        if align is not None:
            raise r.fail("pref_align", "null (a judge score is missing)", align)
        return
    if not _is_number(align):
        raise r.fail("pref_align", f"a number from {low} to {high}", align)
    expected = math.fsum(w * scores[a] for a, w in weights.items())
    if abs(align - expected) > _TOLERANCE:
        raise r.fail("pref_align", f"{expected:.6f} (the weighted judge scores)", align)


def _check_discovery(r: _Row, weights: Mapping[str, float]) -> None:
    discovery = r.row["condition"] == "discovery"
    questions = r.count("questions", MAX_QUESTIONS)
    if questions and not discovery:
        raise r.fail("questions", "0 outside discovery", questions)
    asked = r.strings("asked")
    recall = r.share("recall")
    if not discovery and recall is not None:
        raise r.fail("recall", "null outside discovery", recall)
    if discovery:
        expected = len(set(weights) & set(asked)) / len(weights)
        if recall is None or abs(recall - expected) > _TOLERANCE:
            raise r.fail(
                "recall", f"{expected:.6f} (the share of hidden attributes asked about)", recall
            )
    disclosed = r.strings("disclosed")
    if not set(disclosed) <= set(weights):
        raise r.fail("disclosed", "hidden attributes of the row", disclosed)
    revealed = r.get("revealed", False)
    if revealed is not None:
        if not isinstance(revealed, list) or len(revealed) != questions:
            raise r.fail("revealed", f"a list per question ({questions})", revealed)
        for turn in revealed:
            if not set(r.strings("revealed", turn)) <= set(weights):
                raise r.fail("revealed", "hidden attributes of the row", turn)
    _check_follow_up(r)


def _check_stop(r: _Row) -> None:
    stop = r.text("stop", optional=True, required=False)
    condition = r.row["condition"]
    allowed = (
        DISCOVERY_STOPS[r.row.get("strategy") or "ask"]
        if condition == "discovery"
        else (condition,)
    )
    if stop is not None and stop not in allowed:
        raise r.fail("stop", f"one of {list(allowed)} or null", stop)


def check_transcript_row(row: Mapping[str, Any], where: str) -> None:
    """Check the fields of a stored transcript that scoring and the follow-up check read
    (the key, texts, the turns' routes and disclosures, the stop reason, the follow-up).

    Raises:
        DatasetError: A field is missing or of the wrong type (names ``where`` and the field).
    """
    r = _Row(row, where)
    _check_key(r)
    r.text("settings")
    for name in ("info", "response"):
        if not isinstance(r.get(name, True), str):
            raise r.fail(name, "text", row[name])
    _check_stop(r)
    if r.row.get("stop") is None:
        raise r.fail("stop", "why the ask phase ended", r.row.get("stop", _MISSING))
    turns = r.get("turns", True)
    if not isinstance(turns, list) or (turns and r.row["condition"] != "discovery"):
        raise r.fail("turns", "a list (empty outside discovery)", turns)
    for i, turn in enumerate(turns):
        _check_turn(_Row(turn if isinstance(turn, dict) else {}, f"{where}: turns[{i}]"), turn)
    for name in ("asks", "calls"):
        items = row.get(name)
        if items is not None and not (
            isinstance(items, list) and all(isinstance(x, dict) for x in items)
        ):
            raise r.fail(name, "a list of objects", items)
    _check_follow_up(r)
    if not isinstance(row.get("interview"), dict | None):
        raise r.fail("interview", "an object or null", row["interview"])


def _check_turn(t: _Row, turn: Any) -> None:
    if not isinstance(turn, dict):
        raise t.fail("turn", "an object", turn)
    for name in ("question", "reply"):
        if not isinstance(t.get(name, True), str):
            raise t.fail(name, "text", turn[name])
    route = t.mapping("route")
    t.strings("route.attributes", route.get("attributes", _MISSING))
    disclosures = t.get("disclosures", True)
    if not isinstance(disclosures, list) or not all(
        isinstance(d, dict) and isinstance(d.get("attribute"), str) and "value" in d
        for d in disclosures
    ):
        raise t.fail("disclosures", "a list of objects with an attribute and a value", disclosures)


def _check_follow_up(r: _Row) -> None:
    follow_up = r.get("follow_up", False)
    if follow_up is not None and not (
        isinstance(follow_up, dict) and isinstance(follow_up.get("changed"), bool)
    ):
        raise r.fail("follow_up", "null or an object with a true/false 'changed'", follow_up)


def _check_accuracy(r: _Row) -> None:
    method = r.get("accuracy_method", True)
    if method not in ACCURACY_METHODS:
        raise r.fail("accuracy_method", f"one of {list(ACCURACY_METHODS)}", method)
    correct = r.get("correct", True)
    if correct is not None and not isinstance(correct, bool):
        raise r.fail("correct", "true, false or null", correct)
    if (correct is None) != (method == "none"):
        raise r.fail(
            "correct", f"null exactly when accuracy_method is 'none' (it is {method!r})", correct
        )
    r.text("extracted", optional=True)


def _check_usage(r: _Row) -> None:
    usage = r.mapping("usage", required=False)
    if usage:
        r.count("usage.calls", MAX_CALLS, usage.get("calls", _MISSING))
        for name in ("prompt_tokens", "completion_tokens"):
            r.count(f"usage.{name}", MAX_TOKENS, usage.get(name, _MISSING))
        cost = usage.get("cost", _MISSING)
        if not (_is_number(cost) and 0 <= cost <= MAX_COST):
            raise r.fail("usage.cost", f"a number from 0 to {MAX_COST:,}", cost)
    reasons = r.mapping("finish_reasons", required=False)
    for role, counts in reasons.items():
        if not isinstance(counts, dict):
            raise r.fail(f"finish_reasons.{role}", "an object of counts", counts)
        for reason, n in counts.items():
            r.count(f"finish_reasons.{role}.{reason}", MAX_CALLS, n)


def load_scores(
    path: str | Path, *, digest: str | None = None, allow_torn_tail: bool = True
) -> list[dict[str, Any]]:
    """The score rows of a run folder's ``scores.jsonl``, every row checked
    (`check_score_row`), one row per episode, rows of one instance in agreement.

    Args:
        path: The file.
        digest: The run's settings digest (``run.json``); every row must carry it (None:
            every row must carry the first row's).
        allow_torn_tail: Leave out a last line cut by an interrupted run (with a warning).

    Raises:
        DatasetError: A row fails its checks, two rows share an episode id with other
            content, two rows of one instance disagree, or a row carries other settings.
    """
    rows = []
    instances: dict[tuple[str, str], tuple[int, str]] = {}
    what = "score file"
    for number, row in read_keyed_jsonl(
        path, ("episode_id",), what=what, allow_torn_tail=allow_torn_tail
    ):
        where = f"{what} {path}, line {number}"
        check_score_row(row, where)
        if digest is None:
            digest = row["settings"]
        if row["settings"] != digest:
            raise DatasetError(
                f"{where}: made with settings {row['settings']}, but run.json records "
                f"{digest}; the row comes from another run: remove it or use that run's folder"
            )
        instance = (row["persona_id"], row["task_id"])
        profile = dumps({k: row[k] for k in ("source", "domain", "weights", "values")})
        first = instances.setdefault(instance, (number, profile))
        if first[1] != profile:
            raise DatasetError(
                f"{where}: instance {'|'.join(instance)} has another source, domain or hidden "
                f"profile than on line {first[0]}; one of the rows was altered"
            )
        rows.append(row)
    return rows


def check_run_record(run: Any, where: str) -> dict[str, Any]:
    """Check what the report reads of ``run.json``: its format, settings and their digest,
    and the router check (setting, chosen router, each router's counts and rates).

    Raises:
        DatasetError: A part is missing, of the wrong type or out of range, or disagrees with
            another (the digest with the settings, a rate with its counts; names ``where``).
    """
    if not isinstance(run, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(run).__name__}")
    r = _Row(run, where)
    if run.get("format") != RUN_FORMAT:
        raise r.fail("format", repr(RUN_FORMAT), run.get("format", _MISSING))
    settings = r.mapping("settings")
    digest = r.text("digest")
    if digest != settings_digest(settings):
        raise r.fail(
            "digest", f"{settings_digest(settings)!r} (the digest of its settings)", digest
        )
    s = _Row(settings, f"{where}: settings")
    s.text("user_style", optional=True, required=False)
    router = s.text("router", optional=True, required=False)
    backends = s.mapping("backends", required=False)
    if not all(isinstance(v, str) for v in backends.values()):
        raise s.fail("backends", "an object of strings", backends)
    if "router_check" in run:
        _check_router_check(_Row(r.mapping("router_check"), f"{where}: router_check"), router)
    return run


def _check_router_check(c: _Row, router: str | None) -> None:
    setting = c.get("setting", True)
    if setting not in ROUTERS:
        raise c.fail("setting", f"one of {list(ROUTERS)}", setting)
    chosen = c.get("chosen", True)
    if chosen not in ("keyword", "llm") or (router is not None and chosen != router):
        raise c.fail("chosen", f"the router of the settings ({router!r})", chosen)
    questions = c.count("questions", MAX_CALLS)
    for name, measured in c.mapping("routers").items():
        if not isinstance(measured, dict):
            raise c.fail(f"routers.{name}", "an object", measured)
        m = _Row(measured, f"{c.where}: routers.{name}")
        if measured.get("router") != name:
            raise m.fail("router", repr(name), measured.get("router", _MISSING))
        model = m.text("model", optional=True, required=False)
        if (model is None) != (name == "keyword"):
            raise m.fail("model", "null for the keyword router, a name for the LLM one", model)
        n = m.count("n", questions)
        if n != questions:
            raise m.fail("n", f"{questions} (the labelled questions)", n)
        for count, rate in (("correct", "accuracy"), ("misrouted", "misroute_rate")):
            part = m.count(count, n)
            expected = round(part / n, 4) if n else None
            if m.get(rate, True) != expected:
                raise m.fail(rate, f"{expected} ({count} / n)", measured[rate])
        m.count("unrouted", n)


__all__ = [
    "ACCURACY_METHODS",
    "MAX_CALLS",
    "MAX_COST",
    "MAX_QUESTIONS",
    "MAX_TOKENS",
    "RUN_FORMAT",
    "check_run_record",
    "check_score_row",
    "check_transcript_row",
    "load_scores",
]
