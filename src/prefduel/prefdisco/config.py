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
      max_turns: 5
      router: keyword               # keyword (offline) | llm
      judge_model: scripted-judge
      temperature: 0.0              # null: not sent (e.g. OpenAI o-series)
      max_tokens_param: max_tokens  # or max_completion_tokens
    report:                         # prefduel prefdisco report
      bootstrap: 1000
      min_gap: 0.1
    llm: {backend: scripted}        # the shared LLM settings (prefduel.llm.LLMConfig)
    llm_roles:                      # optional per-group overrides of `llm`
      judge: {backend: openai, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY}

Groups of ``llm_roles``: ``model`` (roles ask, answer), ``user`` (router), ``judge`` (judge,
grader) and ``generate`` (persona, rubric). Unknown keys are errors naming the file and key.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefduel.core.yamlfile import read_yaml
from prefduel.llm.config import LLMConfig
from prefduel.llm.errors import LLMConfigError
from prefduel.prefdisco.errors import ConfigError
from prefduel.prefdisco.preferences import SparsityConfig
from prefduel.prefdisco.tasks import FORMATS

CONDITIONS = ("baseline", "discovery", "oracle")
ROUTERS = ("keyword", "llm")
ROLE_GROUPS = {
    "model": ("ask", "answer"),
    "user": ("router",),
    "judge": ("judge", "grader"),
    "generate": ("persona", "rubric"),
}


def _positive_int(value: Any, name: str, *, allow_none: bool = False, low: int = 1) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"{name}: expected an integer >= {low}, got {value!r}")


def _number(value: Any, name: str, *, low: float | None = None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name}: expected a number, got {value!r}")
    if low is not None and not value >= low:
        raise ConfigError(f"{name}: expected a number >= {low}, got {value!r}")


@dataclass(frozen=True)
class TaskSource:
    """Where tasks come from.

    Attributes:
        format: ``builtin`` or one of ``math500``, ``medqa``, ``commonsenseqa``, ``logiqa``,
            ``socialiqa``, ``generic`` (see `prefduel.prefdisco.tasks`).
        path: The JSONL file (not for ``builtin``); relative paths are relative to the config
            file.
        name: Source name for grouping results (default: the format).
        domain: Task domain override.
        limit: Keep the first ``limit`` items.
        labels: Social IQa labels file (one label per line).
    """

    format: str = "builtin"
    path: str | None = None
    name: str | None = None
    domain: str | None = None
    limit: int | None = None
    labels: str | None = None

    def __post_init__(self) -> None:
        if self.format != "builtin" and self.format not in FORMATS:
            raise ConfigError(
                f"tasks.format: expected builtin or one of {list(FORMATS)}, got {self.format!r}"
            )
        if self.format != "builtin" and not self.path:
            raise ConfigError(f"tasks: a {self.format} source needs a path")
        if self.format == "builtin" and self.path:
            raise ConfigError("tasks: the builtin source takes no path")
        _positive_int(self.limit, "tasks.limit", allow_none=True)


@dataclass(frozen=True)
class GenerateConfig:
    """Settings of ``prefdisco generate`` (see the module docstring for each key)."""

    seed: int = 0
    personas: int = 6
    personas_per_task: int | None = 2
    tasks: tuple[TaskSource, ...] = (TaskSource(),)
    taxonomy: str | None = None
    persona_space: str | None = None
    k_min: int = 3
    k_max: int = 5
    dirichlet_alpha: float = 1.0
    max_per_family: int = 2
    value_noise: float = 0.6
    relevance_power: float = 3.0
    min_distance: float = 0.35
    enrich: bool = False
    refine_rubrics: bool = False
    model: str = "scripted-writer"
    temperature: float = 0.7

    def __post_init__(self) -> None:
        _positive_int(self.seed, "generate.seed", low=0)
        _positive_int(self.personas, "generate.personas")
        _positive_int(self.personas_per_task, "generate.personas_per_task", allow_none=True)
        if not self.tasks:
            raise ConfigError("generate.tasks: expected at least one task source")
        _number(self.min_distance, "generate.min_distance", low=0)
        _number(self.temperature, "generate.temperature", low=0)
        for name in ("enrich", "refine_rubrics"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"generate.{name}: expected true or false")
        try:
            _ = self.sparsity
        except ValueError as exc:
            raise ConfigError(f"generate: {exc}") from None

    @property
    def sparsity(self) -> SparsityConfig:
        """The preference-sampling settings."""
        return SparsityConfig(
            k_min=self.k_min,
            k_max=self.k_max,
            dirichlet_alpha=self.dirichlet_alpha,
            max_per_family=self.max_per_family,
            value_noise=self.value_noise,
            relevance_power=self.relevance_power,
        )


@dataclass(frozen=True)
class RunConfig:
    """Settings of ``prefdisco run``.

    Attributes:
        models: Models under test.
        conditions: Any of baseline, discovery, oracle (NormAlign needs all three).
        max_turns: Question budget of the discovery condition.
        router: ``keyword`` (offline) or ``llm``.
        router_model: Model of the LLM router (default: ``judge_model``).
        max_attributes_per_question: Most attributes one question may route to.
        tfidf_threshold: TF-IDF fallback threshold of the keyword router (null: off).
        judge_model: Per-attribute rubric judge.
        grader_model: Accuracy fallback grader (default: ``judge_model``).
        judge_attempts: Requests per judgement before a score is recorded as missing.
        temperature: Sampling temperature of the model under test (null: not sent, for
            endpoints that only accept their default, such as OpenAI's o-series).
        judge_temperature: Temperature of judge, grader and router (null: not sent).
        ask_max_tokens: Token limit of an ask-phase request (null: not sent).
        answer_max_tokens: Token limit of the final answer (null: not sent).
        judge_max_tokens: Token limit of judge, grader and router requests (null: not sent).
        max_tokens_param: The parameter name of the token limits: ``max_tokens`` or
            ``max_completion_tokens`` (required by OpenAI reasoning models).
        api_seed: Sent as the API ``seed`` to the model under test (null: not sent).
        episodes_in_flight: Episodes worked on at once (calls are further limited by the
            client's ``max_connections``).
    """

    models: tuple[str, ...] = ("scripted-ask1", "scripted-ask3", "scripted-ask5")
    conditions: tuple[str, ...] = CONDITIONS
    max_turns: int = 5
    router: str = "keyword"
    router_model: str | None = None
    max_attributes_per_question: int = 2
    tfidf_threshold: float | None = 0.15
    judge_model: str = "scripted-judge"
    grader_model: str | None = None
    judge_attempts: int = 3
    temperature: float | None = 0.0
    judge_temperature: float | None = 0.0
    ask_max_tokens: int | None = 256
    answer_max_tokens: int | None = 2048
    judge_max_tokens: int | None = 32
    max_tokens_param: str = "max_tokens"
    api_seed: int | None = None
    episodes_in_flight: int = 64

    def __post_init__(self) -> None:
        if not self.models or not all(isinstance(m, str) and m for m in self.models):
            raise ConfigError(f"run.models: expected a non-empty list of names, got {self.models}")
        if len(set(self.models)) != len(self.models):
            raise ConfigError(f"run.models: duplicate names in {list(self.models)}")
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if not self.conditions or bad or len(set(self.conditions)) != len(self.conditions):
            raise ConfigError(
                f"run.conditions: expected distinct values from {list(CONDITIONS)}, "
                f"got {list(self.conditions)}"
            )
        _positive_int(self.max_turns, "run.max_turns")
        if self.router not in ROUTERS:
            raise ConfigError(f"run.router: expected one of {list(ROUTERS)}, got {self.router!r}")
        _positive_int(self.max_attributes_per_question, "run.max_attributes_per_question")
        _number(self.tfidf_threshold, "run.tfidf_threshold", low=0, allow_none=True)
        _positive_int(self.judge_attempts, "run.judge_attempts")
        _number(self.temperature, "run.temperature", low=0, allow_none=True)
        _number(self.judge_temperature, "run.judge_temperature", low=0, allow_none=True)
        if self.max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ConfigError(
                "run.max_tokens_param: expected max_tokens or max_completion_tokens, "
                f"got {self.max_tokens_param!r}"
            )
        for name in ("ask_max_tokens", "answer_max_tokens", "judge_max_tokens"):
            _positive_int(getattr(self, name), f"run.{name}", allow_none=True)
        _positive_int(self.api_seed, "run.api_seed", allow_none=True, low=0)
        _positive_int(self.episodes_in_flight, "run.episodes_in_flight")
        for name in ("judge_model", "router_model", "grader_model"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"run.{name}: expected a model name, got {value!r}")

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


@dataclass(frozen=True)
class ReportConfig:
    """Settings of ``prefdisco report``.

    Attributes:
        bootstrap: Bootstrap replicates for NormAlign intervals (0: none).
        level: Interval coverage.
        min_gap: Smallest oracle - baseline PrefAlign gap for which NormAlign is defined.
        seed: Seed of the bootstrap streams.
    """

    bootstrap: int = 1000
    level: float = 0.95
    min_gap: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        _positive_int(self.bootstrap, "report.bootstrap", low=0)
        _number(self.level, "report.level", low=0)
        if not 0 < self.level < 1:
            raise ConfigError(f"report.level: expected in (0, 1), got {self.level!r}")
        _number(self.min_gap, "report.min_gap", low=0)
        if not self.min_gap > 0:
            raise ConfigError(f"report.min_gap: expected > 0, got {self.min_gap!r}")
        _positive_int(self.seed, "report.seed", low=0)


@dataclass(frozen=True)
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

    def __post_init__(self) -> None:
        known = {f.name for f in dataclasses.fields(LLMConfig)}
        for group, overrides in self.llm_roles.items():
            if group not in ROLE_GROUPS:
                raise ConfigError(
                    f"llm_roles: unknown group {group!r}; expected {sorted(ROLE_GROUPS)}"
                )
            unknown = sorted(set(overrides) - known)
            if unknown:
                raise ConfigError(
                    f"llm_roles.{group}: unknown keys {unknown}; expected {sorted(known)}"
                )
            self.llm_for(group)

    def llm_for(self, group: str) -> LLMConfig:
        """The LLM settings of a role group (``llm`` with the group's overrides)."""
        if group not in ROLE_GROUPS:
            raise ConfigError(f"unknown role group {group!r}; expected {sorted(ROLE_GROUPS)}")
        overrides = dict(self.llm_roles.get(group) or {})
        try:
            return dataclasses.replace(self.llm, **overrides)
        except (LLMConfigError, TypeError) as exc:
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
        """Build from the YAML form (missing sections and keys take the defaults).

        Args:
            data: The parsed YAML.
            source: File name for messages.
            base_dir: Relative task paths are resolved against it (the config's folder).

        Raises:
            ConfigError: Unknown section or key, or a bad value (names ``source`` and key).
        """
        data = dict(data or {})
        sections = {"generate", "run", "report", "llm", "llm_roles"}
        unknown = sorted(set(data) - sections)
        if unknown:
            raise ConfigError(f"{source}: unknown sections {unknown}; expected {sorted(sections)}")
        try:
            generate = _build(GenerateConfig, data.get("generate"), f"{source}: generate")
            if base_dir is not None:
                generate = dataclasses.replace(
                    generate,
                    tasks=tuple(_resolve(t, base_dir) for t in generate.tasks),
                    taxonomy=_path(generate.taxonomy, base_dir),
                    persona_space=_path(generate.persona_space, base_dir),
                )
            run = _build(RunConfig, data.get("run"), f"{source}: run")
            report = _build(ReportConfig, data.get("report"), f"{source}: report")
            llm = LLMConfig.from_mapping(data.get("llm"), source=f"{source}: llm")
            roles = data.get("llm_roles") or {}
            if not isinstance(roles, Mapping):
                raise ConfigError(f"{source}: llm_roles must map groups to settings")
            return cls(generate, run, report, llm, {str(k): dict(v) for k, v in roles.items()})
        except LLMConfigError as exc:
            raise ConfigError(str(exc)) from None
        except ConfigError as exc:
            message = str(exc)
            raise ConfigError(
                message if message.startswith(source) else f"{source}: {message}"
            ) from None


def _path(value: str | None, base: Path) -> str | None:
    if value is None or Path(value).is_absolute():
        return value
    return str(base / value)


def _resolve(source: TaskSource, base: Path) -> TaskSource:
    return dataclasses.replace(
        source, path=_path(source.path, base), labels=_path(source.labels, base)
    )


def _to_json(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _to_json(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple | list):
        return [_to_json(x) for x in obj]
    return obj


def _build(cls: type, data: Any, where: str) -> Any:
    """A frozen dataclass from a mapping: unknown keys refused, lists of sources converted."""
    if data is None:
        return cls()
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; expected {sorted(known)}")
    values = {}
    for key, value in data.items():
        hint = hints[key]
        if key == "tasks":
            if not isinstance(value, list):
                raise ConfigError(f"{where}.tasks: expected a list of sources")
            value = tuple(_build(TaskSource, v, f"{where}.tasks[{i}]") for i, v in enumerate(value))
        elif _is_tuple(hint):
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise ConfigError(f"{where}.{key}: expected a list, got {value!r}")
            value = tuple(value)
        values[key] = value
    try:
        return cls(**values)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _is_tuple(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is tuple:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_is_tuple(h) for h in typing.get_args(hint))
    return False


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
