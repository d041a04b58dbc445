"""The dataset folder: sampled deterministically from the config, written, loaded, checked.

::

    manifest.json      format, config, taxonomy version and digest, counts, file digests
    taxonomy.yaml      the taxonomy used (a copy, so the folder is self-contained)
    personas.jsonl     the persona library
    tasks.jsonl        the tasks (normalized ``generic`` shape plus source and meta)
    preferences.jsonl  one hidden profile per (persona, task) instance
    rubrics.jsonl      a rubric per (attribute, value) of the taxonomy

`sample_dataset` draws everything but the LLM parts (backstories, refined rubrics: the
generate stages of `prefduel.prefdisco.study.pipeline.generate_dataset`), `write_dataset` writes the
folder, `load_dataset` reads it back and cross-checks it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from prefduel import __version__
from prefduel.core.rng import stream
from prefduel.core.yamlfile import read_yaml
from prefduel.prefdisco.config import (
    MAX_INSTANCES,
    GenerateConfig,
    PrefDiscoConfig,
    config_from_json,
)
from prefduel.prefdisco.dataset.personas import (
    Persona,
    PersonaSpace,
    SamplingStats,
    load_persona_space,
    load_personas,
    sample_personas,
    save_personas,
)
from prefduel.prefdisco.dataset.preferences import (
    PreferenceProfile,
    load_profiles,
    sample_profiles,
    save_profiles,
)
from prefduel.prefdisco.dataset.rubrics import Rubric, build_rubrics, load_rubrics, save_rubrics
from prefduel.prefdisco.dataset.tasks import Task, builtin_tasks, check_unique, load_tasks
from prefduel.prefdisco.dataset.taxonomy import Taxonomy, load_taxonomy, taxonomy_from_json
from prefduel.prefdisco.errors import ConfigError, DatasetError
from prefduel.prefdisco.store import read_json, read_keyed_jsonl, write_json, write_jsonl

MANIFEST_FORMAT = "prefduel/prefdisco-dataset/1"
DATA_FILES = (
    "taxonomy.yaml",
    "personas.jsonl",
    "tasks.jsonl",
    "preferences.jsonl",
    "rubrics.jsonl",
)


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


@dataclass
class DatasetParts:
    """A dataset in memory, before it is written.

    Attributes:
        taxonomy: The taxonomy.
        space: The persona space.
        tasks: The tasks.
        personas: The persona library (with backstories once enriched).
        sampling: Rejection-sampling counts of the library.
        profiles: One hidden profile per (persona, task) instance.
        rubrics: (attribute, value) -> rubric (refined ones included once refined).
        refined: The rubrics the LLM refinement returned (kept or rejected).
    """

    taxonomy: Taxonomy
    space: PersonaSpace
    tasks: list[Task]
    personas: list[Persona]
    sampling: SamplingStats
    profiles: list[PreferenceProfile]
    rubrics: dict[tuple[str, str], Rubric]
    refined: dict[tuple[str, str], Rubric] = field(default_factory=dict)

    def used_values(self) -> list[tuple[str, str]]:
        """The (attribute, value) pairs some hidden profile holds, sorted."""
        return sorted({(p.attribute, p.value) for profile in self.profiles for p in profile})


def sample_dataset(config: GenerateConfig) -> DatasetParts:
    """Everything of the dataset but its LLM parts, deterministic in the config.

    Raises:
        TaskFormatError: A task source is missing or malformed.
        ConfigError: More instances than `MAX_INSTANCES` (checked before any is drawn).
    """
    taxonomy = load_taxonomy(config.taxonomy)
    space = load_persona_space(config.persona_space)
    tasks = load_task_sources(config)
    per_task = min(config.personas_per_task or config.personas, config.personas)
    if len(tasks) * per_task > MAX_INSTANCES:
        raise ConfigError(
            f"generate: {len(tasks):,} tasks x {per_task:,} personas each make "
            f"{len(tasks) * per_task:,} instances, more than {MAX_INSTANCES:,}; lower "
            "personas_per_task or the tasks' limit"
        )
    personas, sampling = sample_personas(
        config.personas, config.seed, space=space, min_distance=config.min_distance
    )
    pairs = pair_instances(personas, tasks, config.personas_per_task, config.seed)
    profiles = sample_profiles(
        pairs, taxonomy, seed=config.seed, config=config.sparsity, space=space
    )
    return DatasetParts(
        taxonomy, space, tasks, list(personas), sampling, profiles, build_rubrics(taxonomy)
    )


def write_dataset(
    folder: str | Path,
    config: PrefDiscoConfig,
    parts: DatasetParts,
    stats: Mapping[str, Any] | None = None,
) -> GenerateSummary:
    """Write the dataset folder (data files, then the manifest); return the summary.

    Args:
        folder: The dataset folder (created).
        config: The study config (stored in the manifest).
        parts: The dataset.
        stats: LLM call totals of the generation.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    _write_yaml(out / "taxonomy.yaml", parts.taxonomy.to_json())
    save_personas(out / "personas.jsonl", parts.personas)
    write_jsonl(out / "tasks.jsonl", (t.to_json() for t in parts.tasks))
    save_profiles(out / "preferences.jsonl", parts.profiles)
    save_rubrics(out / "rubrics.jsonl", parts.rubrics)
    refined = parts.refined.values()
    summary = GenerateSummary(
        folder=str(out),
        personas=len(parts.personas),
        tasks=len(parts.tasks),
        instances=len(parts.profiles),
        rubrics=len(parts.rubrics),
        refined=sum(1 for r in refined if r.source == "llm"),
        rejected=sum(1 for r in refined if r.error),
        backstories=sum(1 for p in parts.personas if p.backstory),
        backstory_failures=sum(1 for p in parts.personas if p.backstory_error),
        sampling=parts.sampling.to_json(),
        digest=data_digest(out),
        stats=dict(stats or {}),
    )
    write_json(out / "manifest.json", _manifest(out, config, parts, summary))
    return summary


def _manifest(
    out: Path, config: PrefDiscoConfig, parts: DatasetParts, summary: GenerateSummary
) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "prefduel": __version__,
        "config": config.to_json(),
        "taxonomy": {"version": parts.taxonomy.version, "digest": parts.taxonomy.digest},
        "persona_space": parts.space.version,
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
        "digest": summary.digest,
    }


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
    data = read_yaml(root / "taxonomy.yaml", "taxonomy copy", DatasetError)
    taxonomy = taxonomy_from_json(data, source=str(root / "taxonomy.yaml"))
    personas = {p.id: p for p in load_personas(root / "personas.jsonl")}
    tasks: dict[str, Task] = {}
    for number, row in read_keyed_jsonl(root / "tasks.jsonl", ("id",), what="task file"):
        task = Task.from_json(row, where=f"{root / 'tasks.jsonl'}, line {number}")
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


__all__ = [
    "DATA_FILES",
    "MANIFEST_FORMAT",
    "Dataset",
    "DatasetParts",
    "GenerateSummary",
    "data_digest",
    "load_dataset",
    "load_task_sources",
    "pair_instances",
    "sample_dataset",
    "write_dataset",
]
