"""Policy labels of a report: short names for the page, shorter ones where figures need them.

A result row names its policy by its canonical spec, which for a user policy is a path
(``examples/my_policy.py:RaterWithWins:weight=3``). The page shows
`prefduel.policies.loading.display_names` instead (``rater-with-wins:weight=3``), distinct for
every spec; figures cut a label that is still too long for a tick or a legend entry with an
ellipsis in the middle (`fit_labels`), keeping both ends, where names and settings differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from prefduel.policies.loading import display_names

ELLIPSIS = "…"
#: Characters of a label (per line) on the heatmap's rotated x ticks, the forest's y ticks
#: and in legends.
TICK_WIDTH = 18
ROW_WIDTH = 34
LEGEND_WIDTH = 34


def report_labels(policies: Iterable[str]) -> dict[str, str]:
    """``{spec: label}`` of every policy and reference a report shows (labels distinct)."""
    return display_names(policies)


def ellipsize(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters by an ellipsis in the middle (whole if it fits)."""
    if len(text) <= width:
        return text
    width = max(width, 3)
    head = width // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


def wrap_label(text: str, width: int) -> str:
    """``name:settings`` on two lines (name, then settings), each ellipsized to ``width``.

    A label without settings, or short enough, stays on one line.
    """
    name, sep, settings = text.partition(":")
    if len(text) <= width or not sep or not name:
        return ellipsize(text, width)
    return ellipsize(name, width) + "\n" + ellipsize(settings, width)


def fit_labels(names: Iterable[str], width: int, *, wrap: bool = False) -> dict[str, str]:
    """``{name: label}``: each name ellipsized to ``width`` (on two lines if ``wrap``), distinct.

    Names whose cut labels would coincide are cut less, one character at a time, until they
    differ (at worst they are shown whole).
    """
    names = list(dict.fromkeys(names))
    widths = dict.fromkeys(names, width)
    shape = wrap_label if wrap else ellipsize
    while True:
        fitted = {n: shape(n, widths[n]) for n in names}
        owners: dict[str, list[str]] = {}
        for name, label in fitted.items():
            owners.setdefault(label, []).append(name)
        clash = [n for group in owners.values() if len(group) > 1 for n in group]
        growing = [n for n in clash if widths[n] < len(n)]
        if not growing:
            return fitted
        for name in growing:
            widths[name] += 1


def label_of(labels: Mapping[str, str] | None, policy: str) -> str:
    """The label of ``policy`` (itself when ``labels`` has none)."""
    return labels.get(policy, policy) if labels else policy


def slug(name: str) -> str:
    """A file-name-safe form of a world name (``./w/x`` -> ``w_x``)."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._-")
    return text or "world"


def short_name(name: str, width: int = 40) -> str:
    """``name`` cut to its last ``width`` characters (long stored-world paths in titles)."""
    return name if len(name) <= width else ELLIPSIS + name[-(width - 1) :]
