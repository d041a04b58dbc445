"""The reference sections that close the personalized-rankings report: what was read, every
skipped row and caveat, the analysis' messages and every setting.

`prefduel.ranking.report_sections.report_document` puts them after the findings: a reader
checks here what the numbers above rest on.
"""

from __future__ import annotations

import json
from typing import Any

from prefduel.core.document import Items, Section, Settings, Table, number
from prefduel.ranking.battles import NOTE_REASONS, SKIP_REASONS

_SKIP_TEXT = {
    "non_utf8": "lines with invalid UTF-8 (--encoding-errors skip)",
    "missing_model": "model_a or model_b missing",
    "missing_winner": "winner missing",
    "unknown_winner": "unknown winner label (--unknown-winner skip)",
    "self_battle": "self-battle (model_a == model_b)",
    "empty_user": "user id missing or empty",
    "bothbad": "both-bad vote (--bothbad skip)",
    "duplicate": "copy of an earlier row: same user, models, winner, prompt and timestamp "
    "(the first kept)",
    "rare_model": "battle of a model with fewer than --min-model-battles battles",
}
_NOTE_TEXT = {
    "non_utf8_repaired": "invalid UTF-8 replaced by U+FFFD (kept)",
    "missing_time": "no timestamp (kept, ordered after timed rows)",
    "missing_prompt": "no prompt text (kept for ratings, not in features)",
    "bothbad_as_tie": "both-bad vote counted as a tie (--bothbad tie)",
    "duplicate_untimed": "repeats an earlier row, neither with a timestamp (kept: a repeated "
    "vote cannot be told from a copy)",
}
_USER_CAVEATS = {
    "battles_of_users_below_min_votes": "battles of those users",
    "bt_fallback_to_ridge": "analysed users whose BT MLE does not exist (ridge used)",
    "bt_no_mle": "analysed users whose BT MLE does not exist (whatever the BT mode)",
    "undefined_rho_elo": "analysed users with an undefined Elo correlation",
    "undefined_rho_bt": "analysed users with an undefined BT correlation",
    "analysed_without_prompts": "analysed users without prompts (not in features)",
}


def input_section(inp: dict[str, Any]) -> Section:
    """What was read: source, row and battle counts, ordering, prompts."""
    rows = [
        ["source", inp["source"]],
        ["rows read", str(inp["rows_read"])],
        ["battles kept", str(inp["battles"])],
        ["rows skipped", str(inp["skipped_total"])],
        ["models", str(inp["models"])],
        ["users", str(inp["users"])],
        ["ties", str(inp["ties"])],
        ["ordered by", "timestamp" if inp["has_time"] else "file order"],
        ["prompts", "yes" if inp["has_prompts"] else "no"],
    ]
    return Section("Input", [Table(["", "value"], rows, key="input")])


def caveats_section(data: dict[str, Any]) -> Section:
    """Every skipped row, every kept-with-note row and every user-level caveat, counted."""
    inp, users = data["input"], data["users"]
    rows = [
        ["skipped", k, _SKIP_TEXT.get(k, k), str(inp["skipped"].get(k, 0))] for k in SKIP_REASONS
    ]
    rows += [
        ["kept with note", k, _NOTE_TEXT.get(k, k), str(inp["notes"].get(k, 0))]
        for k in NOTE_REASONS
    ]
    below = (
        f"users with fewer than {data['config']['min_votes']} votes "
        "(left out of per-user analysis; their battles count globally)"
    )
    caveats = {"below_min_votes": below, **_USER_CAVEATS}
    rows += [["users", k, text, str(users.get(k, 0))] for k, text in caveats.items()]
    table = Table(["kind", "reason", "meaning", "count"], rows, key="caveats")
    return Section("Every skip and caveat", [table])


def message_sections(messages: list[str]) -> list[Section]:
    """The analysis' messages (fallbacks, omitted steps), if any."""
    return [Section("Messages", [Items(list(messages))])] if messages else []


def settings_section(data: dict[str, Any]) -> Section:
    """Every setting (as JSON), the package version, the command line and the stage timings."""
    pairs = [(k, json.dumps(v)) for k, v in data["config"].items()]
    pairs.append(("prefduel", data["prefduel_version"]))
    if data.get("command"):
        pairs.append(("command", data["command"]))
    pairs += [(f"time: {k}", number(v, 2, suffix=" s")) for k, v in data["timings_s"].items()]
    return Section("Settings", [Settings(pairs)])


__all__ = ["caveats_section", "input_section", "message_sections", "settings_section"]
