"""Task accuracy by rule: final-answer extraction, multiple-choice, numeric and exact matching.

`match_answer` decides what it can without an LLM and says when it cannot:

* ``choice`` tasks: the option letter of the final answer (``Final answer: (C)``, ``C.``,
  ``**C**``, ``the answer is C``) or the option whose text the final answer repeats;
* ``numeric`` tasks: integers, decimals, thousands separators, ``a/b``, ``\\frac{a}{b}``,
  percentages and numbers with units (``7 meters``, ``4 m/s^2``), compared with a relative
  tolerance of 1e-6;
* ``exact`` tasks: text normalized (case, spaces, ``$``, ``\\text{}``, ``\\left``/``\\right``,
  ``\\dfrac``, degree signs) and compared; numbers are compared as numbers.

The result is a `Match`; ``correct is None`` means the rules cannot decide (no final
answer found, an ``exact`` mismatch that may be an equivalent form, or a ``free`` task), and the
scorer falls back to an LLM grader (role ``"grader"``). Reading the answer itself (the final
answer, normalized text, the number) is `prefduel.prefdisco.dataset.answers`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from prefduel.prefdisco.dataset.answers import extract_final_answer, normalize_text, parse_number
from prefduel.prefdisco.dataset.tasks import Task


@dataclass(frozen=True)
class Match:
    """The outcome of rule-based matching.

    Attributes:
        correct: True/False when the rules decide; None when a grader must decide.
        method: ``"choice"``, ``"numeric"``, ``"exact"``, or ``"none"`` (undecided).
        extracted: The final answer as extracted from the response (None if not found).
    """

    correct: bool | None
    method: str
    extracted: str | None


def _numbers_equal(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def extract_choice(answer: str, options: dict[str, str]) -> str | None:
    """The option label an answer names, or None.

    Args:
        answer: The extracted final answer (or a whole response).
        options: Label -> option text.
    """
    labels = "".join(options)
    if not labels:
        return None
    text = answer.strip().strip("*_`").strip()
    lead = re.match(rf"^\(?\[?\s*([{labels}])\s*[\])]?(?=$|[\s.:),\-*])", text)
    if lead:
        return lead.group(1)
    phrase = re.findall(rf"\b(?:option|choice|answer)\s*\(?([{labels}])\b", text, re.IGNORECASE)
    if phrase and len(set(phrase)) == 1:
        return phrase[0].upper()
    norm = normalize_text(text)
    exact = [label for label, option in options.items() if normalize_text(option) == norm]
    if len(exact) == 1:
        return exact[0]
    contained = [
        label
        for label, option in options.items()
        if normalize_text(option) and normalize_text(option) in norm
    ]
    if len(contained) == 1:
        return contained[0]
    return None


def match_answer(task: Task, response: str) -> Match:
    """Decide by rule whether ``response`` answers ``task`` correctly.

    Args:
        task: The task (its ``answer_type`` selects the matcher).
        response: The model's full response.

    Returns:
        A `Match`; ``correct`` is None when a grader must decide.

    Raises:
        TypeError: ``task`` is not a `Task`.
    """
    if not isinstance(task, Task):
        raise TypeError(f"task: expected a Task, got {type(task).__name__}")
    return _match(task, response if isinstance(response, str) else "")


def _match(task: Task, response: str) -> Match:
    final = extract_final_answer(response)
    if task.answer_type == "free":
        return Match(None, "none", final)
    if task.answer_type == "choice":
        options = dict(task.options)
        label = extract_choice(final, options) if final is not None else None
        if label is None:
            return Match(None, "none", final)
        return Match(label == task.answer, "choice", label)
    if final is None:
        return Match(None, "none", None)
    gold = parse_number(task.answer)
    got = parse_number(final)
    if task.answer_type == "numeric" and gold is not None:
        if got is None:
            return Match(None, "none", final)
        return Match(_numbers_equal(got, gold), "numeric", final)
    if normalize_text(final) == normalize_text(task.answer):
        return Match(True, "exact", final)
    if gold is not None and got is not None:
        return Match(_numbers_equal(got, gold), "numeric", final)
    return Match(None, "none", final)
