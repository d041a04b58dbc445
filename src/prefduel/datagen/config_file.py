"""The datagen config file's schema: typed, frozen pydantic models of its sections.

`ConfigFile` is the top level (``prefduel.datagen.config`` documents the keys); unknown keys
are errors naming the file and the field. The collections (``personas``, ``topics``, ...) and
the ``models`` and ``prompts`` sections are checked in a second step, because their defaults
and allowed values depend on other sections (`prefduel.datagen.collections`,
`prefduel.datagen.config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
)

from prefduel.core.schema import FORBID_EXTRA, Integer, Real, Text, frozen_dataclass
from prefduel.datagen.errors import DatagenConfigError
from prefduel.datagen.prompts import MAX_TOKENS, Templates, check_template
from prefduel.llm.config import check_path
from prefduel.llm.errors import RequestError
from prefduel.llm.request import Params
from prefduel.llm.structured import StructuredMode
from prefduel.worlds.roster_file import MAX_KNOB
from prefduel.worlds.tutorsim_data import DEFAULT_PARAMS
from prefduel.worlds.world import MAX_ARRIVALS

ROLES = ("question", "answer", "rater", "judge")
DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_ROLE_SETTINGS: dict[str, dict[str, Any]] = {
    "question": {"temperature": 0.8, "max_tokens": 150, "expected_tokens": 50},
    "answer": {"temperature": 0.7, "max_tokens": 400, "expected_tokens": 250},
    "rater": {"temperature": 0.0, "max_tokens": 200, "expected_tokens": 80},
    "judge": {"temperature": 1.0, "max_tokens": 4, "expected_tokens": 1},
}
DEFAULT_RETRIES = {"question": 2, "answer": 2, "rater": 2, "judge": 0}
#: Share of the judge's picks that must be valid (not malformed) for a world to be built: a
#: world from fewer would rest on a judge that mostly did not answer.
DEFAULT_MIN_VALID = 0.5
#: A structured judge answer (``{"pick": "A"}``) needs more than the default 4 tokens: the
#: judge's ``max_tokens`` when ``structured`` asks for an object (``auto``, ``json_schema``,
#: ``json_object``) and none is given.
STRUCTURED_JUDGE_TOKENS = 16
#: How the judge's pick probability is measured (``judge: {mode: ...}``).
JudgeMode = Literal["samples", "logprobs"]
#: Request parameters a role's ``params`` may not set (each has its own key, or is the sample).
RESERVED_PARAMS = ("model", "messages", "seed", "stream", "n", "temperature", "max_tokens")

#: TutorSim knobs the scripted backend reads (the others concern TutorSim's own rosters).
SCRIPTED_PARAMS = (
    "taste_scale",
    "persona_offset",
    "cue_strength",
    "ncenter",
    "topic_noise",
    "question_noise",
    "utility_noise",
    "template_scale",
    "quirk_strength",
    "rater_dim_error",
    "rater_bias",
    "rater_noise",
    "judge_beta",
    "judge_position",
    "judge_label",
    "judge_noise",
)

#: Largest sizes a config may set (every count a user types is bounded before anything is
#: allocated or sent). Judge picks per configuration: as TutorSim's ``judge_samples``.
MAX_SAMPLES = 1000
#: Extra tries per malformed answer.
MAX_RETRIES = 20
#: Sampling temperature (endpoints take 0 to 2; some accept more).
MAX_TEMPERATURE = 100.0
#: Seconds a scripted answer may take (``scripted.latency``).
MAX_LATENCY = 60.0
#: Largest size of a rater score (``rater.scale``).
MAX_SCORE = 1e6
#: Smallest ridge of the Bradley-Terry fit (a smaller one leaves its matrix singular).
MIN_RIDGE = 1e-6
#: Seeds, as every prefduel seed: ``0 <= seed < 2**32``.
SEED_LIMIT = 2**32

Count = Annotated[Integer, Field(ge=0)]
Positive = Annotated[Integer, Field(ge=1)]
Chance = Annotated[Real, Field(ge=0.0, le=1.0)]
Retries = Annotated[Integer, Field(ge=0, le=MAX_RETRIES)]
Tokens = Annotated[Integer, Field(ge=1, le=MAX_TOKENS)]
#: A TutorSim knob or another scale of order 1 (larger ones overflow exponentials).
Knob = Annotated[Real, Field(ge=0.0, le=MAX_KNOB)]
PositiveKnob = Annotated[Real, Field(gt=0.0, le=MAX_KNOB)]


def _request_params(value: Any) -> Any:
    """A role's ``params`` mapping as sorted ``(name, value)`` pairs."""
    if value is None:
        return ()
    if isinstance(value, tuple):
        return value  # pairs made in code
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of parameter names, got {type(value).__name__}")
    for reserved in RESERVED_PARAMS:
        if reserved in value:
            raise ValueError(
                f"{reserved!r} cannot be set here (use the role's own key or the sample count)"
            )
    try:  # checked now, not when the role's first request is built (after other stages ran)
        Params(value)
    except RequestError as exc:
        raise ValueError(str(exc)) from None
    return tuple(sorted((str(k), v) for k, v in value.items()))


@frozen_dataclass(error=DatagenConfigError)
class RoleModel:
    """Model and sampling settings of one role.

    Attributes:
        model: Model name as the endpoint knows it.
        temperature: Sampling temperature (None: not sent).
        max_tokens: Completion token limit (None: not sent).
        seed: API seed; sample ``s`` is sent ``seed + s`` (None: no seed).
        expected_tokens: Completion tokens a typical answer has, for dry-run estimates
            (default: ``max_tokens``, an upper bound).
        params: More request parameters sent verbatim (``top_p``, ``reasoning_effort``, ...);
            given as a mapping, stored as sorted pairs.
        structured: Ask for structured output (``response_format`` with a JSON schema, or a
            constrained choice for the judge; `prefduel.llm.structured`): ``auto``,
            ``json_schema``, ``json_object`` (llama-cpp-python's form), ``choice`` (judge
            only) or ``off`` (default).
    """

    model: Text
    temperature: Annotated[Real, Field(ge=0.0, le=MAX_TEMPERATURE)] | None = None
    max_tokens: Tokens | None = None
    seed: Annotated[Integer, Field(ge=0, lt=SEED_LIMIT)] | None = None
    expected_tokens: Tokens | None = None
    params: tuple[tuple[str, Any], ...] = ()
    structured: StructuredMode = "off"

    @field_validator("params", mode="before")
    @classmethod
    def _params_from_mapping(cls, value: Any) -> Any:
        return _request_params(value)

    @field_validator("expected_tokens")
    @classmethod
    def _within_max_tokens(cls, value: int | None, info: ValidationInfo) -> int | None:
        limit = info.data.get("max_tokens")
        if value is not None and limit is not None and value > limit:
            raise ValueError(f"expected at most max_tokens ({limit}), got {value}")
        return value

    def request_params(self) -> dict[str, Any]:
        """The parameters sent with each request."""
        out: dict[str, Any] = dict(self.params)
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        return out

    def completion_estimate(self) -> int:
        """Completion tokens assumed by dry runs."""
        return self.expected_tokens or self.max_tokens or 256


@frozen_dataclass(error=DatagenConfigError, path="world")
class WorldLayout:
    """How the judged (student, question) cells become arrivals.

    Attributes:
        arrivals: Arrivals N. Students are assigned in a seeded, balanced random order
            (every student ``floor(N / I)`` or ``ceil(N / I)`` times).
        rounds: Rounds S per arrival: S distinct questions drawn uniformly without replacement
            from the question bank for each arrival (None: ``min(24, Q)``).
    """

    arrivals: Annotated[Integer, Field(ge=1, le=MAX_ARRIVALS)] = 100
    rounds: Positive | None = None


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RetriesSection(_Section):
    """``retries``: extra tries (next sample indices) per role for malformed answers."""

    question: Retries = DEFAULT_RETRIES["question"]
    answer: Retries = DEFAULT_RETRIES["answer"]
    rater: Retries = DEFAULT_RETRIES["rater"]
    judge: Retries = DEFAULT_RETRIES["judge"]


class AsksSection(_Section):
    """``asks``: whether the students answer the preference questions (`prefduel.datagen.asks`)
    and the extra tries of a malformed answer."""

    enabled: bool = True
    retries: Retries = 2


class JudgeSection(_Section):
    """``judge``: how the pick probability of each (pair, display order, label assignment) is
    measured: ``samples`` picks at the judge's temperature (default), or ``logprobs``: one call
    whose ``top_logprobs`` give it directly (falling back to ``samples`` picks per call when the
    endpoint returns none); and ``min_valid``, the share of the picks that must be valid for a
    world to be built (default `DEFAULT_MIN_VALID`)."""

    mode: JudgeMode = "samples"
    top_logprobs: Annotated[Integer, Field(ge=1, le=20)] = 5
    min_valid: Annotated[Real, Field(gt=0.0, le=1.0)] = DEFAULT_MIN_VALID  # 0 valid: no world


class QuestionsSection(_Section):
    """``questions``: cues drawn per (topic, chain, kind)."""

    cues_per_question: Positive = 1


class RaterSection(_Section):
    """``rater``: the lowest and highest score."""

    scale: tuple[Real, Real] = (1.0, 10.0)

    @field_validator("scale", mode="before")
    @classmethod
    def _two_numbers(cls, value: Any) -> Any:
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise ValueError(f"expected [lowest, highest], got {value!r}")
        return value

    @field_validator("scale")
    @classmethod
    def _ordered(cls, value: tuple[float, float]) -> tuple[float, float]:
        if max(abs(value[0]), abs(value[1])) > MAX_SCORE:
            raise ValueError(f"expected scores of at most {MAX_SCORE:g} in size, got {value!r}")
        if not value[0] < value[1]:
            raise ValueError(f"expected lowest < highest, got {list(value)!r}")
        return value


class BtSection(_Section):
    """``bt``: the per-(student, question) Bradley-Terry fit."""

    ridge: Annotated[Real, Field(ge=MIN_RIDGE, le=MAX_KNOB)] = DEFAULT_PARAMS.bt_ridge
    scale: PositiveKnob = DEFAULT_PARAMS.bt_scale


#: ``scripted``: TutorSim knobs (`SCRIPTED_PARAMS`, each >= 0; None: TutorSim's value) and the
#: scripted backend's own settings.
ScriptedSection = create_model(
    "ScriptedSection",
    __config__=FORBID_EXTRA,
    **{name: (Knob | None, None) for name in SCRIPTED_PARAMS},  # type: ignore[call-overload]
    rater_gain=(Knob, 2.0),
    judge_malformed=(Chance, 0.0),
    rater_malformed=(Chance, 0.0),
    latency=(Annotated[Real, Field(ge=0.0, le=MAX_LATENCY)], 0.0),
)


def _placeholders(text: str, info: ValidationInfo) -> str:
    check_template(str(info.field_name), text)  # ValueError names the placeholders
    return text


#: ``prompts``: replacement templates by name (see `prefduel.datagen.prompts`).
PromptsSection = create_model(
    "PromptsSection",
    __config__=FORBID_EXTRA,
    **{  # type: ignore[call-overload]
        f.name: (Annotated[Text, AfterValidator(_placeholders)] | None, None)
        for f in dataclasses.fields(Templates)
    },
)


class ModelsSection(_Section):
    """``models``: a default model name and, per role, a model name or a `RoleModel` mapping."""

    default: Text = DEFAULT_MODEL
    question: Any = None
    answer: Any = None
    rater: Any = None
    judge: Any = None


class ConfigFile(_Section):
    """The top level of a datagen config file, with the sections checked on their own."""

    name: Any = None  # a folder name; its default (the file's stem) is checked too
    seed: Annotated[Integer, Field(ge=0, lt=2**32)] = 0
    output: Annotated[Text, AfterValidator(check_path)] | None = None
    llm: Mapping[str, Any] | None = None
    batch: Mapping[str, Any] | None = None  # BatchSettings (checked by it)
    cache: Any = None  # cache, call_log and budget: shortcuts for llm.* (LLMConfig checks)
    call_log: Any = None
    budget: Any = None
    models: ModelsSection | None = None
    samples: Annotated[Integer, Field(ge=1, le=MAX_SAMPLES)] = 4
    retries: RetriesSection | None = None
    judge: JudgeSection | None = None
    asks: AsksSection | bool | None = None  # a bool: asks: {enabled: ...}
    style: Any = "builtin"  # collections: see prefduel.datagen.collections
    personas: Any = "builtin"
    kinds: Any = "builtin"
    cues: Any = "builtin"
    topics: Any = None
    quirks: Any = "builtin"
    students: Any = None
    questions: QuestionsSection | None = None
    rater: RaterSection | None = None
    bt: BtSection | None = None
    world: WorldLayout | None = None
    prompts: Any = None  # a PromptsSection, or {file: path}
    scripted: ScriptedSection | None = None  # type: ignore[valid-type]


__all__ = [
    "DEFAULT_MIN_VALID",
    "DEFAULT_MODEL",
    "DEFAULT_RETRIES",
    "DEFAULT_ROLE_SETTINGS",
    "RESERVED_PARAMS",
    "ROLES",
    "SCRIPTED_PARAMS",
    "STRUCTURED_JUDGE_TOKENS",
    "AsksSection",
    "BtSection",
    "ConfigFile",
    "JudgeMode",
    "JudgeSection",
    "ModelsSection",
    "PromptsSection",
    "QuestionsSection",
    "RaterSection",
    "RetriesSection",
    "RoleModel",
    "ScriptedSection",
    "WorldLayout",
]
