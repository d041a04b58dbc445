"""PrefDisco as an inspect-ai task (the ``inspect`` extra: ``pip install "prefduel[inspect]"``).

::

    inspect eval prefduel/prefdisco -T dataset=study --model openai/gpt-4o-mini \\
        --model-role grader=openai/gpt-4o
    prefduel prefdisco from-inspect logs/*.eval --out study/inspect
    prefduel prefdisco report study/inspect

Each (persona, task) instance of a dataset folder (``prefduel prefdisco generate``) is one
`Sample`. The solver runs the instance's episodes with the model under evaluation, in the
order of our runner (baseline, discovery by each strategy, oracle), each through PrefDisco's
own episode code (`prefduel.prefdisco.episode.episodes.run_episode`,
`prefduel.prefdisco.interviewer.strategy.run_interview`) against the passive simulated user;
the scorer judges each transcript with `prefduel.prefdisco.episode.judging.score_transcript` on
the ``grader`` model role (inspect's default for model-graded scorers: the model under
evaluation when no grader is bound). A sample's score is PrefAlign per condition; the metrics
are the mean PrefAlign per condition and NormAlign per discovery strategy. Every transcript and
score row our runner would write is kept in the log (the sample's store and the score's
metadata), so `prefduel.prefdisco.study.inspect_log` turns a log back into a run folder.

Run settings come from the dataset's config (``run`` section) or ``config=FILE``, with the task
arguments ``conditions``, ``strategies``, ``max_turns`` and ``user_style`` on top. The
simulated user routes questions with the keyword router (``router: auto`` or ``keyword``), and
structured judge output is not used (``judge_structured: off``).

The requests reach inspect's models through `prefduel.prefdisco.study.inspect_models`
(`InspectCompleter`), which also has `scripted_model`: inspect's mock model playing our
scripted roles, to run the task offline. These modules import inspect-ai at the top; nothing
else in prefduel imports them, so the library works without the extra.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefduel.prefdisco.errors import ConfigError
from prefduel.prefdisco.study.inspect_log import TRANSCRIPTS, needs_inspect

try:
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import Model, ModelOutput, get_model
    from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
    from inspect_ai.solver import Generate, TaskState, solver
except ImportError as exc:  # pragma: no cover - the message is the point
    raise needs_inspect("the PrefDisco inspect task", exc) from None

from prefduel.llm.request import LLMRequest, LLMResponse
from prefduel.prefdisco.config import CONDITIONS, RunConfig, load_config
from prefduel.prefdisco.dataset.folder import Dataset, load_dataset
from prefduel.prefdisco.dataset.personas import load_persona_space
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.episodes import (
    EpisodeContext,
    EpisodeKey,
    Transcript,
    run_episode,
    settings_digest,
)
from prefduel.prefdisco.episode.judging import JudgeContext, score_transcript
from prefduel.prefdisco.episode.metrics import norm_align
from prefduel.prefdisco.episode.router_check import choose_router
from prefduel.prefdisco.episode.routing import Router
from prefduel.prefdisco.interviewer.prior import check_disjoint, learn_prior
from prefduel.prefdisco.interviewer.strategy import run_interview
from prefduel.prefdisco.report.rows import RUN_FORMAT
from prefduel.prefdisco.study.calls import finish_reasons, in_order, metered, recording, usage_of
from prefduel.prefdisco.study.inspect_models import InspectCompleter, backend_of, scripted_model
from prefduel.prefdisco.study.run_folder import episode_settings, uses_interviewer

#: The model role that judges (inspect's name for a scorer's model).
JUDGE_ROLE = "grader"


@dataclass
class Study:
    """A dataset and the run settings its samples run under (shared by solver and scorer).

    Attributes:
        dataset: The loaded dataset folder.
        settings: The run settings (models and judge are set per evaluation).
        prior: The interviewer's prior (learned when a strategy needs it) and its record.
        checks: The router and its check, per settings digest (resolved at the first sample).
        label: The model name the rows carry (None: inspect's name of the model evaluated).
    """

    dataset: Dataset
    settings: RunConfig
    label: str | None = None
    prior: tuple[Any, dict[str, Any] | None] = (None, None)
    checks: dict[str, tuple[Router, dict[str, Any]]] = field(default_factory=dict)

    def resolve(self, model: Model, judge: Model) -> tuple[RunConfig, dict[str, Any]]:
        """The settings of an evaluation of ``model`` judged by ``judge`` and its
        ``run.json`` record (format, settings, digest; the router check comes later)."""
        settings = dataclasses.replace(
            self.settings,
            models=(self.label or str(model),),
            judge_model=str(judge),
            grader_model=None,
        )
        backends = {"model": backend_of(model), "user": "none", "judge": backend_of(judge)}
        conf = episode_settings(self.dataset, settings, backends, router="keyword")
        record: dict[str, Any] = {
            "format": RUN_FORMAT,
            "settings": conf,
            "digest": settings_digest(conf),
        }
        if self.prior[1] is not None:
            record["interviewer_prior"] = self.prior[1]
        return settings, record

    async def router(self, settings: RunConfig, digest: str) -> tuple[Router, dict[str, Any]]:
        """The keyword router and its measurement on the labelled questions (no calls)."""
        if digest not in self.checks:
            self.checks[digest] = await choose_router(
                self.dataset.taxonomy, settings, _NoUserModel(), scripted_user=True
            )
        return self.checks[digest]


class _NoUserModel:
    async def complete(self, request: LLMRequest) -> LLMResponse:
        raise ConfigError("the inspect task routes by keywords; no user model is called")


def study_settings(
    dataset: Dataset,
    config: str | Path | None = None,
    **overrides: Any,
) -> RunConfig:
    """The run settings of an inspect evaluation: the ``run`` section of ``config`` (default:
    the dataset's own config) with the task arguments that are set.

    Raises:
        ConfigError: A bad value, the LLM router, structured judge output or a separate
            phrasing model (the inspect task routes by keywords and sends plain requests to
            the model under evaluation and the grader).
    """
    run = load_config(config).run if config is not None else dataset.config.run
    changes = {
        k: _names(v) if k in ("conditions", "strategies") else v for k, v in overrides.items()
    }
    try:
        run = dataclasses.replace(run, **{k: v for k, v in changes.items() if v is not None})
    except (ConfigError, ValueError) as exc:
        raise ConfigError(f"prefdisco inspect task: {exc}") from None
    if run.router == "llm":
        raise ConfigError("run.router: the inspect task routes by keywords (auto or keyword)")
    if run.judge_structured != "off" or run.grader_structured != "off":
        raise ConfigError(
            "run.judge_structured / grader_structured: the inspect task sends plain judge "
            "requests (off)"
        )
    if run.interviewer.phrase_model is not None:
        raise ConfigError(
            "run.interviewer.phrase_model: the inspect task words the interviewer's questions "
            "with the model under evaluation (null)"
        )
    return run


def _names(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(str(x).strip() for x in items if str(x).strip())


def load_study(
    dataset: str | Path,
    config: str | Path | None = None,
    *,
    label: str | None = None,
    **overrides: Any,
) -> Study:
    """The dataset folder, its run settings (``overrides``: `study_settings`), the rows' model
    name (``label``) and, for the interviewer, the learned prior, checked disjoint from the
    dataset's personas as our runner does."""
    data = load_dataset(dataset)
    settings = study_settings(data, config, **overrides)
    study = Study(data, settings, label=label)
    if uses_interviewer(settings):
        generate = data.config.generate
        prior = learn_prior(
            data.taxonomy,
            settings.interviewer.prior,
            sparsity=generate.sparsity,
            space=load_persona_space(generate.persona_space),
        )
        checked = check_disjoint(prior, list(data.personas.values()))
        study.prior = (
            prior,
            {
                "digest": settings_digest(prior.to_json()),
                "seed": prior.training.seed,
                "training_personas": len(prior.training.persona_fingerprints),
                "evaluation_personas_checked_disjoint": checked,
            },
        )
    return study


def samples(study: Study) -> list[Sample]:
    """One sample per (persona, task) instance, in the dataset's order."""
    out = []
    for persona_id, task_id in study.dataset.profiles:
        item = study.dataset.tasks[task_id]
        out.append(
            Sample(
                id=f"{persona_id}|{task_id}",
                input=prompts.task_block(item.question, item.options),
                target=item.answer,
                metadata={
                    "persona_id": persona_id,
                    "task_id": task_id,
                    "source": item.source,
                    "domain": item.domain,
                },
            )
        )
    return out


def instance_keys(settings: RunConfig, persona_id: str, task_id: str) -> list[EpisodeKey]:
    """The episodes of one instance, in our runner's order (condition, then strategy)."""
    return [
        EpisodeKey(model, condition, persona_id, task_id, strategy)
        for model in settings.models
        for condition in settings.conditions
        for strategy in (settings.strategies if condition == "discovery" else ("ask",))
    ]


def _models() -> tuple[Model, Model]:
    model = get_model()
    return model, get_model(role=JUDGE_ROLE, default=model)


@solver
def prefdisco_solver(study: Study) -> Any:
    """Run an instance's episodes (baseline, discovery by each strategy, oracle) with the
    model under evaluation and the passive simulated user; the transcripts go to the store."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model, judge = _models()
        settings, record = study.resolve(model, judge)
        router, _ = await study.router(settings, record["digest"])
        context = EpisodeContext(
            study.dataset.taxonomy,
            study.dataset.tasks,
            study.dataset.profiles,
            settings,
            record["digest"],
            metered(InspectCompleter(model)),
            router,
            study.prior[0],
        )
        meta = state.metadata
        rows = []
        for key in instance_keys(settings, meta["persona_id"], meta["task_id"]):
            with recording() as calls:
                if key.strategy == "interviewer":
                    transcript = (await run_interview(key, context)).transcript
                else:
                    transcript = await run_episode(key, context)
            rows.append(dataclasses.replace(transcript, calls=tuple(calls)).to_json())
        state.store.set(TRANSCRIPTS, rows)
        if rows:
            state.output = ModelOutput.from_content(str(model), rows[-1]["response"])
        return state

    return solve


def score_label(row: Mapping[str, Any]) -> str:
    """A score key: the condition, ``discovery:interviewer`` for that strategy."""
    strategy = row.get("strategy")
    if row["condition"] == "discovery" and strategy not in (None, "ask"):
        return f"discovery:{strategy}"
    return str(row["condition"])


@metric
def prefdisco_metrics() -> Any:
    """Mean PrefAlign per score key and NormAlign per discovery strategy (over the samples
    scored in baseline, that discovery and oracle; null when the oracle does not beat the
    baseline by the report's ``min_gap``)."""

    def compute(scores: list[SampleScore]) -> dict[str, float | None]:
        values = [s.score.value for s in scores if isinstance(s.score.value, Mapping)]
        keys = sorted({k for v in values for k in v}, key=_key_order)
        out: dict[str, float | None] = {}
        for key in keys:
            got = [float(v[key]) for v in values if v.get(key) is not None]
            out[key] = sum(got) / len(got) if got else None
        for key in keys:
            if key.startswith("discovery"):
                out[f"norm_align_{key.replace(':', '_')}"] = _norm_align(values, key)
        return out

    return compute


def _key_order(key: str) -> tuple[int, str]:
    return (CONDITIONS.index(key.split(":")[0]), key)


def _norm_align(values: Sequence[Mapping[str, Any]], discovery: str) -> float | None:
    complete = [
        v for v in values if all(v.get(k) is not None for k in ("baseline", discovery, "oracle"))
    ]
    if not complete:
        return None
    mean = {k: sum(float(v[k]) for v in complete) / len(complete) for k in ("baseline", "oracle")}
    disc = sum(float(v[discovery]) for v in complete) / len(complete)
    return norm_align(disc, mean["baseline"], mean["oracle"])


@scorer(metrics=[prefdisco_metrics()])
def prefdisco_scorer(study: Study) -> Any:
    """Judge each transcript of the sample (every hidden attribute, accuracy, discovery)
    with PrefDisco's scoring on the ``grader`` model role; the score rows and the run record
    go to the score's metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        model, judge = _models()
        settings, record = study.resolve(model, judge)
        _, record["router_check"] = await study.router(settings, record["digest"])
        context = JudgeContext(
            study.dataset.taxonomy,
            study.dataset.tasks,
            study.dataset.profiles,
            study.dataset.rubrics,
            settings,
            metered(InspectCompleter(judge)),
        )
        rows = [await _score_row(data, context) for data in state.store.get(TRANSCRIPTS, [])]
        return Score(
            value={score_label(r): r["pref_align"] for r in rows},
            answer=state.output.completion if state.output else None,
            metadata={"rows": rows, "run": record},
        )

    return score


async def _score_row(data: Mapping[str, Any], context: JudgeContext) -> dict[str, Any]:
    """One transcript scored as our runner scores it (its calls, usage and finish reasons)."""
    transcript = Transcript.from_json(data, where=f"transcript {data.get('episode_id')}")
    with recording() as scoring:
        row = await score_transcript(transcript, context)
    calls = in_order(scoring)
    everything = [*transcript.calls, *calls]
    row = dataclasses.replace(
        row, usage=usage_of(everything), finish_reasons=finish_reasons(everything), calls=calls
    )
    return row.to_json()


@task
def prefdisco(
    dataset: str,
    config: str | None = None,
    conditions: str | None = None,
    strategies: str | None = None,
    max_turns: int | None = None,
    user_style: str | None = None,
    label: str | None = None,
) -> Task:
    """PrefDisco on a dataset folder (``prefduel prefdisco generate``).

    Args:
        dataset: The dataset folder.
        config: A study YAML whose ``run`` section gives the settings (default: the
            dataset's own config).
        conditions: Comma list of baseline, discovery, oracle.
        strategies: Comma list of discovery strategies: ask, interviewer.
        max_turns: Question budget.
        user_style: cooperative, terse or vague.
        label: The model name the rows and the report carry (default: inspect's name of the
            model evaluated, e.g. ``openai/gpt-4o-mini``); for one model per evaluation.
    """
    study = load_study(
        dataset,
        config,
        conditions=conditions,
        strategies=strategies,
        max_turns=max_turns,
        user_style=user_style,
        label=label,
    )
    return Task(
        dataset=samples(study),
        solver=prefdisco_solver(study),
        scorer=prefdisco_scorer(study),
        metadata={"prefdisco_dataset": study.dataset.digest},
    )


__all__ = [
    "JUDGE_ROLE",
    "TRANSCRIPTS",
    "InspectCompleter",
    "Study",
    "instance_keys",
    "load_study",
    "prefdisco",
    "prefdisco_metrics",
    "prefdisco_scorer",
    "prefdisco_solver",
    "samples",
    "score_label",
    "scripted_model",
    "study_settings",
]
