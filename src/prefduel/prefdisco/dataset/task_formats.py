"""The line parsers of the task-file formats that `prefduel.prefdisco.dataset.tasks.load_tasks`
reads: one per format of `prefduel.prefdisco.config.FORMATS` (the shapes are documented in
`prefduel.prefdisco.dataset.tasks`).

Each parser takes one JSON line, where it is (file and line, for errors) and its item index, and
returns the fields of its `Task` (``id`` may still be None, ``domain`` and ``source`` may be left
to the caller); every error is a `TaskFormatError` naming the file and the line.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prefduel.prefdisco.dataset.answers import parse_number
from prefduel.prefdisco.errors import TaskFormatError


def required_field(
    row: Mapping[str, Any], key: str, where: str, kinds: tuple[type, ...] = (str,)
) -> Any:
    """``row[key]``, a non-empty value of one of ``kinds``; `TaskFormatError` naming ``where``
    when it is missing or of another type."""
    if key not in row:
        raise TaskFormatError(f"{where}: missing field {key!r}; the line has {sorted(row)}")
    value = row[key]
    if not isinstance(value, kinds) or (isinstance(value, str) and not value.strip()):
        names = " or ".join(k.__name__ for k in kinds)
        raise TaskFormatError(f"{where}: field {key!r} must be a non-empty {names}, got {value!r}")
    return value


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def _numeric(text: str) -> bool:
    return parse_number(text) is not None


def _math500(row: Mapping[str, Any], where: str, index: int) -> dict[str, Any]:
    answer = str(required_field(row, "answer", where, (str, int, float)))
    meta = {k: row[k] for k in ("subject", "level", "unique_id") if k in row}
    return {
        "id": row.get("unique_id"),
        "question": required_field(row, "problem", where),
        "answer": answer,
        "answer_type": "numeric" if _numeric(answer) else "exact",
        "meta": meta,
    }


def _medqa(row: Mapping[str, Any], where: str, index: int) -> dict[str, Any]:
    options = required_field(row, "options", where, (dict,))
    key = required_field(row, "answer_idx", where)
    meta = {k: row[k] for k in ("meta_info",) if k in row}
    return {
        "id": row.get("id"),
        "question": required_field(row, "question", where),
        "options": {str(k): str(v) for k, v in options.items()},
        "answer": str(key).strip(),
        "answer_type": "choice",
        "meta": meta,
    }


def _commonsenseqa(row: Mapping[str, Any], where: str, index: int) -> dict[str, Any]:
    question = required_field(row, "question", where, (dict,))
    stem = required_field(question, "stem", f"{where}: question")
    choices = required_field(question, "choices", f"{where}: question", (list,))
    options = {}
    for j, choice in enumerate(choices):
        if not isinstance(choice, Mapping) or "label" not in choice or "text" not in choice:
            raise TaskFormatError(
                f"{where}: question.choices[{j}] must be {{'label', 'text'}}, got {choice!r}"
            )
        options[str(choice["label"])] = str(choice["text"])
    meta = (
        {"question_concept": question["question_concept"]} if "question_concept" in question else {}
    )
    return {
        "id": row.get("id"),
        "question": stem,
        "options": options,
        "answer": str(required_field(row, "answerKey", where)).strip(),
        "answer_type": "choice",
        "meta": meta,
    }


def _logiqa(row: Mapping[str, Any], where: str, index: int) -> dict[str, Any]:
    options = required_field(row, "options", where, (list,))
    answer = required_field(row, "answer", where, (int, str))
    labels = _letters(len(options))
    try:
        position = int(answer)
    except ValueError:
        position = (
            labels.index(str(answer).strip().upper())
            if str(answer).strip().upper() in labels
            else -1
        )
    if not 0 <= position < len(options):
        raise TaskFormatError(
            f"{where}: answer {answer!r} is not an option index 0..{len(options) - 1}"
        )
    context = str(row.get("text") or "").strip()
    question = required_field(row, "question", where)
    return {
        "id": row.get("id"),
        "question": f"{context}\n{question}" if context else question,
        "options": {label: str(text) for label, text in zip(labels, options, strict=True)},
        "answer": labels[position],
        "answer_type": "choice",
        "meta": {},
    }


def _socialiqa(row: Mapping[str, Any], where: str, index: int) -> dict[str, Any]:
    texts = [required_field(row, f"answer{x}", where) for x in "ABC"]
    label = row.get("label", row.get("correct"))
    if label is None:
        raise TaskFormatError(
            f"{where}: no label; Social IQa keeps labels in a separate *-labels.lst file "
            "(give it as the source's labels setting)"
        )
    text = str(label).strip()
    answer = {"1": "A", "2": "B", "3": "C"}.get(text, text.upper())
    if answer not in ("A", "B", "C"):
        raise TaskFormatError(f"{where}: label {label!r} must be 1, 2 or 3 (or A, B, C)")
    context = required_field(row, "context", where)
    return {
        "id": row.get("id"),
        "question": f"{context} {required_field(row, 'question', where)}",
        "options": dict(zip("ABC", texts, strict=True)),
        "answer": answer,
        "answer_type": "choice",
        "meta": {},
    }


def _generic(row: Mapping[str, Any], where: str, index: int) -> dict[str, Any]:
    answer = str(required_field(row, "answer", where, (str, int, float)))
    raw = row.get("options") or {}
    if isinstance(raw, list):
        options = {label: str(text) for label, text in zip(_letters(len(raw)), raw, strict=True)}
    elif isinstance(raw, Mapping):
        options = {str(k): str(v) for k, v in raw.items()}
    else:
        raise TaskFormatError(f"{where}: options must be a list or a mapping, got {raw!r}")
    kind = row.get("answer_type") or (
        "choice" if options else ("numeric" if _numeric(answer) else "exact")
    )
    out = {
        "id": row.get("id"),
        "question": required_field(row, "question", where),
        "options": options,
        "answer": answer,
        "answer_type": kind,
        "meta": dict(row.get("meta") or {}),
    }
    if row.get("domain"):
        out["domain"] = str(row["domain"])
    if row.get("source"):
        out["source"] = str(row["source"])
    return out


PARSERS: dict[str, Callable[[Mapping[str, Any], str, int], dict[str, Any]]] = {
    "math500": _math500,
    "medqa": _medqa,
    "commonsenseqa": _commonsenseqa,
    "logiqa": _logiqa,
    "socialiqa": _socialiqa,
    "generic": _generic,
}


__all__ = ["PARSERS", "required_field"]
