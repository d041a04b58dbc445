"""The battle log's data types: `BattleSchema` (where the fields are, what the labels mean,
which rows are usable), `Battles` (validated battles as arrays) and the outcome codes and
skip/note reasons.

Everything here is re-exported by `prefduel.ranking.battles`, the public home of battle logs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from prefduel.ranking.errors import BattleFormatError

#: Outcome codes of a battle, from ``model_a``'s side: 1 win, 0 loss, 0.5 tie (a half win each).
WIN_A, WIN_B, TIE = 1.0, 0.0, 0.5

FORMATS = ("csv", "json", "jsonl", "parquet")
EncodingPolicy = Literal["error", "replace", "skip"]
ENCODING_POLICIES: tuple[str, ...] = ("error", "replace", "skip")
#: What a "both bad" vote counts as: a tie (Chatbot Arena's leaderboard does so), or nothing.
BothBadPolicy = Literal["tie", "skip"]
BOTHBAD_POLICIES: tuple[str, ...] = ("tie", "skip")
#: User ids that exported tables write for "no value" (compared stripped, case-insensitively):
#: read as a missing user id unless ``BattleSchema.keep_missing_users``.
MISSING_USER_TOKENS: tuple[str, ...] = ("nan", "na", "n/a", "null", "none", "<na>", "#n/a")

#: The largest ``min_model_battles``: more battles than any one model of a real log has.
MAX_MODEL_BATTLES = 1_000_000

#: Every reason a row can be skipped, in the order the checks run (a row counts once, under the
#: first reason that applies). All are reported, zeros included.
SKIP_REASONS: tuple[str, ...] = (
    "non_utf8",  # a line with invalid UTF-8 bytes, dropped under encoding_errors="skip"
    "missing_model",  # model_a or model_b empty or missing
    "missing_winner",  # winner empty or missing
    "unknown_winner",  # winner label not configured (only with unknown_winner="skip")
    "self_battle",  # model_a == model_b
    "empty_user",  # user id empty, missing, or a MISSING_USER_TOKENS spelling (NaN, null, ...)
    "bothbad",  # a "both bad" vote, dropped under bothbad="skip"
    "duplicate",  # a copy of an earlier row: same user, models, winner, prompt and timestamp
    "rare_model",  # a model with fewer than min_model_battles battles: all its battles dropped
)
#: Rows kept with a caveat.
NOTE_REASONS: tuple[str, ...] = (
    "non_utf8_repaired",  # invalid bytes replaced by U+FFFD (encoding_errors="replace")
    "missing_time",  # no timestamp: kept, ordered after every timed row (stable)
    "missing_prompt",  # no prompt text: kept for ratings, left out of topic/style features
    "bothbad_as_tie",  # a "both bad" vote, counted as a tie (bothbad="tie")
    # same user, models, winner and prompt as an earlier row, neither with a timestamp: kept,
    # since without one a repeated vote cannot be told from a copied row
    "duplicate_untimed",
)


@dataclass(frozen=True)
class BattleSchema:
    """Where the fields of a battle are, what the labels mean, and which rows are usable.

    Attributes:
        model_a: Column of the first model.
        model_b: Column of the second model.
        winner: Column of the outcome.
        user: Column of the user (voter) id.
        time: Column of the timestamp (numbers, or dates pandas can parse). ``None``: use
            ``tstamp`` when the file has it, else the file order.
        prompt: Column of the prompt text, either plain text or an Arena conversation (a list of
            ``{"role", "content"}`` turns, or its JSON string; the first user turn is used).
            ``None``: ``conversation_a`` when present, else ``prompt``, else no prompts.
        label_a: Winner labels meaning "model_a won".
        label_b: Winner labels meaning "model_b won".
        label_tie: Winner labels meaning a tie (each side gets half a win).
        unknown_winner: ``"error"`` (default) stops at labels outside the label lists;
            ``"skip"`` drops those rows and counts them.
        label_bothbad: Winner labels meaning "both answers were bad" (Arena's
            ``tie (bothbad)``), kept apart from plain ties and counted on their own. A label
            also listed in ``label_tie`` is taken as a both-bad label. ``()``: none.
        bothbad: What a both-bad vote counts as: ``"tie"`` (default, as Chatbot Arena's
            leaderboard counts it; counted in ``notes["bothbad_as_tie"]``) or ``"skip"``
            (dropped, counted in ``skips["bothbad"]``).
        keep_missing_users: ``False`` (default): user ids spelled as a missing value
            (`MISSING_USER_TOKENS`: ``NaN``, ``NA``, ``null``, ``None``, ...) are missing, and
            their rows are skipped like empty ids (``skips["empty_user"]``). ``True``: they are
            ordinary user ids (one user each).
        min_model_battles: Models with fewer battles (after every other check) are excluded:
            all their battles are dropped (``skips["rare_model"]``), repeatedly until every
            model left has at least this many, and the models are listed in
            ``Battles.excluded_models``. ``1`` (default here; ``prefduel rank`` uses 5) keeps
            every model.
    """

    model_a: str = "model_a"
    model_b: str = "model_b"
    winner: str = "winner"
    user: str = "judge"
    time: str | None = None
    prompt: str | None = None
    label_a: tuple[str, ...] = ("model_a",)
    label_b: tuple[str, ...] = ("model_b",)
    label_tie: tuple[str, ...] = ("tie",)
    unknown_winner: Literal["error", "skip"] = "error"
    label_bothbad: tuple[str, ...] = ("tie (bothbad)",)
    bothbad: BothBadPolicy = "tie"
    keep_missing_users: bool = False
    min_model_battles: int = 1

    def __post_init__(self) -> None:
        self._check_labels()
        self._check_policies()

    def _check_labels(self) -> None:
        """Labels as tuples, both-bad labels out of the tie list, no label used twice."""
        for name in ("label_a", "label_b", "label_tie", "label_bothbad"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
        ties = tuple(x for x in self.label_tie if x not in self.label_bothbad)
        object.__setattr__(self, "label_tie", ties)
        labels = [*self.label_a, *self.label_b, *self.label_tie, *self.label_bothbad]
        if not self.label_a or not self.label_b:
            raise BattleFormatError(
                "winner labels: need at least one label for 'model_a won' and one for "
                f"'model_b won', got label_a={self.label_a!r}, label_b={self.label_b!r}"
            )
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise BattleFormatError(f"winner labels: {dup} listed for more than one outcome")

    def _check_policies(self) -> None:
        """The row policies: each one of its allowed values."""
        if self.unknown_winner not in ("error", "skip"):
            raise BattleFormatError(
                f"unknown_winner must be 'error' or 'skip', got {self.unknown_winner!r}"
            )
        if self.bothbad not in BOTHBAD_POLICIES:
            raise BattleFormatError(
                f"bothbad (--bothbad) must be one of {BOTHBAD_POLICIES}, got {self.bothbad!r}"
            )
        if not isinstance(self.keep_missing_users, bool):
            raise BattleFormatError(
                f"keep_missing_users must be True or False, got {self.keep_missing_users!r}"
            )
        count = self.min_model_battles
        if (
            isinstance(count, bool)
            or not isinstance(count, int)
            or not 1 <= count <= MAX_MODEL_BATTLES
        ):
            raise BattleFormatError(
                "min_model_battles (--min-model-battles) must be an integer from 1 to "
                f"{MAX_MODEL_BATTLES:,}, got {count!r}"
            )

    @classmethod
    def with_labels(cls, text: str, **columns: Any) -> BattleSchema:
        """A schema whose winner labels come from ``"A,B[,TIE,...]"`` (or ``"A/B/TIE"``).

        The first label means ``model_a`` won, the second ``model_b`` won, every further one a
        tie (a both-bad vote when it is one of ``label_bothbad``, by default
        ``tie (bothbad)``). Commas separate when present, else slashes (so ``left/right/tie``
        works). ``columns`` are the other settings (column names and row policies).
        """
        sep = "," if "," in text else "/"
        labels = [p.strip() for p in text.split(sep) if p.strip()]
        if len(labels) < 2:
            raise BattleFormatError(
                f"winner labels: expected 'A,B[,TIE,...]' (first: model_a won, second: model_b "
                f"won, rest: ties), got {text!r}"
            )
        return cls(
            label_a=(labels[0],), label_b=(labels[1],), label_tie=tuple(labels[2:]), **columns
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable settings."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


@dataclass(frozen=True, eq=False)
class Battles:
    """Validated battles in time order (``n`` battles, ``M`` models, ``U`` users).

    Attributes:
        models: ``M`` model names, sorted.
        users: ``U`` user ids, sorted (as strings).
        a: ``(n,)`` index of ``model_a`` in ``models``.
        b: ``(n,)`` index of ``model_b``; never equal to ``a``.
        outcome: ``(n,)`` 1.0 if ``model_a`` won, 0.0 if ``model_b`` won, 0.5 for a tie.
        user: ``(n,)`` index into ``users``.
        time: ``(n,)`` timestamps in seconds (NaN where missing), or ``None`` (file order).
        prompts: ``(n,)`` object array of prompt texts (``""`` where missing), or ``None``.
        skips: Rows dropped, by reason (every key of `SKIP_REASONS`).
        notes: Rows kept with a caveat, by reason (every key of `NOTE_REASONS`).
        n_rows: Rows read from the source (kept + skipped).
        source: Where the battles came from (a path or a description).
        schema: The schema used, with ``time`` and ``prompt`` the columns actually read (also
            when found without being named: ``tstamp``, ``conversation_a``; None when absent).
        missing_users: The rows skipped for a missing user id (``skips["empty_user"]``), by
            how the id was written (``"NaN"``, ``"null"``, ...; ``""`` for an empty cell or a
            null value).
        excluded_models: Models excluded for having fewer than ``schema.min_model_battles``
            battles, with the battles each had when excluded (``skips["rare_model"]`` counts
            the rows dropped with them).
        rows: ``(n,)`` the data row (0-based, in the table read) of each battle, so that
            other columns of the table can be matched to the battles; ``None`` for battles
            made otherwise.
    """

    models: tuple[str, ...]
    users: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    user: np.ndarray
    time: np.ndarray | None = None
    prompts: np.ndarray | None = None
    skips: dict[str, int] = field(default_factory=dict)
    notes: dict[str, int] = field(default_factory=dict)
    n_rows: int = 0
    source: str = "<arrays>"
    schema: BattleSchema = field(default_factory=BattleSchema)
    missing_users: dict[str, int] = field(default_factory=dict)
    excluded_models: dict[str, int] = field(default_factory=dict)
    rows: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of battles."""
        return int(self.a.shape[0])

    @property
    def n_models(self) -> int:
        """Number of models ``M``."""
        return len(self.models)

    @property
    def n_users(self) -> int:
        """Number of users ``U``."""
        return len(self.users)

    def votes_per_user(self) -> np.ndarray:
        """Battles per user, shape ``(U,)``."""
        return np.bincount(self.user, minlength=self.n_users)

    def summary(self) -> dict[str, Any]:
        """Counts for reports: rows read, battles kept, models, users, skips and notes.

        ``ties`` counts the battles fitted as ties (both-bad votes counted as ties included);
        ``outcomes`` splits the kept battles by label kind (``tie`` and ``bothbad`` apart).
        """
        ties = int(np.sum(self.outcome == TIE))
        bothbad = int(self.notes.get("bothbad_as_tie", 0))
        return {
            "source": self.source,
            "rows_read": int(self.n_rows),
            "battles": self.n,
            "models": self.n_models,
            "users": self.n_users,
            "ties": ties,
            "outcomes": {
                "model_a": int(np.sum(self.outcome == WIN_A)),
                "model_b": int(np.sum(self.outcome == WIN_B)),
                "tie": ties - bothbad,
                "bothbad": bothbad,
            },
            "has_time": self.time is not None,
            "has_prompts": self.prompts is not None,
            "skipped": {k: int(self.skips.get(k, 0)) for k in SKIP_REASONS},
            "skipped_total": int(sum(self.skips.values())),
            "notes": {k: int(self.notes.get(k, 0)) for k in NOTE_REASONS},
            "missing_users": dict(self.missing_users),
            "min_model_battles": self.schema.min_model_battles,
            "excluded_models": dict(self.excluded_models),
        }
