"""The run folder of a study: its settings, episode keys, result rows and summary.

::

    run.json           the settings every episode ran under (and their digest), the
                       router check, the interviewer's prior (digest, disjointness)
    interview-prior.json  the interviewer's learned prior (when the strategy runs)
    transcripts.jsonl  one line per episode (model x condition x instance)
    scores.jsonl       one line per scored episode
    llm-cache.sqlite   answers already paid for (the resume mechanism)
    llm-calls.jsonl    the call log

`episode_settings` are what an episode's requests depend on; their digest ties the rows to the
folder (`check_run_folder`, `read_scores`, `read_transcripts`). `write_rows` rewrites the rows
in canonical order at the end of a run, so the same config gives byte-identical files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefduel.prefdisco.config import RunConfig
from prefduel.prefdisco.dataset.folder import Dataset
from prefduel.prefdisco.dataset.personas import load_persona_space
from prefduel.prefdisco.dataset.tasks import Task
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.episodes import EpisodeKey, Transcript, settings_digest
from prefduel.prefdisco.errors import DatasetError
from prefduel.prefdisco.interviewer.prior import (
    InterviewPrior,
    check_disjoint,
    learn_prior,
    save_prior,
)
from prefduel.prefdisco.report.rows import RUN_FORMAT, check_transcript_row, load_scores
from prefduel.prefdisco.store import read_json, read_keyed_jsonl, write_jsonl
from prefduel.prefdisco.study.clients import RoleClients

PRIOR_FILE = "interview-prior.json"

#: Called after each finished episode with (done, total).
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class RunSummary:
    """What `run_study` did.

    Attributes:
        folder: The run folder.
        episodes: Episodes of the study (models x conditions x instances).
        reused: Already scored before this run (skipped).
        ran: Episodes run (or only scored) now.
        failed: ``(episode id, error)`` of episodes that could not finish (re-run them).
        missing_scores: Judgements recorded as missing (after all attempts).
        digest: Settings digest.
        stats: LLM call totals.
        router: The router check (`prefduel.prefdisco.episode.router_check.choose_router`).
    """

    folder: str
    episodes: int
    reused: int
    ran: int
    failed: tuple[tuple[str, str], ...]
    missing_scores: int
    digest: str
    stats: Mapping[str, Any]
    router: Mapping[str, Any] = field(default_factory=dict)


def episode_settings(
    dataset: Dataset,
    settings: RunConfig,
    backends: Mapping[str, str] | None = None,
    *,
    router: str | None = None,
) -> dict[str, Any]:
    """The settings an episode's requests depend on (not which models or conditions run).

    Args:
        dataset: The dataset.
        settings: Run settings.
        backends: Role group -> cache namespace of its client.
        router: The router resolved from ``settings.router`` (``keyword`` or ``llm``;
            default: ``settings.router`` as written).
    """
    router = router or settings.router
    return {
        "prompts": prompts.PROMPTS_VERSION,
        "dataset": dataset.digest,
        "taxonomy": dataset.taxonomy.digest,
        "max_turns": settings.max_turns,
        "ask_attempts": settings.ask_attempts,
        "follow_up_check": settings.follow_up_check,
        "interviewer": _plain(settings.interviewer),
        "user_style": settings.user_style,
        "router": router,
        "router_model": settings.router_model_name if router == "llm" else None,
        "max_attributes_per_question": settings.max_attributes_per_question,
        "tfidf_threshold": settings.tfidf_threshold,
        "judge_model": settings.judge_model,
        "grader_model": settings.grader_model_name,
        "judge_attempts": settings.judge_attempts,
        "judge_structured": settings.judge_structured,
        "grader_structured": settings.grader_structured,
        "temperature": settings.temperature,
        "judge_temperature": settings.judge_temperature,
        "ask_max_tokens": settings.ask_max_tokens,
        "answer_max_tokens": settings.answer_max_tokens,
        "judge_max_tokens": settings.judge_max_tokens,
        "max_tokens_param": settings.max_tokens_param,
        "api_seed": settings.api_seed,
        "backends": dict(sorted((backends or {}).items())),
    }


def _plain(obj: Any) -> Any:
    """A config dataclass as a JSON-ready ``dict``."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    return list(obj) if isinstance(obj, tuple) else obj


def episode_keys(dataset: Dataset, settings: RunConfig) -> list[EpisodeKey]:
    """Every episode, in canonical order: model, instance (file order), condition, and for
    discovery each strategy of ``settings.strategies``."""
    return [
        EpisodeKey(model, condition, persona_id, task_id, strategy)
        for model in settings.models
        for persona_id, task_id in dataset.profiles
        for condition in settings.conditions
        for strategy in (settings.strategies if condition == "discovery" else ("ask",))
    ]


def uses_interviewer(settings: RunConfig) -> bool:
    """Whether the run has interviewer episodes."""
    return "interviewer" in settings.strategies and "discovery" in settings.conditions


def interview_prior(
    dataset: Dataset, settings: RunConfig, out: Path
) -> tuple[InterviewPrior | None, dict[str, Any] | None]:
    """Learn the interviewer's prior (when the run has interviewer episodes) with the
    dataset's sparsity and persona space, check that none of its training personas is an
    evaluation persona, and save it as ``PRIOR_FILE``.

    Returns:
        The prior and its record for ``run.json`` (without the interviewer: None and the
        folder's earlier record, if any).

    Raises:
        DatasetError: The training personas overlap the evaluation ones, or the folder's
            interviewer episodes were made with another prior.
    """
    if not uses_interviewer(settings):
        return None, _stored_prior(out)
    generate = dataset.config.generate
    prior = learn_prior(
        dataset.taxonomy,
        settings.interviewer.prior,
        sparsity=generate.sparsity,
        space=load_persona_space(generate.persona_space),
    )
    checked = check_disjoint(prior, list(dataset.personas.values()))
    record = {
        "file": PRIOR_FILE,
        "digest": settings_digest(prior.to_json()),
        "seed": prior.training.seed,
        "training_personas": len(prior.training.persona_fingerprints),
        "evaluation_personas_checked_disjoint": checked,
    }
    old = _stored_prior(out)
    if old is not None and old.get("digest") != record["digest"]:
        raise DatasetError(
            f"{out} holds interviewer episodes made with another prior (digest "
            f"{old.get('digest')}, now {record['digest']}); use another run folder (--out)"
        )
    save_prior(out / PRIOR_FILE, prior)
    return prior, record


def _stored_prior(out: Path) -> dict[str, Any] | None:
    path = out / "run.json"
    if not path.exists():
        return None
    stored = read_json(path, what="run settings")
    record = stored.get("interviewer_prior") if isinstance(stored, dict) else None
    return dict(record) if isinstance(record, Mapping) else None


def backends_of(clients: RoleClients) -> dict[str, str]:
    return {
        group: str(getattr(getattr(clients, group), "namespace", type(getattr(clients, group))))
        for group in ("model", "user", "judge")
    }


def check_run_folder(out: Path, settings: dict[str, Any]) -> None:
    path = out / "run.json"
    if not path.exists():
        return
    previous = read_json(path, what="run settings")
    old = previous.get("settings") if isinstance(previous, dict) else None
    if old != settings:
        changed = sorted(
            k for k in set(old or {}) | set(settings) if (old or {}).get(k) != settings.get(k)
        )
        raise DatasetError(
            f"{out} holds results made with other settings (changed: {', '.join(changed)}); "
            "use another run folder (--out) or delete its run.json, transcripts.jsonl and "
            "scores.jsonl"
        )


def read_scores(path: Path, digest: str) -> dict[str, dict[str, Any]]:
    """Episode id -> score row of a run folder's score file (every row checked,
    `prefduel.prefdisco.report.rows.load_scores`; none if the file does not exist yet)."""
    if not path.exists():
        return {}
    return {row["episode_id"]: row for row in load_scores(path, digest=digest)}


def read_transcripts(
    path: Path, digest: str, tasks: Mapping[str, Task] | None = None
) -> dict[str, dict[str, Any]]:
    """Episode id -> transcript row of a run folder's transcript file (each row checked,
    `prefduel.prefdisco.report.rows.check_transcript_row`, one row per episode; none if the
    file does not exist yet).

    Args:
        path: The file.
        digest: The run's settings digest; every row must carry it.
        tasks: The dataset's tasks: a row of one of them must carry its source and domain.

    Raises:
        DatasetError: A malformed row, a row of other settings or of another task source,
            or two rows of one episode with other content (names file and line).
    """
    if not path.exists():
        return {}
    rows = {}
    what = "transcript file"
    for number, row in read_keyed_jsonl(path, ("episode_id",), what=what, allow_torn_tail=True):
        where = f"{what} {path}, line {number}"
        check_transcript_row(row, where)
        task = (tasks or {}).get(row["task_id"])
        if task is not None and (row["source"], row["domain"]) != (task.source, task.domain):
            raise DatasetError(
                f"{where}: task {task.id} has source {row['source']!r} and domain "
                f"{row['domain']!r} here, {task.source!r} and {task.domain!r} in the dataset"
            )
        transcript = Transcript.from_json(row, where=where)
        if transcript.key.id != row["episode_id"]:
            raise DatasetError(
                f"{where}: episode_id {row['episode_id']!r} is not its model, condition, "
                f"persona and task ({transcript.key.id!r})"
            )
        if transcript.settings != digest:
            raise DatasetError(
                f"{where}: episode {row['episode_id']} was made with settings "
                f"{transcript.settings}, not {digest}; use another run folder"
            )
        rows[row["episode_id"]] = row
    return rows


def write_rows(
    out: Path,
    keys: list[EpisodeKey],
    transcripts: Mapping[str, Mapping[str, Any]],
    scores: Mapping[str, Mapping[str, Any]],
) -> int:
    """Rewrite ``transcripts.jsonl`` and ``scores.jsonl`` in canonical order (episode order,
    then rows of episodes no longer in the study by id); return the missing judgements."""
    order = {k.id: i for i, k in enumerate(keys)}

    def rank(row: Mapping[str, Any]) -> tuple[int, str]:
        return (order.get(row["episode_id"], len(order)), row["episode_id"])

    write_jsonl(out / "transcripts.jsonl", sorted(transcripts.values(), key=rank))
    write_jsonl(out / "scores.jsonl", sorted(scores.values(), key=rank))
    return sum(
        1 for row in scores.values() for s in (row.get("scores") or {}).values() if s is None
    )


def money(amount: float) -> str:
    """An amount with 4 decimals (6 below a cent, so small costs do not show as 0)."""
    return f"{amount:,.4f}" if amount == 0 or amount >= 0.01 else f"{amount:.6f}"


def calls_line(stats: Mapping[str, Any]) -> str:
    """One line of LLM call totals (`RoleClients.stats`)."""
    if not stats:
        return "LLM calls: none"
    return (
        f"LLM calls: {stats['requests']:,} requests, {stats['hits']:,} from the cache, "
        f"{stats['answered']:,} answered, {stats['failed']:,} failed, {stats['retries']:,} "
        f"retries; {stats['prompt_tokens']:,} + {stats['completion_tokens']:,} tokens; cost "
        f"{money(stats['cost'])} {stats['currency']}"
    )


__all__ = [
    "PRIOR_FILE",
    "RUN_FORMAT",
    "Progress",
    "RunSummary",
    "backends_of",
    "calls_line",
    "check_run_folder",
    "episode_keys",
    "episode_settings",
    "interview_prior",
    "money",
    "read_scores",
    "read_transcripts",
    "uses_interviewer",
    "write_rows",
]
