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

Results are appended as episodes finish (a kill loses at most the episodes in flight, whose
paid calls are in the cache) and rewritten in canonical order at the end, so the same config
gives byte-identical files. Re-running skips scored episodes; an episode with a transcript but
no score is only scored.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from prefduel import __version__
from prefduel.core.rng import stream
from prefduel.llm.client import LLMClient, estimate_cost, run_sync
from prefduel.llm.config import make_client
from prefduel.llm.prices import load_prices
from prefduel.llm.request import Completer
from prefduel.llm.scripted import Handler
from prefduel.prefdisco import prompts
from prefduel.prefdisco.config import (
    ROLE_GROUPS,
    GenerateConfig,
    PrefDiscoConfig,
    RunConfig,
    config_from_json,
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
from prefduel.prefdisco.errors import ConfigError, DatasetError, EpisodeError
from prefduel.prefdisco.judging import (
    JudgeContext,
    grader_request,
    judge_request,
    score_transcript,
)
from prefduel.prefdisco.personas import (
    Persona,
    enrich_personas,
    load_persona_space,
    load_personas,
    sample_personas,
    save_personas,
)
from prefduel.prefdisco.preferences import (
    PreferenceProfile,
    load_profiles,
    sample_profiles,
    save_profiles,
)
from prefduel.prefdisco.rubrics import (
    Rubric,
    build_rubrics,
    load_rubrics,
    refine_rubrics,
    save_rubrics,
)
from prefduel.prefdisco.scripted import scripted_handlers
from prefduel.prefdisco.store import (
    JsonlAppender,
    read_json,
    read_jsonl,
    write_json,
    write_jsonl,
)
from prefduel.prefdisco.tasks import Task, builtin_tasks, check_unique, load_tasks
from prefduel.prefdisco.taxonomy import Taxonomy, load_taxonomy, taxonomy_from_json
from prefduel.prefdisco.user import KeywordRouter, LLMRouter, Router

MANIFEST_FORMAT = "prefduel/prefdisco-dataset/1"
RUN_FORMAT = "prefduel/prefdisco-run/1"
DATA_FILES = (
    "taxonomy.yaml",
    "personas.jsonl",
    "tasks.jsonl",
    "preferences.jsonl",
    "rubrics.jsonl",
)
CACHE_FILE = "llm-cache.sqlite"
CALL_LOG_FILE = "llm-calls.jsonl"

#: Called after each finished episode with (done, total).
Progress = Callable[[int, int], None]


# -- clients ---------------------------------------------------------------------------------


class _NoClient:
    """A placeholder completer for building requests without sending them."""

    async def complete(self, request: Any) -> Any:
        raise EpisodeError("no client: requests are only built here, not sent")


@dataclass
class RoleClients:
    """One `Completer` per role group.

    Attributes:
        model: Model under test (roles ask, answer).
        user: Simulated user's LLM router (role router).
        judge: Judge and grader.
        generate: Persona enrichment and rubric refinement.
    """

    model: Completer
    user: Completer
    judge: Completer
    generate: Completer

    @classmethod
    def single(cls, client: Completer) -> RoleClients:
        """The same client for every group."""
        return cls(client, client, client, client)

    def distinct(self) -> list[Completer]:
        """The distinct clients, in group order."""
        out: list[Completer] = []
        for client in (self.model, self.user, self.judge, self.generate):
            if all(client is not c for c in out):
                out.append(client)
        return out

    async def release(self) -> None:
        """Release loop-bound backend resources (call at the end of each event loop)."""
        for client in self.distinct():
            backend = getattr(client, "backend", None)
            if backend is not None:
                await backend.aclose()

    def close(self) -> None:
        """Close call logs and owned caches of the `LLMClient` s."""
        for client in self.distinct():
            if isinstance(client, LLMClient):
                client.close()

    def stats(self) -> dict[str, Any]:
        """Calls, hits, failures, tokens and cost summed over the distinct clients."""
        total: dict[str, Any] = {
            "requests": 0,
            "hits": 0,
            "answered": 0,
            "failed": 0,
            "retries": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost": 0.0,
            "currency": "USD",
        }
        for client in self.distinct():
            if isinstance(client, LLMClient):
                s = client.stats()
                for key in (
                    "requests",
                    "hits",
                    "answered",
                    "failed",
                    "retries",
                    "prompt_tokens",
                    "completion_tokens",
                ):
                    total[key] += getattr(s, key)
                total["cost"] += s.cost
                total["currency"] = client.prices.currency
        return total


def _models_by_group(config: PrefDiscoConfig) -> dict[str, list[str]]:
    run = config.run
    return {
        "model": list(run.models),
        "user": [run.router_model_name] if run.router == "llm" else [],
        "judge": [run.judge_model, run.grader_model_name],
        "generate": (
            [config.generate.model]
            if config.generate.enrich or config.generate.refine_rubrics
            else []
        ),
    }


def clients_from_config(
    config: PrefDiscoConfig,
    folder: str | Path,
    *,
    handlers: Mapping[str, Handler] | None = None,
    groups: Sequence[str] = tuple(ROLE_GROUPS),
) -> RoleClients:
    """Build the clients of the role groups a command needs from the config's LLM sections.

    The cache defaults to ``folder/llm-cache.sqlite`` and the call log to
    ``folder/llm-calls.jsonl`` (unless the config names others). Groups with equal settings
    share one client; groups not in ``groups`` get the first built client (and are unused).

    Args:
        config: The study config.
        folder: The output folder.
        handlers: Scripted handlers (used by groups on the scripted backend).
        groups: The groups to build (``run`` needs model, judge and, with the LLM router,
            user; ``generate`` needs generate).

    Raises:
        ConfigError: A group on a real endpoint names a ``scripted-*`` model, or an unknown
            group.
        LLMConfigError: An endpoint is misconfigured (e.g. its API-key variable is unset).
    """
    folder = Path(folder)
    unknown = [g for g in groups if g not in ROLE_GROUPS]
    if unknown or not groups:
        raise ConfigError(f"groups: expected some of {sorted(ROLE_GROUPS)}, got {list(groups)}")
    models = _models_by_group(config)
    made: dict[Any, LLMClient] = {}
    chosen: dict[str, LLMClient] = {}
    for group in groups:
        cfg = config.llm_for(group)
        scripted = [m for m in models[group] if m.startswith("scripted-")]
        if cfg.backend != "scripted" and scripted:
            raise ConfigError(
                f"the {group} group uses the {cfg.backend} backend but names scripted "
                f"models {scripted}; set the model names for a real endpoint (run.models, "
                "run.judge_model, ...) in the config or on the command line"
            )
        if cfg.use_cache and cfg.cache is None:
            cfg = dataclasses.replace(cfg, cache=str(folder / CACHE_FILE))
        if cfg.call_log is None:
            cfg = dataclasses.replace(cfg, call_log=str(folder / CALL_LOG_FILE))
        if cfg not in made:
            made[cfg] = make_client(cfg, handlers=handlers)
        chosen[group] = made[cfg]
    first = chosen[groups[0]]
    return RoleClients(*(chosen.get(g, first) for g in ("model", "user", "judge", "generate")))


def default_handlers(taxonomy: Taxonomy, tasks: Sequence[Task]) -> dict[str, Handler]:
    """The scripted handlers of every PrefDisco role for this taxonomy and task set."""
    return scripted_handlers(taxonomy, tasks)


# -- generate --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerateSummary:
    """What `generate_dataset` wrote.

    Attributes:
        folder: The dataset folder.
        personas: Personas in the library.
        tasks: Tasks.
        instances: (persona, task) profiles.
        rubrics: Rubrics (every value of the taxonomy).
        refined: Rubrics refined by the LLM and kept.
        rejected: Refinements rejected by validation (templates kept).
        backstories: Personas with a backstory.
        backstory_failures: Personas whose enrichment failed validation.
        sampling: Rejection-sampling counts of the persona library.
        digest: Digest of the data files.
        stats: LLM call totals.
    """

    folder: str
    personas: int
    tasks: int
    instances: int
    rubrics: int
    refined: int
    rejected: int
    backstories: int
    backstory_failures: int
    sampling: Mapping[str, int]
    digest: str
    stats: Mapping[str, Any] = field(default_factory=dict)


def load_task_sources(config: GenerateConfig) -> list[Task]:
    """All tasks of the config's sources, in order (ids checked unique).

    Raises:
        TaskFormatError: A source file is missing or malformed.
    """
    tasks: list[Task] = []
    for source in config.tasks:
        if source.format == "builtin":
            items = builtin_tasks()
            if source.domain:
                items = [t for t in items if t.domain == source.domain]
            tasks += items[: source.limit] if source.limit else items
        else:
            assert source.path is not None
            tasks += load_tasks(
                source.path,
                source.format,
                source=source.name,
                domain=source.domain,
                limit=source.limit,
                labels=source.labels,
            )
    check_unique(tasks)
    return tasks


def pair_instances(
    personas: Sequence[Persona], tasks: Sequence[Task], per_task: int | None, seed: int
) -> list[tuple[Persona, Task]]:
    """The (persona, task) instances: ``per_task`` personas per task (None: all), seeded."""
    pairs = []
    for task in tasks:
        if per_task is None or per_task >= len(personas):
            chosen = list(personas)
        else:
            rng = stream(seed, "pairs", task.id)
            picks = sorted(int(i) for i in rng.choice(len(personas), per_task, replace=False))
            chosen = [personas[i] for i in picks]
        pairs += [(p, task) for p in chosen]
    return pairs


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
    out = Path(folder)
    taxonomy = load_taxonomy(gen.taxonomy)
    space = load_persona_space(gen.persona_space)
    tasks = load_task_sources(gen)
    personas, sampling = sample_personas(
        gen.personas, gen.seed, space=space, min_distance=gen.min_distance
    )
    pairs = pair_instances(personas, tasks, gen.personas_per_task, gen.seed)
    profiles = sample_profiles(pairs, taxonomy, seed=gen.seed, config=gen.sparsity, space=space)
    rubrics = build_rubrics(taxonomy)
    used = sorted({(p.attribute, p.value) for profile in profiles for p in profile})

    async def llm_phase() -> tuple[list[Persona], dict[tuple[str, str], Rubric]]:
        assert clients is not None
        try:
            enriched = (
                await enrich_personas(
                    personas, clients.generate, gen.model, temperature=gen.temperature
                )
                if gen.enrich
                else list(personas)
            )
            refined = (
                await refine_rubrics(
                    {k: rubrics[k] for k in used}, taxonomy, clients.generate, gen.model
                )
                if gen.refine_rubrics
                else {}
            )
        finally:
            await clients.release()
        return enriched, refined

    refined: dict[tuple[str, str], Rubric] = {}
    if gen.enrich or gen.refine_rubrics:
        personas, refined = run_sync(llm_phase())
        rubrics.update(refined)
    out.mkdir(parents=True, exist_ok=True)
    _write_yaml(out / "taxonomy.yaml", taxonomy.to_json())
    save_personas(out / "personas.jsonl", personas)
    write_jsonl(out / "tasks.jsonl", (t.to_json() for t in tasks))
    save_profiles(out / "preferences.jsonl", profiles)
    save_rubrics(out / "rubrics.jsonl", rubrics)
    digest = data_digest(out)
    summary = GenerateSummary(
        folder=str(out),
        personas=len(personas),
        tasks=len(tasks),
        instances=len(profiles),
        rubrics=len(rubrics),
        refined=sum(1 for r in refined.values() if r.source == "llm"),
        rejected=sum(1 for r in refined.values() if r.error),
        backstories=sum(1 for p in personas if p.backstory),
        backstory_failures=sum(1 for p in personas if p.backstory_error),
        sampling=sampling.to_json(),
        digest=digest,
        stats=clients.stats() if clients is not None else {},
    )
    write_json(
        out / "manifest.json",
        {
            "format": MANIFEST_FORMAT,
            "prefduel": __version__,
            "config": config.to_json(),
            "taxonomy": {"version": taxonomy.version, "digest": taxonomy.digest},
            "persona_space": space.version,
            "counts": {
                "personas": summary.personas,
                "tasks": summary.tasks,
                "instances": summary.instances,
                "rubrics": summary.rubrics,
                "rubrics_refined": summary.refined,
                "rubric_refinements_rejected": summary.rejected,
                "backstories": summary.backstories,
                "backstory_failures": summary.backstory_failures,
            },
            "sampling": summary.sampling,
            "files": {name: _file_digest(out / name) for name in DATA_FILES},
            "digest": digest,
        },
    )
    return summary


def _write_yaml(path: Path, data: Any) -> None:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DatasetError(f"cannot write {path}: {exc.strerror or exc}") from None


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc.strerror or exc}") from None


def data_digest(folder: str | Path) -> str:
    """Digest of the dataset's data files (what episodes depend on)."""
    parts = [f"{name}:{_file_digest(Path(folder) / name)}" for name in DATA_FILES]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


# -- dataset ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dataset:
    """A loaded, cross-checked dataset folder.

    Attributes:
        folder: Where it was loaded from.
        taxonomy: The taxonomy (from the folder's copy).
        personas: Persona id -> persona.
        tasks: Task id -> task.
        profiles: (persona id, task id) -> hidden profile, in file order.
        rubrics: (attribute, value) -> rubric.
        config: The config stored by ``generate``.
        digest: Digest of the data files as they are now.
        manifest_digest: The digest ``generate`` recorded (differs if files were edited).
    """

    folder: Path
    taxonomy: Taxonomy
    personas: Mapping[str, Persona]
    tasks: Mapping[str, Task]
    profiles: Mapping[tuple[str, str], PreferenceProfile]
    rubrics: Mapping[tuple[str, str], Rubric]
    config: PrefDiscoConfig
    digest: str
    manifest_digest: str


def load_dataset(folder: str | Path) -> Dataset:
    """Load a dataset folder written by `generate_dataset` and cross-check it.

    Raises:
        DatasetError: A file is missing or malformed, a profile names an unknown persona or
            task, or a (attribute, value) of a profile has no rubric (names the file).
    """
    root = Path(folder)
    manifest = read_json(root / "manifest.json", what="dataset manifest")
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise DatasetError(
            f"{root / 'manifest.json'}: not a PrefDisco dataset manifest "
            f"(expected format {MANIFEST_FORMAT!r}); run prefdisco generate first"
        )
    try:
        data = yaml.safe_load((root / "taxonomy.yaml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"taxonomy copy {root / 'taxonomy.yaml'} does not exist") from None
    taxonomy = taxonomy_from_json(data, source=str(root / "taxonomy.yaml"))
    personas = {p.id: p for p in load_personas(root / "personas.jsonl")}
    tasks: dict[str, Task] = {}
    for i, row in enumerate(read_jsonl(root / "tasks.jsonl", what="task file"), start=1):
        task = Task.from_json(row, where=f"{root / 'tasks.jsonl'}, line {i}")
        tasks[task.id] = task
    profiles = {}
    for profile in load_profiles(root / "preferences.jsonl", taxonomy):
        if profile.persona_id not in personas or profile.task_id not in tasks:
            raise DatasetError(
                f"{root / 'preferences.jsonl'}: profile {profile.key} names an unknown persona "
                "or task"
            )
        profiles[profile.key] = profile
    rubrics = load_rubrics(root / "rubrics.jsonl", taxonomy)
    missing = sorted(
        {(p.attribute, p.value) for pr in profiles.values() for p in pr} - set(rubrics)
    )
    if missing:
        raise DatasetError(f"{root / 'rubrics.jsonl'}: no rubric for {missing[:5]}")
    return Dataset(
        folder=root,
        taxonomy=taxonomy,
        personas=personas,
        tasks=tasks,
        profiles=profiles,
        rubrics=rubrics,
        config=config_from_json(manifest.get("config") or {}, source=str(root / "manifest.json")),
        digest=data_digest(root),
        manifest_digest=str(manifest.get("digest")),
    )


# -- run -------------------------------------------------------------------------------------


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
    """

    folder: str
    episodes: int
    reused: int
    ran: int
    failed: tuple[tuple[str, str], ...]
    missing_scores: int
    digest: str
    stats: Mapping[str, Any]


def episode_settings(
    dataset: Dataset, settings: RunConfig, backends: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The settings an episode's requests depend on (not which models or conditions run)."""
    return {
        "prompts": prompts.PROMPTS_VERSION,
        "dataset": dataset.digest,
        "taxonomy": dataset.taxonomy.digest,
        "max_turns": settings.max_turns,
        "router": settings.router,
        "router_model": settings.router_model_name if settings.router == "llm" else None,
        "max_attributes_per_question": settings.max_attributes_per_question,
        "tfidf_threshold": settings.tfidf_threshold if settings.router == "keyword" else None,
        "judge_model": settings.judge_model,
        "grader_model": settings.grader_model_name,
        "judge_attempts": settings.judge_attempts,
        "temperature": settings.temperature,
        "judge_temperature": settings.judge_temperature,
        "ask_max_tokens": settings.ask_max_tokens,
        "answer_max_tokens": settings.answer_max_tokens,
        "judge_max_tokens": settings.judge_max_tokens,
        "max_tokens_param": settings.max_tokens_param,
        "api_seed": settings.api_seed,
        "backends": dict(sorted((backends or {}).items())),
    }


def episode_keys(dataset: Dataset, settings: RunConfig) -> list[EpisodeKey]:
    """Every episode, in canonical order: model, instance (file order), condition."""
    return [
        EpisodeKey(model, condition, persona_id, task_id)
        for model in settings.models
        for persona_id, task_id in dataset.profiles
        for condition in settings.conditions
    ]


def _backends(clients: RoleClients) -> dict[str, str]:
    return {
        group: str(getattr(getattr(clients, group), "namespace", type(getattr(clients, group))))
        for group in ("model", "user", "judge")
    }


def _check_run_folder(out: Path, settings: dict[str, Any]) -> None:
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


def _rows(path: Path, what: str, digest: str) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    rows = {}
    for row in read_jsonl(path, what=what, allow_torn_tail=True):
        if row.get("settings") != digest:
            raise DatasetError(
                f"{path}: episode {row.get('episode_id')} was made with settings "
                f"{row.get('settings')}, not {digest}; use another run folder"
            )
        rows[str(row["episode_id"])] = row
    return rows


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
    conf = episode_settings(dataset, settings, _backends(clients))
    digest = settings_digest(conf)
    _check_run_folder(out, conf)
    write_json(out / "run.json", {"format": RUN_FORMAT, "settings": conf, "digest": digest})
    keys = episode_keys(dataset, settings)
    transcripts = _rows(out / "transcripts.jsonl", "transcript file", digest)
    scores = _rows(out / "scores.jsonl", "score file", digest)
    todo = [k for k in keys if k.id not in scores]
    reused = len(keys) - len(todo)
    router: Router
    if settings.router == "llm":
        router = LLMRouter(
            dataset.taxonomy,
            clients.user,
            settings.router_model_name,
            max_attributes=settings.max_attributes_per_question,
            params=settings.params("router"),
        )
    else:
        router = KeywordRouter(
            dataset.taxonomy,
            max_attributes=settings.max_attributes_per_question,
            tfidf_threshold=settings.tfidf_threshold or None,
        )
    episode_context = EpisodeContext(
        dataset.taxonomy,
        dataset.tasks,
        dataset.profiles,
        settings,
        digest,
        clients.model,
        router,
    )
    judge_context = JudgeContext(
        dataset.taxonomy, dataset.tasks, dataset.profiles, dataset.rubrics, settings, clients.judge
    )
    failed: list[tuple[str, str]] = []
    done = 0

    async def one(
        key: EpisodeKey, gate: asyncio.Semaphore, t_out: JsonlAppender, s_out: JsonlAppender
    ) -> None:
        nonlocal done
        async with gate:
            try:
                row = transcripts.get(key.id)
                if row is not None:
                    transcript = Transcript.from_json(row, where=f"transcript {key.id}")
                else:
                    transcript = await run_episode(key, episode_context)
                    transcripts[key.id] = transcript.to_json()
                    t_out.write(transcripts[key.id])
                score = await score_transcript(transcript, judge_context)
                scores[key.id] = score.to_json()
                s_out.write(scores[key.id])
            except EpisodeError as exc:
                failed.append((key.id, str(exc)))
            done += 1
            if progress is not None:
                progress(done, len(todo))

    async def main() -> None:
        gate = asyncio.Semaphore(settings.episodes_in_flight)
        try:
            with (
                JsonlAppender(out / "transcripts.jsonl") as t_out,
                JsonlAppender(out / "scores.jsonl") as s_out,
            ):
                await asyncio.gather(*(one(k, gate, t_out, s_out) for k in todo))
        finally:
            await clients.release()

    if todo:
        run_sync(main())
    order = {k.id: i for i, k in enumerate(keys)}

    def rank(row: dict[str, Any]) -> tuple[int, str]:
        return (order.get(row["episode_id"], len(order)), row["episode_id"])

    write_jsonl(out / "transcripts.jsonl", sorted(transcripts.values(), key=rank))
    write_jsonl(out / "scores.jsonl", sorted(scores.values(), key=rank))
    missing = sum(
        1 for row in scores.values() for s in (row.get("scores") or {}).values() if s is None
    )
    return RunSummary(
        folder=str(out),
        episodes=len(keys),
        reused=reused,
        ran=len(todo) - len(failed),
        failed=tuple(sorted(failed)),
        missing_scores=missing,
        digest=digest,
        stats=clients.stats(),
    )


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
        dataset.taxonomy,
        _NoClient(),
        settings.router_model_name,
        params=settings.params("router"),
    )
    requests = []
    for key in todo:
        task = dataset.tasks[key.task_id]
        profile = dataset.profiles[(key.persona_id, key.task_id)]
        block = prompts.task_block(task.question, task.options)
        info = prompts.info_baseline()
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
            requests.append(judge_request(task, placeholder, rubric, dataset.taxonomy, settings))
        requests.append(grader_request(task, placeholder, settings))
    prices = load_prices(config.llm_for("model").prices)
    estimate = estimate_cost(requests, prices=prices)
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
