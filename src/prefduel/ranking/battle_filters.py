"""The row policies of a battle log that go beyond one row: missing user ids spelled as values
(``NaN``, ``null``, ...), rows that repeat an earlier row, and models with too few battles to
be ranked.

The first and last are settings of `BattleSchema` (``keep_missing_users``,
``min_model_battles``); all three are applied by `prefduel.ranking.battle_validation`. Each row
they drop is counted in `Battles.skips` (repeats kept are counted in `Battles.notes`), and what
they found is listed (`Battles.missing_users`, `Battles.excluded_models`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prefduel.ranking import _deps
from prefduel.ranking.battle_schema import MISSING_USER_TOKENS


def missing_user_ids(users: Sequence[str]) -> np.ndarray:
    """``(U,)`` which of the cleaned user ids spell a missing value (`MISSING_USER_TOKENS`).

    A CSV export writes ``NaN`` or ``NA`` for a missing voter; read as text, each would become
    one "user" pooling every anonymous vote, so they are compared case-insensitively.
    """
    tokens = set(MISSING_USER_TOKENS)
    return np.array([name.casefold() in tokens for name in users], dtype=bool)


def spelled_missing(
    user: np.ndarray, users: Sequence[str], keep_as_ids: bool
) -> tuple[np.ndarray, np.ndarray]:
    """User codes with missing-value spellings turned into "missing" (-1).

    Args:
        user: ``(n_rows,)`` index into ``users``; -1 when empty or null.
        users: The cleaned user ids.
        keep_as_ids: Keep the spellings as ordinary ids (nothing changes).

    Returns:
        ``(user codes, spelling)``, both ``(n_rows,)``: the codes with the spelled-missing ids
        set to -1, and the former code of those rows (-1 for every other row).
    """
    spelling = np.full(user.shape, -1, dtype=np.int64)
    if keep_as_ids or not len(users):
        return user, spelling
    token = np.append(missing_user_ids(users), False)  # code -1 picks the trailing False
    hit = token[user]
    spelling[hit] = user[hit]
    return np.where(hit, -1, user), spelling


def missing_user_counts(
    dropped: np.ndarray, spelling: np.ndarray, users: Sequence[str]
) -> dict[str, int]:
    """Rows dropped for a missing user id, by how the id was written (``""``: empty or null).

    Args:
        dropped: ``(n_rows,)`` the rows skipped as ``empty_user``.
        spelling: ``(n_rows,)`` from `spelled_missing`.
        users: The cleaned user ids ``spelling`` indexes.
    """
    codes, counts = np.unique(spelling[dropped], return_counts=True)
    return {
        (users[code] if code >= 0 else ""): int(count)
        for code, count in zip(codes.tolist(), counts.tolist(), strict=True)
    }


def exclude_rare_models(
    a: np.ndarray,
    b: np.ndarray,
    keep: np.ndarray,
    models: Sequence[str],
    min_battles: int,
) -> tuple[dict[str, int], int]:
    """Drop every battle of the models with fewer than ``min_battles`` kept battles.

    Repeated until every model left has at least ``min_battles`` (dropping a model's battles
    can take a rival below the threshold): one stray row, such as a name mangled by a bad
    byte, can then neither top the leaderboard nor make the maximum-likelihood fit fail.

    Args:
        a: ``(n_rows,)`` index of ``model_a`` in ``models`` (-1 where missing).
        b: ``(n_rows,)`` index of ``model_b``.
        keep: ``(n_rows,)`` rows kept so far; updated in place.
        models: The model names.
        min_battles: The threshold; ``1`` keeps every model.

    Returns:
        ``(excluded models with the battles each had, rows dropped)``.
    """
    excluded: dict[str, int] = {}
    dropped = 0
    n_models = len(models)
    while min_battles > 1:
        counts = np.bincount(a[keep], minlength=n_models) + np.bincount(
            b[keep], minlength=n_models
        )
        rare = (counts > 0) & (counts < min_battles)
        if not rare.any():
            break
        excluded.update({models[i]: int(counts[i]) for i in np.flatnonzero(rare).tolist()})
        hit = keep & (rare[a] | rare[b])  # rows with a == -1 are never kept
        dropped += int(hit.sum())
        keep[hit] = False
    return excluded, dropped


def duplicate_rows(
    coded: Any, rows: np.ndarray, time: np.ndarray | None, prompts: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``rows`` repeat an earlier row: same user, ``model_a``, ``model_b``, outcome
    (both-bad votes apart), prompt and timestamp.

    A repeat with a timestamp is a copy of the same vote (a log written or concatenated
    twice): it is dropped. Without a timestamp (no time column, or an empty cell), one user
    voting the same pair the same way twice on the same prompt cannot be told from a copy,
    so such repeats are kept and only counted.

    Args:
        coded: The coded rows (``user``, ``a``, ``b``, ``outcome``, ``bothbad``; each
            ``(n_rows,)``).
        rows: ``(n,)`` the rows to compare, in file order.
        time: ``(n,)`` their timestamps (NaN where missing), or None.
        prompts: ``(n,)`` their prompt texts (None where missing), or None.

    Returns:
        ``(copies, untimed repeats)``, both ``(n,)`` masks over ``rows`` (the first of each
        group is in neither).
    """
    pd = _deps.pandas()
    n_users, n_models = len(coded.users), len(coded.models)
    outcome = np.round(coded.outcome[rows] * 2).astype(np.int64) * 2 + coded.bothbad[rows]
    parts = [coded.user[rows], coded.a[rows], coded.b[rows], outcome]
    sizes = [n_users + 1, n_models, n_models, 6]
    if np.prod(np.array(sizes, dtype=float)) < 2.0**62:  # one exact integer per distinct row
        key = np.zeros(rows.size, dtype=np.int64)
        for part, size in zip(parts, sizes, strict=True):
            key = key * size + part
    else:
        key = _combined(parts)
    timed = np.zeros(rows.size, dtype=bool)
    if time is not None:
        timed = ~np.isnan(time)
        key = _combined([key, pd.factorize(time, use_na_sentinel=True)[0]])
    if prompts is not None:
        key = _combined([key, pd.factorize(prompts, use_na_sentinel=True)[0]])
    repeated = np.asarray(pd.Index(key).duplicated(keep="first"))
    return repeated & timed, repeated & ~timed


def _combined(parts: list[np.ndarray]) -> np.ndarray:
    """One code per distinct tuple of the integer ``parts`` (each ``(n,)``, values >= -1),
    re-coded after each step so that no product overflows."""
    pd = _deps.pandas()
    key = pd.factorize(parts[0])[0]
    for part in parts[1:]:
        codes = pd.factorize(part)[0]
        key = pd.factorize(key * (int(codes.max(initial=0)) + 1) + codes)[0]
    return key
