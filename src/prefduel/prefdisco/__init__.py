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

Modules: `taxonomy` (Θ), `persona_space`, `personas`, `preferences` (sparse profiles),
`rubrics`, `tasks` (loaders and the built-in set), `matching` (accuracy
rules), `routing` (keyword and LLM routers), `router_check` (their accuracy on labelled
questions, ``router: auto``), `user` (the passive user: importance levels, terse and vague
styles), `prompts`, `episodes` (the ask strategy), the Bayesian interviewer strategy
(`interviewer`, with `interview_prior`, `interview_belief`, `interview_replies` and
`interview_config`), `follow_up` (the counterfactual follow-up check), `judging`, `metrics`
(pure), `calls` (each episode's calls and cost), `pipeline` (`generate_dataset`, `run_study`,
built on `dataset`, `study` and `clients`), `estimate` (the dry run), `report` (data) with
`report_render`, `report_text` and `report_figures`, `scripted` (offline roles), `config`,
`store`.
"""

from __future__ import annotations

from prefduel.prefdisco.config import (
    CONDITIONS,
    GenerateConfig,
    PrefDiscoConfig,
    ReportConfig,
    RunConfig,
    TaskSource,
    load_config,
)
from prefduel.prefdisco.episodes import EpisodeKey, Transcript, run_episode
from prefduel.prefdisco.errors import (
    ConfigError,
    DatasetError,
    EpisodeError,
    PrefDiscoError,
    ScoringError,
    TaskFormatError,
    TaxonomyError,
)
from prefduel.prefdisco.judging import ScoreRow, score_transcript
from prefduel.prefdisco.matching import Match, match_answer
from prefduel.prefdisco.metrics import (
    discovery_recall,
    norm_align,
    norm_align_ci,
    pref_align,
    trend,
)
from prefduel.prefdisco.personas import (
    Persona,
    enrich_personas,
    load_personas,
    sample_personas,
    save_personas,
    trait_vector,
)
from prefduel.prefdisco.pipeline import (
    Dataset,
    RoleClients,
    clients_from_config,
    default_handlers,
    generate_dataset,
    load_dataset,
    load_task_sources,
    run_study,
)
from prefduel.prefdisco.preferences import (
    Preference,
    PreferenceProfile,
    SparsityConfig,
    sample_profile,
)
from prefduel.prefdisco.report import build_report, load_run, write_report
from prefduel.prefdisco.router_check import (
    RouterAccuracy,
    RouterQuestion,
    load_router_questions,
    router_accuracy,
)
from prefduel.prefdisco.rubrics import Rubric, build_rubrics, refine_rubrics, template_rubric
from prefduel.prefdisco.scripted import ScriptedWorld, scripted_handlers, server_answer
from prefduel.prefdisco.tasks import Task, builtin_tasks, load_tasks
from prefduel.prefdisco.taxonomy import Attribute, Taxonomy, load_taxonomy
from prefduel.prefdisco.user import USER_STYLES, KeywordRouter, LLMRouter, PassiveUser, Route

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
