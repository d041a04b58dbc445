"""The study pipeline: generate a dataset, run episodes and scoring (resumable), load results.

::

    config = load_config("study.yaml")                 # or PrefDiscoConfig() for the demo
    generate_dataset(config, "out")                    # personas, tasks, profiles, rubrics
    dataset = load_dataset("out")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    clients = clients_from_config(config, "out", handlers=handlers,
                                  groups=("model", "judge"))
    run_study(dataset, config.run, clients, "out")     # transcripts.jsonl, scores.jsonl
    clients.close()

**Dataset folder** (written by `generate_dataset`, all deterministic in the config)::

    manifest.json      format, config, taxonomy version and digest, counts, file digests
    taxonomy.yaml      the taxonomy used (a copy, so the folder is self-contained)
    personas.jsonl     the persona library
    tasks.jsonl        the tasks (normalized ``generic`` shape plus source and meta)
    preferences.jsonl  one hidden profile per (persona, task) instance
    rubrics.jsonl      a rubric per (attribute, value) of the taxonomy

**Run folder** (written by `run_study`; default: the dataset folder)::

    run.json           the settings every episode ran under (and their digest)
    transcripts.jsonl  one line per episode (model x condition x instance)
    scores.jsonl       one line per scored episode
    llm-cache.sqlite   answers already paid for (the resume mechanism)
    llm-calls.jsonl    the call log

The stages: ``generate`` samples the dataset (`prefduel.prefdisco.dataset`), then asks the LLM
for backstories and refined rubrics (optional); ``run`` works on the episodes still unscored
(`prefduel.llm.stages.each`), each a conversation with the model under test and the
simulated user, then its judgements (every call through the stage engine,
`prefduel.llm.stages`). `generate_from_config` and `run_from_config` add the clients the
config asks for (and a progress bar), as the command line does.

Results are appended as episodes finish (a kill loses at most the episodes in flight, whose
paid calls are in the cache) and rewritten in canonical order at the end, so the same config
gives byte-identical files. Re-running skips scored episodes; an episode with a transcript but
no score is only scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefduel.llm.client import run_sync
from prefduel.llm.estimate import estimate_cost
from prefduel.llm.prices import load_prices
from prefduel.llm.request import LLMRequest
from prefduel.llm.stages import ProgressBar, each
from prefduel.prefdisco import prompts
from prefduel.prefdisco.clients import (
    CACHE_FILE,
    CALL_LOG_FILE,
    NoClient,
    RoleClients,
    clients_from_config,
    default_handlers,
)
from prefduel.prefdisco.config import PrefDiscoConfig, RunConfig
from prefduel.prefdisco.dataset import (
    DATA_FILES,
    MANIFEST_FORMAT,
    Dataset,
    DatasetParts,
    GenerateSummary,
    data_digest,
    load_dataset,
    load_task_sources,
    pair_instances,
    sample_dataset,
    write_dataset,
)
from prefduel.prefdisco.episodes import (
    EpisodeContext,
    EpisodeKey,
    Transcript,
    answer_request,
    ask_request,
    oracle_info,
    run_episode,
    settings_digest,
)
from prefduel.prefdisco.errors import ConfigError, EpisodeError
from prefduel.prefdisco.judging import (
    JudgeContext,
    grader_request,
    judge_request,
    score_transcript,
)
from prefduel.prefdisco.personas import enrich_personas
from prefduel.prefdisco.rubrics import refine_rubrics
from prefduel.prefdisco.store import JsonlAppender, read_jsonl, write_json
from prefduel.prefdisco.study import (
    RUN_FORMAT,
    Progress,
    RunSummary,
    backends_of,
    check_run_folder,
    episode_keys,
    episode_settings,
    money,
    read_rows,
    write_rows,
)
from prefduel.prefdisco.taxonomy import load_taxonomy
from prefduel.prefdisco.user import KeywordRouter, LLMRouter, Router

# -- generate --------------------------------------------------------------------------------


async def _llm_parts(parts: DatasetParts, config: PrefDiscoConfig, clients: RoleClients) -> None:
    """The generate stages: backstories, then refined rubrics of the values profiles use."""
    gen = config.generate
    used = parts.used_values()
    try:
        if gen.enrich:
            parts.personas = await enrich_personas(
                parts.personas, clients.generate, gen.model, temperature=gen.temperature
            )
        if gen.refine_rubrics:
            parts.refined = await refine_rubrics(
                {k: parts.rubrics[k] for k in used}, parts.taxonomy, clients.generate, gen.model
            )
    finally:
        await clients.release()


def generate_dataset(
    config: PrefDiscoConfig,
    folder: str | Path,
    clients: RoleClients | None = None,
) -> GenerateSummary:
    """Generate personas, tasks, hidden profiles and rubrics into ``folder``.

    Args:
        config: The study config (its ``generate`` section; the whole config is stored).
        folder: Output folder (created).
        clients: Needed for ``enrich`` / ``refine_rubrics`` (the ``generate`` group).

    Returns:
        A summary.

    Raises:
        ConfigError: Enrichment or refinement requested without clients.
        EpisodeError: An LLM call failed after its retries (run again to resume).
    """
    gen = config.generate
    if (gen.enrich or gen.refine_rubrics) and clients is None:
        raise ConfigError("generate: enrich / refine_rubrics need LLM clients")
    parts = sample_dataset(gen)
    if clients is not None and (gen.enrich or gen.refine_rubrics):
        run_sync(_llm_parts(parts, config, clients))
        parts.rubrics.update(parts.refined)
    return write_dataset(folder, config, parts, clients.stats() if clients is not None else {})


def generate_from_config(config: PrefDiscoConfig, folder: str | Path) -> GenerateSummary:
    """`generate_dataset` with the clients the config asks for (the ``generate`` group, only
    for ``enrich`` / ``refine_rubrics``; the cache and call log default to ``folder``)."""
    gen = config.generate
    clients = None
    if gen.enrich or gen.refine_rubrics:
        handlers = default_handlers(load_taxonomy(gen.taxonomy), load_task_sources(gen))
        clients = clients_from_config(config, folder, handlers=handlers, groups=("generate",))
    try:
        return generate_dataset(config, folder, clients)
    finally:
        if clients is not None:
            clients.close()


# -- run -------------------------------------------------------------------------------------


def _router(dataset: Dataset, settings: RunConfig, clients: RoleClients) -> Router:
    if settings.router == "llm":
        return LLMRouter(
            dataset.taxonomy,
            clients.user,
            settings.router_model_name,
            max_attributes=settings.max_attributes_per_question,
            params=settings.params("router"),
        )
    return KeywordRouter(
        dataset.taxonomy,
        max_attributes=settings.max_attributes_per_question,
        tfidf_threshold=settings.tfidf_threshold or None,
    )


@dataclass
class _Episodes:
    """The episode stage: each unscored episode is run (unless its transcript is stored) and
    scored; rows are appended as they finish, failures collected."""

    episode: EpisodeContext
    judge: JudgeContext
    transcripts: dict[str, dict[str, Any]]
    scores: dict[str, dict[str, Any]]
    failed: list[tuple[str, str]] = field(default_factory=list)

    async def one(self, key: EpisodeKey, t_out: JsonlAppender, s_out: JsonlAppender) -> None:
        """Run (or reuse the transcript of) one episode and score it."""
        try:
            row = self.transcripts.get(key.id)
            if row is not None:
                transcript = Transcript.from_json(row, where=f"transcript {key.id}")
            else:
                transcript = await run_episode(key, self.episode)
                self.transcripts[key.id] = transcript.to_json()
                t_out.write(self.transcripts[key.id])
            score = await score_transcript(transcript, self.judge)
            self.scores[key.id] = score.to_json()
            s_out.write(self.scores[key.id])
        except EpisodeError as exc:
            self.failed.append((key.id, str(exc)))

    async def run(
        self, todo: list[EpisodeKey], out: Path, clients: RoleClients, progress: Progress | None
    ) -> None:
        """Every episode of ``todo``, ``episodes_in_flight`` at once."""
        try:
            with (
                JsonlAppender(out / "transcripts.jsonl") as t_out,
                JsonlAppender(out / "scores.jsonl") as s_out,
            ):
                await each(
                    todo,
                    lambda key: self.one(key, t_out, s_out),
                    in_flight=self.episode.settings.episodes_in_flight,
                    progress=progress,
                )
        finally:
            await clients.release()


def _episodes(
    dataset: Dataset, settings: RunConfig, clients: RoleClients, out: Path, digest: str
) -> _Episodes:
    """The episode stage of a run folder: its stored rows, and what episodes and judging
    need."""
    transcripts = read_rows(out / "transcripts.jsonl", "transcript file", digest)
    scores = read_rows(out / "scores.jsonl", "score file", digest)
    episode = EpisodeContext(
        dataset.taxonomy,
        dataset.tasks,
        dataset.profiles,
        settings,
        digest,
        clients.model,
        _router(dataset, settings, clients),
    )
    judge = JudgeContext(
        dataset.taxonomy, dataset.tasks, dataset.profiles, dataset.rubrics, settings, clients.judge
    )
    return _Episodes(episode, judge, transcripts, scores)


def run_study(
    dataset: Dataset,
    settings: RunConfig,
    clients: RoleClients,
    folder: str | Path,
    *,
    progress: Progress | None = None,
) -> RunSummary:
    """Run (or resume) every episode of the study and score it.

    Args:
        dataset: The loaded dataset.
        settings: Run settings.
        clients: LLM clients by role group.
        folder: Run folder (created; may be the dataset folder).
        progress: Called with ``(done, total)`` after each episode.

    Returns:
        The summary; episodes whose calls failed are listed in ``failed`` and are retried by
        the next run.

    Raises:
        DatasetError: The folder holds results made with other settings.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    conf = episode_settings(dataset, settings, backends_of(clients))
    digest = settings_digest(conf)
    check_run_folder(out, conf)
    write_json(out / "run.json", {"format": RUN_FORMAT, "settings": conf, "digest": digest})
    keys = episode_keys(dataset, settings)
    episodes = _episodes(dataset, settings, clients, out, digest)
    todo = [k for k in keys if k.id not in episodes.scores]
    if todo:
        run_sync(episodes.run(todo, out, clients, progress))
    return RunSummary(
        folder=str(out),
        episodes=len(keys),
        reused=len(keys) - len(todo),
        ran=len(todo) - len(episodes.failed),
        failed=tuple(sorted(episodes.failed)),
        missing_scores=write_rows(out, keys, episodes.transcripts, episodes.scores),
        digest=digest,
        stats=clients.stats(),
    )


def run_from_config(
    dataset: Dataset, config: PrefDiscoConfig, folder: str | Path, *, progress: bool = True
) -> RunSummary:
    """`run_study` with the clients the config asks for (scripted handlers of the dataset for
    groups on the scripted backend) and a progress bar on stderr (made at the first finished
    episode, so a finished study shows none)."""
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    groups = ("model", "judge", "user") if config.run.router == "llm" else ("model", "judge")
    clients = clients_from_config(config, folder, handlers=handlers, groups=groups)
    bar = ProgressBar("prefdisco", "episode", enabled=progress)

    def show(done: int, total: int) -> None:
        stats = clients.stats()
        bar.show(done, total, cost=money(stats["cost"]), calls=stats["answered"])

    try:
        return run_study(dataset, config.run, clients, folder, progress=show)
    finally:
        bar.close()
        clients.close()


def _most_requests(
    key: EpisodeKey, dataset: Dataset, settings: RunConfig, router: LLMRouter, answer: str
) -> list[LLMRequest]:
    """An upper bound on an episode's requests: every question asked (and routed), one
    judgement per hidden attribute and the grader, each on a placeholder ``answer``."""
    task = dataset.tasks[key.task_id]
    profile = dataset.profiles[(key.persona_id, key.task_id)]
    block = prompts.task_block(task.question, task.options)
    info = prompts.info_baseline()
    requests = []
    if key.condition == "discovery":
        requests += [ask_request(key, block, [], settings)] * settings.max_turns
        if settings.router == "llm":
            requests += [router.request(dataset.taxonomy.attributes[0].question)] * (
                settings.max_turns
            )
        info = oracle_info(profile, dataset.taxonomy)
    elif key.condition == "oracle":
        info = oracle_info(profile, dataset.taxonomy)
    requests.append(answer_request(key, task, info, settings))
    for p in profile:
        rubric = dataset.rubrics[(p.attribute, p.value)]
        requests.append(judge_request(task, answer, rubric, dataset.taxonomy, settings))
    requests.append(grader_request(task, answer, settings))
    return requests


def estimate_run(dataset: Dataset, config: PrefDiscoConfig, folder: str | Path) -> dict[str, Any]:
    """Count the episodes still to run and estimate their calls and cost (``--dry-run``).

    The estimate is an upper bound in calls (every question asked, every judgement retried
    never, one grader call per episode) and uses each request's ``max_tokens`` as its
    completion length; answers already in the cache are not discounted.
    """
    settings = config.run
    keys = episode_keys(dataset, settings)
    path = Path(folder) / "scores.jsonl"
    scored = (
        {str(r["episode_id"]) for r in read_jsonl(path, what="score file", allow_torn_tail=True)}
        if path.exists()
        else set()
    )
    todo = [k for k in keys if k.id not in scored]
    placeholder = "x" * 4 * (settings.answer_max_tokens or 1024)
    router = LLMRouter(
        dataset.taxonomy, NoClient(), settings.router_model_name, params=settings.params("router")
    )
    requests = [
        r for key in todo for r in _most_requests(key, dataset, settings, router, placeholder)
    ]
    estimate = estimate_cost(requests, prices=load_prices(config.llm_for("model").prices))
    return {
        "episodes": len(keys),
        "scored": len(keys) - len(todo),
        "to_run": len(todo),
        "max_calls": estimate.calls,
        "prompt_tokens": estimate.prompt_tokens,
        "completion_tokens": estimate.completion_tokens,
        "cost": estimate.cost,
        "currency": estimate.currency,
        "unpriced": list(estimate.unpriced_models),
    }


__all__ = [
    "CACHE_FILE",
    "CALL_LOG_FILE",
    "DATA_FILES",
    "MANIFEST_FORMAT",
    "RUN_FORMAT",
    "Dataset",
    "GenerateSummary",
    "Progress",
    "RoleClients",
    "RunSummary",
    "clients_from_config",
    "data_digest",
    "default_handlers",
    "episode_keys",
    "episode_settings",
    "estimate_run",
    "generate_dataset",
    "generate_from_config",
    "load_dataset",
    "load_task_sources",
    "pair_instances",
    "run_from_config",
    "run_study",
]
