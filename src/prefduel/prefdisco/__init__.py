"""PrefDisco: cold-start preference discovery with a passive simulated user.

Turns question/answer benchmarks into interactive personalization tasks (*PrefDisco:
Benchmarking Proactive Personalized Reasoning*, ICLR 2026): each (persona, task) instance gets a
hidden, sparse preference profile over a typed attribute taxonomy; a model answers in three
conditions with one scaffold (baseline: nothing known; discovery: up to 5 clarifying questions
to a passive simulated user; oracle: the full profile); per-attribute rubric judgements give
PrefAlign = Σ w·score and NormAlign = 100 (disc - base) / (oracle - base), next to task accuracy
and discovery recall. ::

    from prefduel.prefdisco import (
        PrefDiscoConfig, build_report, clients_from_config, default_handlers,
        generate_dataset, load_dataset, load_run, run_study, write_report)

    config = PrefDiscoConfig()                # the offline demo (scripted backend), or
                                              # load_config("study.yaml")
    generate_dataset(config, "study")         # personas, tasks, hidden profiles, rubrics
    dataset = load_dataset("study")
    handlers = default_handlers(dataset.taxonomy, list(dataset.tasks.values()))
    clients = clients_from_config(config, "study", handlers=handlers, groups=("model", "judge"))
    summary = run_study(dataset, config.run, clients, "study")   # resumable
    clients.close()
    rows, run = load_run("study")
    write_report(build_report(rows, config.report, run=run), "study/report")

The package is in rooms; each imports only itself and the rooms listed before it:

* the base modules: `config` (the study's YAML sections; `interview_config` holds the
  interviewer's), `errors`, `store` (JSON Lines files);
* `dataset`: `taxonomy` (Θ), `persona_space`, `personas`, `preferences` (sparse profiles),
  `tasks` (loaders and the built-in set), `answers` (reading a short answer), `rubrics`,
  `prompts` (the generation prompts), `writer` (the optional LLM stages: backstories and
  refined rubrics) and `folder` (the dataset folder: sampled, written, loaded);
* `episode`: `prompts`, `routing` (keyword and LLM routers), `router_check` (their accuracy on
  labelled questions, ``router: auto``), `user` (the passive user: importance levels, terse and
  vague styles), `follow_up` (the counterfactual follow-up check), `episodes` (the ask
  strategy), `matching` (accuracy rules), `judging` and `metrics` (pure);
* `interviewer`: the Bayesian interviewer strategy (`strategy`, with `prior`, `belief` and
  `replies`);
* `report`: `rows` (the run's rows checked on read), `build` (the report's data) with
  `render`, `text` and `figures`;
* `study`: `pipeline` (`generate_dataset`, `run_study`), `run_folder`, `clients`, `calls` (each
  episode's calls and cost), `estimate` (the dry run), `scripted` (offline roles) and, with
  the ``inspect`` extra, `inspect_task` (PrefDisco as the inspect-ai task
  ``prefduel/prefdisco``), `inspect_models` and `inspect_log` (a log back into a run folder).

The public names (`__all__`) are importable from here, wherever they live.
"""

from __future__ import annotations

from prefduel.prefdisco.config import (
    CONDITIONS,
    GenerateConfig,
    PrefDiscoConfig,
    ReportConfig,
    RunConfig,
    SparsityConfig,
    TaskSource,
    load_config,
)
from prefduel.prefdisco.dataset.folder import Dataset, load_dataset, load_task_sources
from prefduel.prefdisco.dataset.personas import (
    Persona,
    load_personas,
    sample_personas,
    save_personas,
    trait_vector,
)
from prefduel.prefdisco.dataset.preferences import Preference, PreferenceProfile, sample_profile
from prefduel.prefdisco.dataset.rubrics import (
    Rubric,
    build_rubrics,
    template_rubric,
)
from prefduel.prefdisco.dataset.tasks import Task, builtin_tasks, load_tasks
from prefduel.prefdisco.dataset.taxonomy import Attribute, Taxonomy, load_taxonomy
from prefduel.prefdisco.dataset.writer import enrich_personas, refine_rubrics
from prefduel.prefdisco.episode.episodes import EpisodeKey, Transcript, run_episode
from prefduel.prefdisco.episode.judging import ScoreRow, score_transcript
from prefduel.prefdisco.episode.matching import Match, match_answer
from prefduel.prefdisco.episode.metrics import (
    discovery_recall,
    norm_align,
    norm_align_ci,
    pref_align,
    trend,
)
from prefduel.prefdisco.episode.router_check import (
    RouterAccuracy,
    RouterQuestion,
    load_router_questions,
    router_accuracy,
)
from prefduel.prefdisco.episode.user import (
    USER_STYLES,
    KeywordRouter,
    LLMRouter,
    PassiveUser,
    Route,
)
from prefduel.prefdisco.errors import (
    ConfigError,
    DatasetError,
    EpisodeError,
    PrefDiscoError,
    ScoringError,
    TaskFormatError,
    TaxonomyError,
)
from prefduel.prefdisco.report.build import build_report, load_run, write_report
from prefduel.prefdisco.study.clients import RoleClients, clients_from_config, default_handlers
from prefduel.prefdisco.study.pipeline import generate_dataset, run_study
from prefduel.prefdisco.study.scripted import ScriptedWorld, scripted_handlers, server_answer

__all__ = [
    "CONDITIONS",
    "USER_STYLES",
    "Attribute",
    "ConfigError",
    "Dataset",
    "DatasetError",
    "EpisodeError",
    "EpisodeKey",
    "GenerateConfig",
    "KeywordRouter",
    "LLMRouter",
    "Match",
    "PassiveUser",
    "Persona",
    "PrefDiscoConfig",
    "PrefDiscoError",
    "Preference",
    "PreferenceProfile",
    "ReportConfig",
    "RoleClients",
    "Route",
    "RouterAccuracy",
    "RouterQuestion",
    "Rubric",
    "RunConfig",
    "ScoreRow",
    "ScoringError",
    "ScriptedWorld",
    "SparsityConfig",
    "Task",
    "TaskFormatError",
    "TaskSource",
    "Taxonomy",
    "TaxonomyError",
    "Transcript",
    "build_report",
    "build_rubrics",
    "builtin_tasks",
    "clients_from_config",
    "default_handlers",
    "discovery_recall",
    "enrich_personas",
    "generate_dataset",
    "load_config",
    "load_dataset",
    "load_personas",
    "load_router_questions",
    "load_run",
    "load_task_sources",
    "load_tasks",
    "load_taxonomy",
    "match_answer",
    "norm_align",
    "norm_align_ci",
    "pref_align",
    "refine_rubrics",
    "router_accuracy",
    "run_episode",
    "run_study",
    "sample_personas",
    "sample_profile",
    "save_personas",
    "score_transcript",
    "scripted_handlers",
    "server_answer",
    "template_rubric",
    "trait_vector",
    "trend",
    "write_report",
]
