"""Typed, frozen, JSON-serializable configuration of a PrefDisco study (YAML sections).

A config file has up to five sections; every key is optional (defaults: the offline demo)::

    generate:                       # prefduel prefdisco generate
      seed: 0
      personas: 6                   # persona library size
      personas_per_task: 2          # (persona, task) instances per task; null = every persona
      tasks:                        # task sources (default: the built-in set)
        - {format: builtin}
        - {format: medqa, path: data/medqa_test.jsonl, limit: 50}
        - {format: socialiqa, path: dev.jsonl, labels: dev-labels.lst}
      k_min: 3                      # attributes per profile: uniform in [k_min, k_max]
      k_max: 5
      dirichlet_alpha: 1.0
      max_per_family: 2
      value_noise: 0.6
      relevance_power: 3.0          # F(i) concentrates on the attributes relevant to the domain
      min_distance: 0.35            # Big Five diversity of the persona library
      enrich: false                 # LLM backstories (role persona)
      refine_rubrics: false         # LLM-sharpened rubrics (role rubric), validated
      model: scripted-writer        # model for enrich / refine_rubrics
    run:                            # prefduel prefdisco run
      models: [scripted-ask1, scripted-ask3, scripted-ask5]   # models under test
      conditions: [baseline, discovery, oracle]
      strategies: [ask]             # discovery by: ask (the model asks) | interviewer
      interviewer: {min_gain: 0.02, phrasing: template}   # see interview_config
      follow_up_check: true         # does the 2nd question change if the 1st reply does?
      max_turns: 5
      router: auto                  # auto | keyword (offline) | llm
      user_style: cooperative       # cooperative | terse | vague (a less helpful user)
      judge_model: scripted-judge
      judge_structured: off         # off | auto | json_schema | json_object | choice
      grader_structured: off
      temperature: 0.0              # null: not sent (e.g. OpenAI o-series)
      max_tokens_param: max_tokens  # or max_completion_tokens
    report:                         # prefduel prefdisco report
      bootstrap: 1000
      min_gap: 0.1
    llm: {backend: scripted}        # the shared LLM settings (prefduel.llm.LLMConfig)
    llm_roles:                      # optional per-group overrides of `llm`
      judge: {backend: openai, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}

Groups of ``llm_roles``: ``model`` (roles ask, answer, phrase), ``user`` (router), ``judge`` (judge,
grader) and ``generate`` (persona, rubric). Unknown keys are errors naming the file and key.

The ``generate`` section is in `prefduel.prefdisco.generate_config` and the bounds of every
section in `prefduel.prefdisco.config_fields`; both are re-exported here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from prefduel.core.schema import Integer, Number, frozen_dataclass, validate
from prefduel.core.yamlfile import read_yaml
from prefduel.llm.config import LLMConfig
from prefduel.llm.structured import StructuredMode
from prefduel.prefdisco.config_fields import (
    MAX_ATTEMPTS,
    MAX_ATTRIBUTES,
    MAX_BOOTSTRAP,
    MAX_IN_FLIGHT,
    MAX_INSTANCES,
    MAX_PERSONAS,
    MAX_TASK_ITEMS,
    MAX_TOKEN_LIMIT,
    MAX_TURNS,
    Attempts,
    Attributes,
    Flag,
    ModelName,
    NonNegative,
    Seed,
    Tokens,
)
from prefduel.prefdisco.errors import ConfigError
from prefduel.prefdisco.generate_config import (
    FORMATS,
    GenerateConfig,
    SparsityConfig,
    TaskSource,
    resolve_paths,
)
from prefduel.prefdisco.interview_config import InterviewerConfig

CONDITIONS = ("baseline", "discovery", "oracle")
#: How the discovery condition learns about the user: the model asks (``ask``), or the
#: Bayesian interviewer chooses the questions (``interviewer``).
STRATEGIES = ("ask", "interviewer")
RouterName = Literal["auto", "keyword", "llm"]
ROUTERS: tuple[str, ...] = get_args(RouterName)
UserStyle = Literal["cooperative", "terse", "vague"]
USER_STYLES: tuple[str, ...] = get_args(UserStyle)
ROLE_GROUPS = {
    "model": ("ask", "answer", "phrase"),
    "user": ("router",),
    "judge": ("judge", "grader"),
    "generate": ("persona", "rubric"),
}


@frozen_dataclass(error=ConfigError, path="run")
class RunConfig:
    """Settings of ``prefdisco run``.

    Attributes:
        models: Models under test.
        conditions: Any of baseline, discovery, oracle (NormAlign needs all three).
        strategies: How discovery runs, one discovery episode per strategy: ``ask`` (the
            model under test asks) and/or ``interviewer`` (the Bayesian interviewer chooses
            each question; the model only words it with ``interviewer.phrasing: llm`` and
            writes the final answer). Baseline and oracle episodes are shared.
        interviewer: The interviewer's settings (`InterviewerConfig`).
        follow_up_check: Record per discovery episode whether the second question changes
            when the first reply is altered (`prefduel.prefdisco.episode.follow_up`; one more ask
            request per ``ask`` episode, no call for the interviewer).
        max_turns: Question budget of the discovery condition.
        ask_attempts: Ask-phase requests per turn while the reply is neither a question nor
            READY (the bad reply is shown back); then the phase stops as ``malformed``.
        router: ``keyword`` (offline), ``llm``, or ``auto``: the keyword router when the user
            group is on the scripted backend, else whichever of the two is more accurate on
            the labelled questions (`prefduel.prefdisco.episode.router_check`).
        user_style: How helpful the simulated user is: ``cooperative``, ``terse`` (the first
            attribute asked about, label only) or ``vague`` (only hints at the value).
        router_model: Model of the LLM router (default: ``judge_model``).
        max_attributes_per_question: Most attributes one question may route to.
        tfidf_threshold: TF-IDF fallback threshold of the keyword router (null: off).
        judge_model: Per-attribute rubric judge.
        grader_model: Accuracy fallback grader (default: ``judge_model``).
        judge_attempts: Requests per judgement before a score is recorded as missing.
        judge_structured: Ask the judge's endpoint for structured output
            (`prefduel.llm.structured`): ``off`` (default), ``auto`` or ``json_schema``
            (``{"score": "4"}``), ``json_object`` (the same schema in the form
            llama-cpp-python's server takes) or ``choice`` (a bare ``"4"``). The free-text
            parser stays the fallback when the endpoint ignores the schema, and a refused
            format is asked again one rung down (``json_schema``, ``json_object``, none).
        grader_structured: The same for the grader (``{"verdict": "CORRECT"}``).
        temperature: Sampling temperature of the model under test (null: not sent, for
            endpoints that only accept their default, such as OpenAI's o-series).
        judge_temperature: Temperature of judge, grader and router (null: not sent).
        ask_max_tokens: Token limit of an ask-phase request (null: not sent). The limits
            are generous because a reasoning model spends them on hidden reasoning first; a
            reply cut by the limit shows as ``finish_reason: length`` in the transcript and
            the report.
        answer_max_tokens: Token limit of the final answer (null: not sent).
        judge_max_tokens: Token limit of judge, grader and router requests (null: not sent).
        max_tokens_param: The parameter name of the token limits: ``max_tokens`` or
            ``max_completion_tokens`` (required by OpenAI reasoning models).
        api_seed: Sent as the API ``seed`` to the model under test (null: not sent).
        episodes_in_flight: Episodes worked on at once (calls are further limited by the
            client's ``max_connections``).
    """

    models: tuple[ModelName, ...] = ("scripted-ask1", "scripted-ask3", "scripted-ask5")
    conditions: tuple[str, ...] = CONDITIONS
    strategies: tuple[str, ...] = ("ask",)
    interviewer: InterviewerConfig = field(default_factory=InterviewerConfig)
    follow_up_check: Flag = True
    max_turns: Annotated[Integer, Field(ge=1, le=MAX_TURNS)] = 5
    ask_attempts: Attempts = 2
    router: RouterName = "auto"
    user_style: UserStyle = "cooperative"
    router_model: ModelName | None = None
    max_attributes_per_question: Attributes = 2
    tfidf_threshold: Annotated[Number, Field(gt=0, le=1)] | None = 0.15
    judge_model: ModelName = "scripted-judge"
    grader_model: ModelName | None = None
    judge_attempts: Attempts = 3
    judge_structured: StructuredMode = "off"
    grader_structured: StructuredMode = "off"
    temperature: NonNegative | None = 0.0
    judge_temperature: NonNegative | None = 0.0
    ask_max_tokens: Tokens | None = 1024
    answer_max_tokens: Tokens | None = 2048
    judge_max_tokens: Tokens | None = 512
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    api_seed: Annotated[Integer, Field(ge=0, le=2**63 - 1)] | None = None
    episodes_in_flight: Annotated[Integer, Field(ge=1, le=MAX_IN_FLIGHT)] = 64

    @field_validator("judge_structured", "grader_structured", mode="before")
    @classmethod
    def _yaml_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML reads a bare `off` as false

    @field_validator("models")
    @classmethod
    def _distinct_models(cls, models: tuple[str, ...]) -> tuple[str, ...]:
        if not models:
            raise ValueError("expected a non-empty list of names, got ()")
        if len(set(models)) != len(models):
            raise ValueError(f"duplicate names in {list(models)}")
        return models

    @field_validator("conditions")
    @classmethod
    def _distinct_conditions(cls, conditions: tuple[str, ...]) -> tuple[str, ...]:
        bad = [c for c in conditions if c not in CONDITIONS]
        if not conditions or bad or len(set(conditions)) != len(conditions):
            raise ValueError(
                f"expected distinct values from {list(CONDITIONS)}, got {list(conditions)}"
            )
        return conditions

    @field_validator("strategies")
    @classmethod
    def _distinct_strategies(cls, strategies: tuple[str, ...]) -> tuple[str, ...]:
        bad = [x for x in strategies if x not in STRATEGIES]
        if not strategies or bad or len(set(strategies)) != len(strategies):
            raise ValueError(
                f"expected distinct values from {list(STRATEGIES)}, got {list(strategies)}"
            )
        return strategies

    def params(self, role: str) -> dict[str, Any]:
        """Sampling parameters of a role's requests (``ask``, ``answer``, ``judge``,
        ``grader``, ``router``): temperature and token limit, each only when set."""
        model_roles = ("ask", "answer")
        if role not in (*model_roles, "judge", "grader", "router"):
            raise ConfigError(f"unknown role {role!r}")
        temperature = self.temperature if role in model_roles else self.judge_temperature
        tokens = {"ask": self.ask_max_tokens, "answer": self.answer_max_tokens}.get(
            role, self.judge_max_tokens
        )
        params: dict[str, Any] = {}
        if temperature is not None:
            params["temperature"] = temperature
        if tokens is not None:
            params[self.max_tokens_param] = tokens
        return params

    @property
    def router_model_name(self) -> str:
        """The LLM router's model."""
        return self.router_model or self.judge_model

    @property
    def grader_model_name(self) -> str:
        """The accuracy grader's model."""
        return self.grader_model or self.judge_model


@frozen_dataclass(error=ConfigError, path="report")
class ReportConfig:
    """Settings of ``prefdisco report``.

    Attributes:
        bootstrap: Bootstrap replicates for NormAlign intervals (0: none).
        level: Interval coverage, in (0, 1).
        min_gap: Smallest oracle - baseline PrefAlign gap for which NormAlign is defined.
        seed: Seed of the bootstrap streams.
        warn_dropped: Warn in the headline when more than this share of a model's instances
            is left out of NormAlign because a judgement is missing.
    """

    bootstrap: Annotated[Integer, Field(ge=0, le=MAX_BOOTSTRAP)] = 1000
    level: Annotated[Number, Field(gt=0, lt=1)] = 0.95
    min_gap: Annotated[Number, Field(gt=0)] = 0.1
    seed: Seed = 0
    warn_dropped: Annotated[Number, Field(ge=0, le=1)] = 0.1


@frozen_dataclass(error=ConfigError, keys="sections")
class PrefDiscoConfig:
    """The whole study: generation, run, report and LLM settings.

    Attributes:
        generate: `GenerateConfig`.
        run: `RunConfig`.
        report: `ReportConfig`.
        llm: Shared LLM settings (`prefduel.llm.LLMConfig`).
        llm_roles: Group (``model``, ``user``, ``judge``, ``generate``) -> keys of ``llm`` to
            override for that group.
    """

    generate: GenerateConfig = field(default_factory=GenerateConfig)
    run: RunConfig = field(default_factory=RunConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    llm_roles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @model_validator(mode="after")
    def _role_overrides_apply(self) -> PrefDiscoConfig:
        known = {f.name for f in dataclasses.fields(LLMConfig)}
        for group, overrides in self.llm_roles.items():
            if group not in ROLE_GROUPS:
                raise ValueError(
                    f"llm_roles: unknown group {group!r}; expected {sorted(ROLE_GROUPS)}"
                )
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise ValueError(
                    f"llm_roles.{group}: unknown keys {unknown}; expected {sorted(known)}"
                )
            self.llm_for(group)
        return self

    def llm_for(self, group: str) -> LLMConfig:
        """The LLM settings of a role group (``llm`` with the group's overrides)."""
        if group not in ROLE_GROUPS:
            raise ConfigError(f"unknown role group {group!r}; expected {sorted(ROLE_GROUPS)}")
        overrides = dict(self.llm_roles.get(group) or {})
        try:
            return dataclasses.replace(self.llm, **overrides)
        except ValueError as exc:  # LLMConfigError
            raise ConfigError(f"llm_roles.{group}: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` with every section (what the manifest stores)."""
        return {
            "generate": _to_json(self.generate),
            "run": _to_json(self.run),
            "report": _to_json(self.report),
            "llm": self.llm.to_json(),
            "llm_roles": {k: dict(v) for k, v in sorted(self.llm_roles.items())},
        }

    @classmethod
    def from_mapping(
        cls, data: Mapping[str, Any] | None, *, source: str = "config", base_dir: Path | None = None
    ) -> PrefDiscoConfig:
        """Build from the YAML form (missing or empty sections and keys take the defaults).

        Args:
            data: The parsed YAML.
            source: File name for messages.
            base_dir: Relative task paths are resolved against it (the config's folder).

        Raises:
            ConfigError: Unknown section or key, or a bad value (names ``source`` and key).
        """
        if isinstance(data, Mapping):  # an empty section (``run:``) means its defaults
            data = {key: value for key, value in data.items() if value is not None}
        config = validate(cls, data if data is not None else {}, error=ConfigError, source=source)
        if base_dir is None:
            return config
        return dataclasses.replace(config, generate=resolve_paths(config.generate, base_dir))


def _to_json(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple | list):
        return [_to_json(x) for x in obj]
    return obj


def load_config(path: str | Path | None) -> PrefDiscoConfig:
    """Read a YAML config (None: the defaults, i.e. the offline demo).

    Raises:
        ConfigError: Missing file, not YAML, or a bad key (names file and key).
    """
    if path is None:
        return PrefDiscoConfig()
    p = Path(path)
    data = read_yaml(p, "config file", ConfigError)
    if data is not None and not isinstance(data, Mapping):
        raise ConfigError(f"{p}: expected a mapping of sections, got {type(data).__name__}")
    return PrefDiscoConfig.from_mapping(data, source=str(p), base_dir=p.parent.resolve())


def config_from_json(data: Mapping[str, Any], *, source: str = "manifest") -> PrefDiscoConfig:
    """Rebuild a config from `PrefDiscoConfig.to_json` output (paths kept as stored)."""
    return PrefDiscoConfig.from_mapping(data, source=source, base_dir=None)


__all__ = [
    "CONDITIONS",
    "FORMATS",
    "MAX_ATTEMPTS",
    "MAX_ATTRIBUTES",
    "MAX_BOOTSTRAP",
    "MAX_INSTANCES",
    "MAX_IN_FLIGHT",
    "MAX_PERSONAS",
    "MAX_TASK_ITEMS",
    "MAX_TOKEN_LIMIT",
    "MAX_TURNS",
    "ROLE_GROUPS",
    "ROUTERS",
    "STRATEGIES",
    "USER_STYLES",
    "GenerateConfig",
    "PrefDiscoConfig",
    "ReportConfig",
    "RouterName",
    "RunConfig",
    "SparsityConfig",
    "TaskSource",
    "UserStyle",
    "config_from_json",
    "load_config",
]
