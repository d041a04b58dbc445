"""An inspect-ai log of the PrefDisco task back into a run folder (``prefdisco from-inspect``).

::

    prefduel prefdisco from-inspect logs/2026-...-prefdisco-....eval --out study/inspect
    prefduel prefdisco report study/inspect

The task (`prefduel.prefdisco.study.inspect_task`) keeps in each sample the transcripts (the
sample's store) and the score rows and run record (the score's metadata) that our runner would
write; this module writes them as ``run.json``, ``transcripts.jsonl`` and ``scores.jsonl``, so
``report`` reads an inspect run like one of its own. Several logs (one per model, as inspect
writes them) go into one folder when they ran under the same settings (dataset, judge, user,
budget: the settings digest); a folder converted before takes more logs of the same settings.
Every row is checked as ``report`` checks it; a sample that ended in an error has no rows and
is listed (run it again in inspect, e.g. ``inspect eval-retry``, and convert the new log).

Reading a log needs inspect-ai (the ``inspect`` extra); it is imported when a log is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefduel.core.outputs import output_dir
from prefduel.prefdisco.config import CONDITIONS
from prefduel.prefdisco.errors import ConfigError, DatasetError
from prefduel.prefdisco.report.rows import check_run_record, check_score_row, check_transcript_row
from prefduel.prefdisco.store import dumps, read_json, write_json, write_jsonl
from prefduel.prefdisco.study.run_folder import check_run_folder, read_scores, read_transcripts

#: The scorer's name in a log (the task's `prefdisco_scorer`, maybe under its package name).
SCORER = "prefdisco_scorer"
#: Where the task's solver leaves a sample's transcripts (``Transcript.to_json``) for its
#: scorer: the sample's store, kept in the log.
TRANSCRIPTS = "prefdisco_transcripts"


@dataclass(frozen=True)
class Converted:
    """What `from_inspect` wrote.

    Attributes:
        folder: The run folder.
        logs: The logs read.
        models: The models under evaluation found in them.
        samples: Samples converted.
        episodes: Score rows written (with the folder's earlier rows).
        skipped: ``(log, sample id, error)`` of samples without a score (an error in inspect).
    """

    folder: str
    logs: tuple[str, ...]
    models: tuple[str, ...]
    samples: int
    episodes: int
    skipped: tuple[tuple[str, str, str], ...]


def needs_inspect(what: str, exc: ImportError) -> ConfigError:
    """The error when inspect-ai is missing: it names the extra that installs it."""
    return ConfigError(
        f'{what} needs inspect-ai ({exc}); install the extra: pip install "prefduel[inspect]"'
    )


def _read_log(path: Path) -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError as exc:
        raise needs_inspect("reading an inspect log", exc) from None
    if not path.is_file():
        raise DatasetError(f"inspect log {path}: no such file")
    try:
        return read_eval_log(str(path))
    except Exception as exc:  # inspect raises several types for an unreadable log
        raise DatasetError(f"inspect log {path}: cannot read it ({exc})") from None


@dataclass
class _Rows:
    """The rows gathered so far, keyed by episode id, and the run record they share."""

    record: dict[str, Any] | None = None
    record_from: str = ""

    def __post_init__(self) -> None:
        self.transcripts: dict[str, dict[str, Any]] = {}
        self.scores: dict[str, dict[str, Any]] = {}

    def take_record(self, record: Any, where: str) -> None:
        checked = check_run_record(record, f"{where}: run record")
        if self.record is None:
            self.record, self.record_from = checked, where
        elif checked["digest"] != self.record["digest"]:
            changed = sorted(
                k
                for k in set(checked["settings"]) | set(self.record["settings"])
                if checked["settings"].get(k) != self.record["settings"].get(k)
            )
            raise DatasetError(
                f"{where} ran under other settings than {self.record_from} (changed: "
                f"{', '.join(changed)}); convert them into separate run folders"
            )

    def add(self, table: dict[str, dict[str, Any]], row: dict[str, Any], where: str) -> None:
        old = table.setdefault(row["episode_id"], row)
        if dumps(old) != dumps(row):
            raise DatasetError(
                f"{where}: episode {row['episode_id']} is already in the folder (or another "
                "log) with other content; convert the logs into separate run folders"
            )


def _sample(rows: _Rows, sample: Any, where: str) -> str | None:
    """Take one sample's rows; the error of a sample without a score."""
    scores = sample.scores or {}
    name = next((k for k in scores if k.rsplit("/", 1)[-1] == SCORER), None)
    score = scores.get(name) if name is not None else None
    if score is None:
        error = getattr(sample.error, "message", None) if sample.error else None
        return error or "no score (the sample did not finish)"
    meta = score.metadata or {}
    if not isinstance(meta.get("rows"), list) or not isinstance(meta.get("run"), dict):
        raise DatasetError(f"{where}: the score has no PrefDisco rows; is this the PrefDisco task?")
    rows.take_record(meta["run"], where)
    digest = rows.record["digest"] if rows.record else None
    for row in (sample.store or {}).get(TRANSCRIPTS) or []:
        check_transcript_row(row, f"{where}: transcript")
        rows.add(rows.transcripts, _same_digest(row, digest, where), where)
    for row in meta["rows"]:
        check_score_row(row, f"{where}: score row")
        rows.add(rows.scores, _same_digest(row, digest, where), where)
    return None


def _same_digest(row: dict[str, Any], digest: str | None, where: str) -> dict[str, Any]:
    if row.get("settings") != digest:
        raise DatasetError(
            f"{where}: episode {row.get('episode_id')} carries settings {row.get('settings')}, "
            f"its run record {digest}"
        )
    return row


def _earlier(rows: _Rows, out: Path) -> None:
    """The rows of a folder converted before (same settings only)."""
    if rows.record is None or not (out / "run.json").exists():
        return
    check_run_folder(out, rows.record["settings"])
    where = f"run folder {out}"
    for table, found in (
        (rows.transcripts, read_transcripts(out / "transcripts.jsonl", rows.record["digest"])),
        (rows.scores, read_scores(out / "scores.jsonl", rows.record["digest"])),
    ):
        for row in found.values():
            rows.add(table, row, where)


def _order(row: Mapping[str, Any]) -> tuple[str, str, str, int, str]:
    """Model, instance, then condition in our runner's order, then strategy."""
    return (
        str(row["model"]),
        str(row["persona_id"]),
        str(row["task_id"]),
        CONDITIONS.index(row["condition"]),
        str(row.get("strategy") or ""),
    )


def from_inspect(logs: Sequence[str | Path], out: str | Path) -> Converted:
    """Write the rows of PrefDisco inspect logs into the run folder ``out``.

    Args:
        logs: Log files (``.eval`` or ``.json``) of the inspect task.
        out: The run folder (created; one converted before takes logs of its settings).

    Returns:
        What was written.

    Raises:
        ConfigError: inspect-ai is not installed.
        DatasetError: A log is missing, unreadable or not of the PrefDisco task; a row fails
            the report's checks; the logs (or the folder) ran under other settings; or one
            episode appears twice with other content.
    """
    if not logs:
        raise DatasetError("from-inspect: no log given")
    folder = Path(out)
    rows = _Rows()
    skipped: list[tuple[str, str, str]] = []
    models: dict[str, None] = {}
    samples = 0
    for path in map(Path, logs):
        log = _read_log(path)
        models[str(log.eval.model)] = None
        for sample in log.samples or []:
            error = _sample(rows, sample, f"inspect log {path}, sample {sample.id}")
            if error is None:
                samples += 1
            else:
                skipped.append((str(path), str(sample.id), error))
    if rows.record is None:
        first = f"; the first error: {skipped[0][2]}" if skipped else ""
        raise DatasetError(
            f"{', '.join(map(str, logs))}: no scored PrefDisco sample ({len(skipped)} samples "
            f"ended in an error{first})"
        )
    output_dir(folder, "run folder", DatasetError)
    _earlier(rows, folder)
    record = dict(rows.record)
    record["inspect_logs"] = sorted({*_logs_of(folder), *(str(Path(p)) for p in logs)})
    write_json(folder / "run.json", record)
    write_jsonl(folder / "transcripts.jsonl", sorted(rows.transcripts.values(), key=_order))
    write_jsonl(folder / "scores.jsonl", sorted(rows.scores.values(), key=_order))
    return Converted(
        folder=str(folder),
        logs=tuple(str(p) for p in logs),
        models=tuple(models),
        samples=samples,
        episodes=len(rows.scores),
        skipped=tuple(skipped),
    )


def _logs_of(folder: Path) -> list[str]:
    """The logs an earlier conversion recorded in the folder's ``run.json``."""
    path = folder / "run.json"
    if not path.exists():
        return []
    stored = read_json(path, what="run settings")
    logs = stored.get("inspect_logs") if isinstance(stored, dict) else None
    return [str(x) for x in logs] if isinstance(logs, list) else []


__all__ = ["SCORER", "TRANSCRIPTS", "Converted", "from_inspect", "needs_inspect"]
