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

    run.json           the settings every episode ran under (and their digest), the
                       router check, the interviewer's prior (digest, disjointness)
    interview-prior.json  the interviewer's prior (learned when run.strategies has it)
    transcripts.jsonl  one line per episode (model x condition x instance)
    scores.jsonl       one line per scored episode
    llm-cache.sqlite   answers already paid for (the resume mechanism)
    llm-calls.jsonl    the call log

The stages: ``generate`` samples the dataset (`prefduel.prefdisco.dataset.folder`), then asks
the LLM for backstories and refined rubrics (optional, two stages of the stage engine); ``run``
resolves the router
(`prefduel.prefdisco.episode.router_check`), then works on the episodes still unscored
(`prefduel.llm.concurrency.each`), each a conversation with the model under
test and the simulated user, then its judgements (every call through the stage engine,
`prefduel.llm.stages`; each row records its own calls, `prefduel.prefdisco.study.calls`). A
discovery episode runs by its strategy: ``ask``
(`prefduel.prefdisco.episode.episodes.run_episode`) or ``interviewer``
(`prefduel.prefdisco.interviewer.strategy.run_interview`, with the prior learned at the start of
the run from personas disjoint from the dataset's, `run_folder.interview_prior`).
`generate_from_config` and `run_from_config` add the clients the config asks for (and a
progress bar), as the command line does.

Results are appended as episodes finish (a kill loses at most the episodes in flight, whose
paid calls are in the cache) and rewritten in canonical order at the end, so the same config
gives byte-identical files. Re-running skips scored episodes; an episode with a transcript but
no score is only scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefduel.core.outputs import output_dir, output_file
from prefduel.llm.client import run_sync
from prefduel.llm.concurrency import each
from prefduel.llm.request import Completer
from prefduel.llm.stages import ProgressBar
from prefduel.prefdisco.config import PrefDiscoConfig, RunConfig
from prefduel.prefdisco.dataset.folder import (
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
from prefduel.prefdisco.dataset.taxonomy import load_taxonomy
from prefduel.prefdisco.dataset.writer import enrich_personas, refine_rubrics
from prefduel.prefdisco.episode.episodes import (
    EpisodeContext,
    EpisodeKey,
    Transcript,
    run_episode,
    settings_digest,
)
from prefduel.prefdisco.episode.judging import JudgeContext, score_transcript
from prefduel.prefdisco.episode.router_check import choose_router
from prefduel.prefdisco.episode.routing import Router
from prefduel.prefdisco.errors import ConfigError, DatasetError, EpisodeError
from prefduel.prefdisco.interviewer.strategy import run_interview
from prefduel.prefdisco.store import JsonlAppender, write_json
from prefduel.prefdisco.study.calls import finish_reasons, in_order, metered, recording, usage_of
from prefduel.prefdisco.study.clients import (
    CACHE_FILE,
    CALL_LOG_FILE,
    RoleClients,
    clients_from_config,
    default_handlers,
    output_files,
)
from prefduel.prefdisco.study.estimate import estimate_run
from prefduel.prefdisco.study.run_folder import (
    RUN_FORMAT,
    Progress,
    RunSummary,
    backends_of,
    check_run_folder,
    episode_keys,
    episode_settings,
    interview_prior,
    money,
    read_scores,
    read_transcripts,
    write_rows,
)

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
    output_dir(folder, "dataset folder", DatasetError)
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
    llm = gen.enrich or gen.refine_rubrics
    _refuse_a_run_folder(folder)
    check_outputs(config, folder, "dataset folder", ("generate",) if llm else ())
    if llm:
        handlers = default_handlers(load_taxonomy(gen.taxonomy), load_task_sources(gen))
        clients = clients_from_config(config, folder, handlers=handlers, groups=("generate",))
    try:
        return generate_dataset(config, folder, clients)
    finally:
        if clients is not None:
            clients.close()


#: Files a run writes into a folder; a new dataset there would orphan them.
RUN_FILES = ("run.json", "transcripts.jsonl", "scores.jsonl")


def _refuse_a_run_folder(folder: str | Path) -> None:
    """Refuse to write a dataset over a folder that holds a run: the run's rows would no longer
    match the dataset's digest, so a later run or report would refuse them.

    Raises:
        DatasetError: naming the folder and the run files found.
    """
    found = [name for name in RUN_FILES if (Path(folder) / name).exists()]
    if found:
        raise DatasetError(
            f"dataset folder {folder} holds a run ({', '.join(found)}); a new dataset there "
            "would orphan its results. Generate into another folder, or move the run away first"
        )


def check_outputs(
    config: PrefDiscoConfig, folder: str | Path, what: str, groups: tuple[str, ...]
) -> None:
    """Check, before any work or call, that the output folder and every answer cache and call
    log of the clients of ``groups`` can be written.

    Raises:
        DatasetError: A path is an existing file where a folder is needed (or the reverse), a
            device, or cannot be created or written (names it and what it is for).
    """
    output_dir(folder, what, DatasetError)
    for path, kind in output_files(config, folder, groups):
        output_file(path, kind, DatasetError)


# -- run -------------------------------------------------------------------------------------


def _scripted(client: Completer) -> bool:
    return getattr(client, "namespace", None) == "scripted"


def _episode_error(key: EpisodeKey, exc: EpisodeError) -> str:
    """The error of a failed episode without the episode id (the summary pairs them)."""
    message = str(exc)
    for prefix in (f"episode {key.id}: ", f"{key.id}: "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message


@dataclass
class _Episodes:
    """The episode stage: each unscored episode is run (unless its transcript is stored) and
    scored; rows are appended as they finish, failures collected."""

    episode: EpisodeContext
    judge: JudgeContext
    transcripts: dict[str, dict[str, Any]]
    scores: dict[str, dict[str, Any]]
    failed: list[tuple[str, str]] = field(default_factory=list)

    async def _transcript(self, key: EpisodeKey, t_out: JsonlAppender) -> Transcript:
        row = self.transcripts.get(key.id)
        if row is not None:
            return Transcript.from_json(row, where=f"transcript {key.id}")
        with recording() as calls:
            if key.strategy == "interviewer":
                transcript = (await run_interview(key, self.episode)).transcript
            else:
                transcript = await run_episode(key, self.episode)
        transcript = replace(transcript, calls=tuple(calls))
        self.transcripts[key.id] = transcript.to_json()
        t_out.write(self.transcripts[key.id])
        return transcript

    async def one(self, key: EpisodeKey, t_out: JsonlAppender, s_out: JsonlAppender) -> None:
        """Run (or reuse the transcript of) one episode and score it."""
        try:
            transcript = await self._transcript(key, t_out)
            with recording() as scoring:
                score = await score_transcript(transcript, self.judge)
            calls = in_order(scoring)
            everything = [*transcript.calls, *calls]
            score = replace(
                score,
                usage=usage_of(everything),
                finish_reasons=finish_reasons(everything),
                calls=calls,
            )
            self.scores[key.id] = score.to_json()
            s_out.write(self.scores[key.id])
        except EpisodeError as exc:
            self.failed.append((key.id, _episode_error(key, exc)))

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


async def _choose_router(
    dataset: Dataset, settings: RunConfig, clients: RoleClients
) -> tuple[Router, dict[str, Any]]:
    """`choose_router` on the user group's client, released at the end of the loop."""
    try:
        return await choose_router(
            dataset.taxonomy,
            settings,
            metered(clients.user),
            scripted_user=_scripted(clients.user),
        )
    finally:
        await clients.release()


def _episodes(
    dataset: Dataset,
    settings: RunConfig,
    clients: RoleClients,
    router: Router,
    stored: tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]],
    digest: str,
    prior: Any = None,
) -> _Episodes:
    """The episode stage of a run folder: its stored rows, and what episodes and judging
    need (every client metered, so each row carries its own calls)."""
    episode = EpisodeContext(
        dataset.taxonomy,
        dataset.tasks,
        dataset.profiles,
        settings,
        digest,
        metered(clients.model),
        router,
        prior,
    )
    judge = JudgeContext(
        dataset.taxonomy,
        dataset.tasks,
        dataset.profiles,
        dataset.rubrics,
        settings,
        metered(clients.judge),
    )
    return _Episodes(episode, judge, *stored)


def _open_run_folder(
    dataset: Dataset, settings: RunConfig, clients: RoleClients, out: Path
) -> tuple[Router, dict[str, Any], str, Any]:
    """Resolve the router, check the folder's settings, learn the interviewer's prior (if
    any) and write ``run.json``: (router, router check, settings digest, prior)."""
    output_dir(out, "run folder", DatasetError)
    router, check = run_sync(_choose_router(dataset, settings, clients))
    conf = episode_settings(dataset, settings, backends_of(clients), router=router.name)
    digest = settings_digest(conf)
    check_run_folder(out, conf)
    prior, prior_record = interview_prior(dataset, settings, out)
    run_json = {"format": RUN_FORMAT, "settings": conf, "digest": digest, "router_check": check}
    if prior_record is not None:
        run_json["interviewer_prior"] = prior_record
    write_json(out / "run.json", run_json)
    return router, check, digest, prior


def run_study(
    dataset: Dataset,
    settings: RunConfig,
    clients: RoleClients,
    folder: str | Path,
    *,
    progress: Progress | None = None,
) -> RunSummary:
    """Run (or resume) every episode of the study and score it.

    The router is resolved first (`prefduel.prefdisco.episode.router_check.choose_router`: ``auto``
    measures the routers on the labelled questions when the user group is a real endpoint);
    its measurements go into ``run.json``. With the ``interviewer`` strategy its prior is
    learned next (`prefduel.prefdisco.study.run_folder.interview_prior`: disjoint personas checked,
    saved in the folder, its digest in ``run.json``).

    Args:
        dataset: The loaded dataset.
        settings: Run settings.
        clients: LLM clients by role group.
        folder: Run folder (created; may be the dataset folder).
        progress: Called with ``(done, total)`` after each episode.

    Returns:
        The summary; episodes whose calls failed are listed in ``failed`` (with the error,
        which does not repeat the episode id) and are retried by the next run.

    Raises:
        DatasetError: The folder holds results made with other settings (or another
            interviewer prior), or the prior's training personas overlap the dataset's.
        EpisodeError: A call of the router check failed after its retries.
    """
    out = Path(folder)
    router, check, digest, prior = _open_run_folder(dataset, settings, clients, out)
    keys = episode_keys(dataset, settings)
    stored = (
        read_transcripts(out / "transcripts.jsonl", digest, dataset.tasks),
        read_scores(out / "scores.jsonl", digest),
    )
    episodes = _episodes(dataset, settings, clients, router, stored, digest, prior)
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
        router=check,
    )


def run_groups(config: PrefDiscoConfig) -> tuple[str, ...]:
    """The role groups ``run`` needs: model and judge, and the user group unless the keyword
    router is named (``auto`` may measure the LLM router)."""
    return ("model", "judge") if config.run.router == "keyword" else ("model", "judge", "user")


def run_from_config(
    dataset: Dataset, config: PrefDiscoConfig, folder: str | Path, *, progress: bool = True
) -> RunSummary:
    """`run_study` with the clients the config asks for (scripted handlers of the dataset for
    groups on the scripted backend) and a progress bar on stderr (made at the first finished
    episode, so a finished study shows none)."""
    check_outputs(config, folder, "run folder", run_groups(config))
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    clients = clients_from_config(config, folder, handlers=handlers, groups=run_groups(config))
    bar = ProgressBar("prefdisco", "episode", enabled=progress)

    def show(done: int, total: int) -> None:
        stats = clients.stats()
        bar.show(done, total, cost=money(stats["cost"]), calls=stats["answered"])

    try:
        return run_study(dataset, config.run, clients, folder, progress=show)
    finally:
        bar.close()
        clients.close()


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
    "check_outputs",
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
    "run_groups",
    "run_study",
]
