"""Reading a short answer: the final answer a response states, normalized text, the number.

`extract_final_answer` finds the final answer in a response, `normalize_text` normalizes an
answer for exact comparison, and `parse_number` reads the single number a short answer states.
They serve both the task loaders (is a reference answer a number?) and the accuracy rules of
`prefduel.prefdisco.episode.matching`.
"""

from __future__ import annotations

import re
from fractions import Fraction

_FINAL = re.compile(r"final\s+answer\s*(?:is)?\s*[:：]?\s*(.+)", re.IGNORECASE)
_ANSWER_IS = re.compile(
    r"\b(?:the\s+)?(?:correct\s+)?(?:answer|option|choice)\s+is\s*[:：]?\s*(.+)", re.IGNORECASE
)
_NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\.\d+")
_FRACTION = re.compile(r"^(-?\d+(?:\.\d+)?)\s*/\s*(-?\d+(?:\.\d+)?)$")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")


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
