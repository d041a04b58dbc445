"""Tasks: question/answer items from static benchmarks, plus a small built-in set.

A `Task` is one question with a reference answer, optional lettered options, a domain
(which drives the choice of relevant attributes) and a ``source`` (the benchmark, used to group
results). `load_tasks` reads JSON Lines files in the shapes of the public releases:

=================  ============================================================================
format             one line of the file (extra fields are ignored)
=================  ============================================================================
``math500``        ``{"problem", "answer", "solution"?, "subject"?, "level"?, "unique_id"?}``
                   (HuggingFaceH4/MATH-500 ``test.jsonl``); numeric answers are compared as
                   numbers, others (``\\frac{14}{3}``, ``(3, \\frac{\\pi}{2})``) as normalized
                   text.
``medqa``          ``{"question", "options": {"A": ..., ...}, "answer_idx": "C", "answer"?,
                   "meta_info"?}`` (MedQA-USMLE ``*.jsonl``, 4 or 5 options).
``commonsenseqa``  ``{"id", "question": {"stem", "choices": [{"label", "text"}, ...]},
                   "answerKey"}`` (CommonsenseQA ``train_rand_split.jsonl`` / ``dev``).
``logiqa``         ``{"id"?, "text", "question", "options": [4 strings], "answer": 0-3}``
                   (LogiQA 2.0 ``*.txt`` files, which are JSON Lines).
``socialiqa``      ``{"context", "question", "answerA", "answerB", "answerC", "label": "1"}``
                   (Social IQa; the official release keeps labels in a separate
                   ``*-labels.lst`` file: give it as ``labels``).
``generic``        ``{"id"?, "question", "answer", "options"?: {label: text} or [texts],
                   "domain"?, "answer_type"?: numeric|exact|choice|free}``
=================  ============================================================================

Every error names the file and the line. The built-in set (`builtin_tasks`, package data
``data/tasks.yaml``) has 18 items written for prefduel in these shapes (math, medicine,
commonsense, logic, social, science).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from prefduel.core.yamlfile import parse_yaml
from prefduel.prefdisco.config import FORMATS
from prefduel.prefdisco.dataset.task_formats import PARSERS, required_field
from prefduel.prefdisco.errors import DatasetWarning, TaskFormatError
from prefduel.prefdisco.store import dumps, iter_jsonl

ANSWER_TYPES = ("numeric", "exact", "choice", "free")
#: The domain each format's items belong to (a source's ``domain`` setting overrides it).
FORMAT_DOMAINS = {
    "math500": "math",
    "medqa": "medicine",
    "commonsenseqa": "commonsense",
    "logiqa": "logic",
    "socialiqa": "social",
}
TASKS_FORMAT = "prefduel/prefdisco-tasks"
_LABEL = re.compile(r"^[A-Z]$")


@dataclass(frozen=True)
class Task:
    """One question with a reference answer.

    Attributes:
        id: Unique id within a dataset.
        source: Benchmark or file the item comes from (results are grouped by it).
        domain: Task domain (``math``, ``logic``, ``science``, ``medicine``, ``commonsense``,
            ``social``): drives which attributes are relevant.
        question: The question text (with its context, if any).
        answer: The reference answer: an option label for ``choice``, else the answer text.
        answer_type: ``numeric``, ``exact``, ``choice`` or ``free`` (judge only).
        options: ``(label, text)`` pairs, labels ``A``, ``B``, ... (empty if none).
        meta: Extra fields kept from the source (subject, level, ...).
    """

    id: str
    source: str
    domain: str
    question: str
    answer: str
    answer_type: str
    options: tuple[tuple[str, str], ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.answer_type not in ANSWER_TYPES:
            raise TaskFormatError(
                f"task {self.id}: answer_type must be one of {ANSWER_TYPES}, "
                f"got {self.answer_type!r}"
            )
        if not self.question.strip():
            raise TaskFormatError(f"task {self.id}: the question is empty")
        if not str(self.answer).strip():
            raise TaskFormatError(f"task {self.id}: the answer is empty")
        labels = [label for label, _ in self.options]
        if any(not _LABEL.match(label) for label in labels) or len(set(labels)) != len(labels):
            raise TaskFormatError(
                f"task {self.id}: option labels must be distinct capital letters, got {labels}"
            )
        if self.answer_type == "choice" and self.answer not in labels:
            raise TaskFormatError(
                f"task {self.id}: the answer {self.answer!r} is not an option label {labels}"
            )

    @property
    def answer_text(self) -> str:
        """The answer in words (the option's text for ``choice`` tasks)."""
        return dict(self.options).get(self.answer, self.answer)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (the ``generic`` format plus ``source`` and ``meta``)."""
        return {
            "id": self.id,
            "source": self.source,
            "domain": self.domain,
            "question": self.question,
            "answer": self.answer,
            "answer_type": self.answer_type,
            "options": dict(self.options),
            "meta": dict(self.meta),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "task") -> Task:
        """Rebuild a task from `to_json` output.

        Raises:
            TaskFormatError: Naming ``where``.
        """
        for name in ("options", "meta"):
            if not isinstance(data.get(name) or {}, Mapping):
                raise TaskFormatError(
                    f"{where}: {name}: expected an object, got {data.get(name)!r:.60}"
                )
        try:
            return cls(
                id=str(data["id"]),
                source=str(data["source"]),
                domain=str(data["domain"]),
                question=str(data["question"]),
                answer=str(data["answer"]),
                answer_type=str(data["answer_type"]),
                options=tuple((str(k), str(v)) for k, v in (data.get("options") or {}).items()),
                meta=dict(data.get("meta") or {}),
            )
        except TaskFormatError as exc:
            raise TaskFormatError(f"{where}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise TaskFormatError(
                f"{where}: malformed task ({type(exc).__name__}: {exc})"
            ) from None


def load_tasks(
    path: str | Path,
    fmt: str,
    *,
    source: str | None = None,
    domain: str | None = None,
    limit: int | None = None,
    labels: str | Path | None = None,
) -> list[Task]:
    """Read a JSONL task file in one of the documented shapes, as a stream (reading stops at
    ``limit`` items). A line that repeats an earlier one exactly is one task (with a warning).

    Args:
        path: The file.
        fmt: One of `FORMATS`.
        source: Name for grouping results (default: the format, or the file stem for
            ``generic``).
        domain: Task domain (default: the format's, or the line's ``domain`` for ``generic``).
        limit: Keep the first ``limit`` items.
        labels: Social IQa only: a file with one label (1-3) per line, in item order.

    Returns:
        The tasks, in file order.

    Raises:
        TaskFormatError: Unknown format, missing file, or a malformed line (names file and
            line number), two items with one id (names both lines), or no domain.
    """
    _check_arguments(fmt, limit)
    p = Path(path)
    extra_labels = _read_labels(labels) if labels is not None else None
    tasks: list[Task] = []
    lines: dict[str, int] = {}  # canonical row -> its first line
    ids: dict[str, int] = {}  # task id -> its line
    rows = iter_jsonl(p, what="task file", error=TaskFormatError)
    for item, (number, row) in enumerate(rows):
        where = f"{p}, line {number}"
        row = _with_label(row, item, extra_labels, labels)
        text = dumps(row)
        if text in lines:  # an exact repeat (the label included) is one task
            warnings.warn(
                f"{where}: the same item as line {lines[text]}; counted once",
                DatasetWarning,
                stacklevel=2,
            )
            continue
        lines[text] = number
        fields = PARSERS[fmt](row, where, item)
        task = _task(fields, fmt, p, where, item, source=source, domain=domain)
        _claim_id(ids, task.id, number, where)
        tasks.append(task)
        if limit is not None and len(tasks) >= limit:
            break
    if not tasks:
        raise TaskFormatError(f"task file {p} has no items")
    return tasks


def _check_arguments(fmt: str, limit: int | None) -> None:
    """Raise `TaskFormatError` for an unknown format or a limit that is not a positive int."""
    if fmt not in PARSERS:
        raise TaskFormatError(f"task format must be one of {list(FORMATS)}, got {fmt!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise TaskFormatError(f"limit: expected a positive integer, got {limit!r}")


def _with_label(
    row: dict[str, Any], item: int, extra: list[str] | None, labels: str | Path | None
) -> dict[str, Any]:
    """The row with its label from the separate labels file (Social IQa), if one was given.

    Raises:
        TaskFormatError: The labels file has fewer labels than the task file has items.
    """
    if extra is None:
        return row
    if item >= len(extra):
        raise TaskFormatError(f"{labels}: fewer labels ({len(extra)}) than items")
    return {**row, "label": extra[item]}


def _claim_id(ids: dict[str, int], task_id: str, number: int, where: str) -> None:
    """Record the line of ``task_id``; raise `TaskFormatError` when another item has it."""
    if task_id in ids:
        raise TaskFormatError(
            f"{where}: task id {task_id!r} is also on line {ids[task_id]}, with another "
            "item; give each item its own id"
        )
    ids[task_id] = number


def _task(
    fields: dict[str, Any],
    fmt: str,
    path: Path,
    where: str,
    item: int,
    *,
    source: str | None,
    domain: str | None,
) -> Task:
    """The `Task` of one parsed line: its domain, source and id settled."""
    task_domain = domain or fields.pop("domain", None) or FORMAT_DOMAINS.get(fmt)
    fields.pop("domain", None)
    if not task_domain:
        raise TaskFormatError(
            f"{where}: no domain; give the source a domain (math, logic, science, medicine, "
            "commonsense, social) or add a 'domain' field"
        )
    task_source = source or fields.pop("source", None) or (path.stem if fmt == "generic" else fmt)
    fields.pop("source", None)
    raw_id = fields.get("id")
    if fmt == "logiqa" and raw_id is not None:
        fields["id"] = f"{task_source}-{raw_id}"
    elif raw_id not in (None, ""):
        fields["id"] = str(raw_id)
    else:
        fields["id"] = f"{task_source}-{item}"
    try:
        return Task(source=task_source, domain=task_domain, **_with_options(fields))
    except TaskFormatError as exc:
        raise TaskFormatError(f"{where}: {exc}") from None


def _with_options(fields: dict[str, Any]) -> dict[str, Any]:
    out = dict(fields)
    out["options"] = tuple((str(k), str(v)) for k, v in (fields.get("options") or {}).items())
    return out


#: A larger labels file is not one label per line of a task file.
MAX_LABELS_BYTES = 16 * 2**20


def _read_labels(path: str | Path) -> list[str]:
    p = Path(path)
    try:
        if not p.is_file():
            raise TaskFormatError(f"labels file {p} is not a regular file (or does not exist)")
        with p.open("rb") as handle:
            data = handle.read(MAX_LABELS_BYTES + 1)
        if len(data) > MAX_LABELS_BYTES:
            raise TaskFormatError(f"labels file {p} is larger than {MAX_LABELS_BYTES >> 20} MiB")
        return [x.strip() for x in data.decode("utf-8").split() if x.strip()]
    except UnicodeDecodeError as exc:
        raise TaskFormatError(f"labels file {p} is not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise TaskFormatError(f"cannot read labels file {p}: {exc.strerror or exc}") from None


def builtin_tasks() -> list[Task]:
    """The built-in task set (package data ``data/tasks.yaml``).

    Raises:
        TaskFormatError: The shipped file is missing (a broken install) or malformed.
    """
    try:
        text = (
            resources.files("prefduel.prefdisco")
            .joinpath("data/tasks.yaml")
            .read_text(encoding="utf-8")
        )
    except OSError as exc:
        raise TaskFormatError(
            "the shipped prefduel/prefdisco/data/tasks.yaml is missing (a non-editable "
            "install needs it declared as package data)"
        ) from exc
    data = parse_yaml(text, "prefduel/prefdisco/data/tasks.yaml", TaskFormatError)
    if not isinstance(data, Mapping) or data.get("format") != TASKS_FORMAT:
        raise TaskFormatError(f"tasks.yaml: format must be {TASKS_FORMAT!r}")
    tasks = []
    for i, row in enumerate(data.get("tasks") or []):
        fields = PARSERS["generic"](row, f"tasks.yaml: tasks[{i}]", i)
        fields["id"] = str(required_field(row, "id", f"tasks.yaml: tasks[{i}]"))
        tasks.append(Task(**_with_options(fields)))
    return tasks


def check_unique(tasks: Sequence[Task]) -> None:
    """Raise `TaskFormatError` if two tasks share an id (e.g. from two sources)."""
    seen: dict[str, str] = {}
    for task in tasks:
        if task.id in seen:
            raise TaskFormatError(
                f"task id {task.id!r} appears in {seen[task.id]} and {task.source}; give the "
                "sources distinct names or ids"
            )
        seen[task.id] = task.source
