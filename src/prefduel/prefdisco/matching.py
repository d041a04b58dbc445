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
scorer falls back to an LLM grader (role ``"grader"``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from prefduel.prefdisco.tasks import Task

_FINAL = re.compile(r"final\s+answer\s*(?:is)?\s*[:：]?\s*(.+)", re.IGNORECASE)
_ANSWER_IS = re.compile(
    r"\b(?:the\s+)?(?:correct\s+)?(?:answer|option|choice)\s+is\s*[:：]?\s*(.+)", re.IGNORECASE
)
_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+")
_FRACTION = re.compile(r"^(-?\d+(?:\.\d+)?)\s*/\s*(-?\d+(?:\.\d+)?)$")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")


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


def _boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (balanced braces), or None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth = 0
    begin = start + len("\\boxed{")
    for i in range(begin, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            if depth == 0:
                return text[begin:i]
            depth -= 1
    return None


def _clean(value: str) -> str:
    value = value.strip().strip("*_` ").strip()
    boxed = _boxed(value)
    if boxed is not None:
        value = boxed
    value = value.strip().strip("$").strip()
    return value.rstrip(".").strip().strip("*_` ").strip()


def extract_final_answer(response: str) -> str | None:
    """The final answer stated in a response, or None.

    Looks, in order, for the last ``Final answer: ...`` line, the last ``\\boxed{...}``, and
    the last ``the answer is ...``.
    """
    if not isinstance(response, str):
        return None
    finals = [m.group(1) for m in _FINAL.finditer(response)]
    if finals:
        value = _clean(finals[-1].splitlines()[0])
        return value or None
    boxed = _boxed(response)
    if boxed is not None:
        return _clean(boxed) or None
    stated = [m.group(1) for m in _ANSWER_IS.finditer(response)]
    if stated:
        return _clean(stated[-1].splitlines()[0]) or None
    return None


def normalize_text(text: str) -> str:
    """Normalize an answer for exact comparison (case, spaces, LaTeX wrappers, punctuation)."""
    value = text.strip()
    for pattern, replacement in (
        (r"\\(?:text|mathrm|textbf|mathbf|operatorname)\s*\{([^{}]*)\}", r"\1"),
        (r"\\[dt]frac", r"\\frac"),
        (r"\\left|\\right|\\!|\\,|\\;|\\:|\\ ", ""),
        (r"\^\s*\{?\\circ\}?|°", ""),
        (r"[$\s]", ""),
    ):
        value = re.sub(pattern, replacement, value)
    return value.rstrip(".").lower()


def parse_number(text: str) -> float | None:
    """The single number a short answer states, or None.

    Accepts ``42``, ``-3.5``, ``1,234``, ``3/4``, ``\\frac{3}{4}``, ``50%`` (-> 50), and one
    number with units (``7 meters``, ``4 m/s^2``). Returns None when there is no number or
    several different ones (``(3, 4)``), or for expressions such as ``\\sqrt{2}``.
    """
    if not isinstance(text, str):
        return None
    value = _clean(text)
    if re.search(r"\\(?:sqrt|pi|infty)|[a-zA-Z]\s*\(", value):
        return None
    value = _LATEX_FRAC.sub(r"\1/\2", value)
    value = re.sub(r"\\(?:text|mathrm)\s*\{[^{}]*\}", " ", value)
    value = re.sub(r"\\%|%", "", value)
    value = re.sub(r"[A-Za-z]+\s*\^\s*\{?-?\d+\}?", " ", value)  # units such as m/s^2, cm^3
    value = re.sub(r"^[a-zA-Z]\s*=\s*", "", value.strip())  # x = 5
    value = value.replace("$", "").strip()
    fraction = _FRACTION.match(value)
    if fraction:
        den = float(fraction.group(2))
        return None if den == 0 else float(fraction.group(1)) / den
    slashed = re.findall(r"(-?\d+)\s*/\s*(\d+)", value)
    if len(slashed) == 1 and not re.search(r"[a-zA-Z]", value.replace("/", "")):
        num, den = slashed[0]
        return None if int(den) == 0 else float(Fraction(int(num), int(den)))
    numbers = {float(n.replace(",", "")) for n in _NUMBER.findall(value)}
    if len(numbers) == 1:
        return numbers.pop()
    return None


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
