"""Per-(attribute, value) scoring rubrics: 1-5 with an anchor for every level.

`template_rubric` writes a rubric from the taxonomy alone, so every value of every
attribute has one without any LLM call:

* ordinal attributes: 5 = the target level throughout; 4 = mostly, drifting toward a neighbour;
  3 = mixed or a neighbouring level; 2 = largely the levels further away; 1 = the opposite
  extreme of the scale (described);
* categorical attributes: 5 = the target category throughout; 4 = mostly; 3 = mixed with
  another category; 2 = mostly another category; 1 = another category entirely.

`prefduel.prefdisco.dataset.writer.refine_rubrics` optionally asks an LLM (role ``"rubric"``)
to sharpen the anchors of the rubrics in use. A refined rubric is kept only if it passes
`validate_anchors` (five distinct anchors of sensible length, the top anchor naming the
target); otherwise the template stays and the rejection is recorded in `Rubric.error`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy
from prefduel.prefdisco.errors import DatasetError, TaxonomyError
from prefduel.prefdisco.store import read_keyed_jsonl, write_jsonl

SCORES = (1, 2, 3, 4, 5)
MIN_ANCHOR, MAX_ANCHOR = 10, 600


@dataclass(frozen=True)
class Rubric:
    """The scoring function g_j(r, v_j) for one attribute and target value.

    Attributes:
        attribute: Attribute id.
        value: Target value id.
        anchors: Anchor texts for scores 1, 2, 3, 4, 5 (in that order).
        source: ``"template"`` or ``"llm"``.
        model: Model that refined it (None for templates).
        error: Why an LLM refinement was rejected (the template was kept), if it was.
    """

    attribute: str
    value: str
    anchors: tuple[str, str, str, str, str]
    source: str = "template"
    model: str | None = None
    error: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """``(attribute, value)``."""
        return (self.attribute, self.value)

    def anchor(self, score: int) -> str:
        """The anchor of ``score`` (1-5)."""
        if score not in SCORES:
            raise ValueError(f"score: expected 1-5, got {score!r}")
        return self.anchors[score - 1]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (anchors keyed ``"1"`` .. ``"5"``)."""
        return {
            "attribute": self.attribute,
            "value": self.value,
            "anchors": {str(s): self.anchors[s - 1] for s in SCORES},
            "source": self.source,
            "model": self.model,
            "error": self.error,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "rubric") -> Rubric:
        """Rebuild from `to_json` output.

        Raises:
            DatasetError: Missing fields or invalid anchors (names ``where``).
        """
        try:
            anchors = tuple(str(data["anchors"][str(s)]) for s in SCORES)
            rubric = cls(
                attribute=str(data["attribute"]),
                value=str(data["value"]),
                anchors=anchors,  # type: ignore[arg-type]
                source=str(data.get("source", "template")),
                model=data.get("model"),
                error=data.get("error"),
            )
        except (KeyError, TypeError) as exc:
            raise DatasetError(f"{where}: malformed rubric ({type(exc).__name__}: {exc})") from None
        problems = validate_anchors(rubric.anchors)
        if problems:
            raise DatasetError(f"{where}: rubric {rubric.key}: {'; '.join(problems)}")
        return rubric


def validate_anchors(anchors: Sequence[str], target_label: str | None = None) -> list[str]:
    """Problems with a set of anchors (empty list: valid).

    Args:
        anchors: Anchors for scores 1..5.
        target_label: If given, the score-5 anchor must mention it (case-insensitive).
    """
    problems = []
    if len(anchors) != 5:
        return [f"expected 5 anchors (scores 1-5), got {len(anchors)}"]
    for score, text in zip(SCORES, anchors, strict=True):
        if not isinstance(text, str) or not MIN_ANCHOR <= len(text.strip()) <= MAX_ANCHOR:
            problems.append(f"anchor {score} must be {MIN_ANCHOR}-{MAX_ANCHOR} characters of text")
    texts = [a.strip().lower() for a in anchors if isinstance(a, str)]
    if len(set(texts)) != len(texts):
        problems.append("anchors must differ from each other")
    if target_label and not problems and target_label.lower() not in anchors[4].lower():
        problems.append(f"anchor 5 must name the target value {target_label!r}")
    return problems


def _labels(values: Iterable[Any]) -> str:
    items = [f"'{v.label}'" for v in values]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def template_rubric(attribute: Attribute, value: str) -> Rubric:
    """The templated rubric of ``attribute`` with target ``value``.

    Raises:
        TaxonomyError: ``value`` is not in the attribute's value space.
    """
    target = attribute.value(value)
    others = [v for v in attribute.values if v.value != target.value]
    if attribute.ordinal:
        index = attribute.index(value)
        n = len(attribute.values)
        neighbours = [attribute.values[i] for i in (index - 1, index + 1) if 0 <= i < n]
        far = [v for i, v in enumerate(attribute.values) if abs(i - index) >= 2] or neighbours
        opposite = attribute.values[0 if n - 1 - index < index else n - 1]
        if opposite.value == target.value:  # a two-level scale
            opposite = others[0]
        anchors = (
            f"Clearly contrary to the preference: the response is '{opposite.label}' "
            f"({opposite.description}).",
            f"Mostly not '{target.label}': the response is largely {_labels(far)}.",
            f"Only partly '{target.label}': mixed, or noticeably {_labels(neighbours)} instead.",
            f"Mostly '{target.label}', with minor lapses toward {_labels(neighbours)}.",
            f"Clearly '{target.label}' throughout: {target.description}.",
        )
    else:
        anchors = (
            f"Not '{target.label}' at all: the response is {_labels(others)} instead.",
            f"Mostly another approach ({_labels(others)}); '{target.label}' appears only in "
            "passing.",
            f"A mix: '{target.label}' is present but shares the response with {_labels(others)}.",
            f"Mostly '{target.label}', with minor elements of other approaches.",
            f"Clearly '{target.label}' throughout: {target.description}.",
        )
    return Rubric(attribute.id, target.value, anchors)


def build_rubrics(
    taxonomy: Taxonomy, pairs: Iterable[tuple[str, str]] | None = None
) -> dict[tuple[str, str], Rubric]:
    """Templated rubrics for ``pairs`` of (attribute id, value), or for every value of Θ.

    Raises:
        TaxonomyError: An unknown attribute or value.
    """
    if pairs is None:
        pairs = [(a.id, v.value) for a in taxonomy for v in a.values]
    out = {}
    for attr_id, value in pairs:
        out[(attr_id, value)] = template_rubric(taxonomy[attr_id], value)
    return dict(sorted(out.items()))


def save_rubrics(path: str | Path, rubrics: Mapping[tuple[str, str], Rubric]) -> int:
    """Write rubrics as JSONL (sorted by attribute and value)."""
    return write_jsonl(path, (rubrics[k].to_json() for k in sorted(rubrics)))


def load_rubrics(path: str | Path, taxonomy: Taxonomy) -> dict[tuple[str, str], Rubric]:
    """Read rubrics written by `save_rubrics`, checked against ``taxonomy``.

    A line repeating an earlier rubric exactly is counted once (with a warning).

    Raises:
        DatasetError: Malformed line, unknown attribute/value, or two rubrics of one
            (attribute, value) with other content (names file and both lines).
    """
    out: dict[tuple[str, str], Rubric] = {}
    for number, row in read_keyed_jsonl(path, ("attribute", "value"), what="rubric file"):
        where = f"{path}, line {number}"
        rubric = Rubric.from_json(row, where=where)
        try:
            taxonomy.check_value(*rubric.key)
        except TaxonomyError as exc:
            raise DatasetError(f"{where}: {exc}") from None
        out[rubric.key] = rubric
    return out
