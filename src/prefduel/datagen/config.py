"""The datagen config file: typed, frozen and validated, with errors naming file and field.

A config is YAML (see ``examples/small.yaml``)::

    name: small                     # world name, a folder name (default: the file's stem)
    seed: 0                         # cue draws, arrival layout, the scripted backend's truth
    output: worlds/small            # the stored world (a directory)
    llm: {backend: scripted}        # LLMConfig keys: backend, base_url, api_key_env, ...
    batch: {poll: 30, retry: online}   # provider batches (--batch): limits, polling, retries
    cache: .prefduel/llm-cache.sqlite   # shortcuts for llm.cache / llm.call_log /
    budget: 5.0                              # llm.budget (give each in one place only)
    models:                         # per role: a model name or a mapping
      default: gpt-4o-mini
      judge: {model: gpt-4o-mini, temperature: 1.0, max_tokens: 4}
    samples: 4                      # judge samples per (pair, display order, label assignment)
    asks: {enabled: true}           # students answer preference questions (retries: 2)
    judge: {mode: samples}          # or logprobs: one call per configuration, P from top_logprobs;
                                    # min_valid: 0.5 (share of valid picks a world needs)
    personas: builtin               # TutorSim's six personas; or a list; or {file: ..., take: ...}
    kinds: builtin                  # definition / computation / why
    cues: builtin                   # the 13 first-person cues
    topics: {builtin: dev, take: 4}
    students: {builtin: dev, take: [nursing_student, math_major]}
    questions: {cues_per_question: 1}
    world: {arrivals: 40, rounds: 24}

Collections (``personas``, ``kinds``, ``cues``, ``topics``, ``students``, ``quirks``, ``style``)
use TutorSim's YAML formats (``prefduel/worlds/data/*.yaml``, read with
`prefduel.worlds.tutorsim_catalogue`) and may be given as

* ``builtin`` (or ``{builtin: dev}`` / ``{builtin: heldout}`` for topics and students),
* an inline list of entries,
* ``{file: path.yaml}``: a file in TutorSim's format (top-level ``personas:``, ``topics:``,
  ``profiles:``, ``cues:``, ``kinds:``, ``quirks:`` or ``dims:``), relative to the config file,

each optionally with ``take: N`` (the first N) or ``take: [id, ...]`` (these, in this order).
Students may also be rendered from TutorSim's 7-trait template:
``students: {template: 20, quirks: 2}`` (`prefduel.datagen.collections`).

A role may ask for structured output (``models.<role>.structured``: ``auto``, ``json_schema``,
``json_object`` (llama-cpp-python's form), ``choice`` for the judge, or ``off``;
`prefduel.llm.structured`); a structured judge (``auto``, ``json_schema`` or ``json_object``)
gets ``max_tokens: 16`` unless it sets its own (``{"pick": "A"}`` needs more than the default
4).

Style, need and taste values (``style:`` of personas, ``need:`` of kinds and cues, ``taste:``,
``cue_following`` and ``quirks`` of students) are read only by the offline scripted backend,
whose judge follows TutorSim's latent preferences; a real LLM sees only the texts.

Input files are found relative to the config file; outputs (``output``, ``cache``,
``call_log``) relative to the working directory. The sections' schema is
`prefduel.datagen.config_file`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator

from prefduel.core.schema import Text, validate
from prefduel.core.yamlfile import read_yaml
from prefduel.datagen.collections import Where, read_collections, template_students
from prefduel.datagen.config_file import (
    DEFAULT_MIN_VALID,
    DEFAULT_MODEL,
    DEFAULT_RETRIES,
    DEFAULT_ROLE_SETTINGS,
    ROLES,
    SCRIPTED_PARAMS,
    STRUCTURED_JUDGE_TOKENS,
    AsksSection,
    BtSection,
    ConfigFile,
    JudgeSection,
    ModelsSection,
    PromptsSection,
    QuestionsSection,
    RaterSection,
    RetriesSection,
    RoleModel,
    WorldLayout,
)
from prefduel.datagen.errors import DatagenConfigError, DatagenError
from prefduel.datagen.prompts import Templates
from prefduel.datagen.sizes import check_sizes
from prefduel.llm.batchstate import BatchSettings
from prefduel.llm.config import LLMConfig, PathText
from prefduel.worlds.tutorsim_catalogue import Chain, Cue, Kind, Persona, StyleDim, Topic
from prefduel.worlds.tutorsim_catalogue import ProfileEntry as Student
from prefduel.worlds.tutorsim_catalogue import QuirkEntry as Quirk
from prefduel.worlds.tutorsim_data import DEFAULT_PARAMS, TutorSimParams


@dataclass(frozen=True)
class ScriptedSettings:
    """The offline scripted backend's hidden truth and fault knobs.

    Attributes:
        params: TutorSim's knobs (only `SCRIPTED_PARAMS` are used).
        rater_gain: Rater score points per unit of ``need . style`` (on a 1-10 scale).
        judge_malformed: Chance that a judge answer is not a letter (tests the accounting).
        rater_malformed: Chance that a rater answer is not parseable.
        latency: Seconds each scripted answer takes (demos, kill-and-resume tests).
    """

    params: TutorSimParams = DEFAULT_PARAMS
    rater_gain: float = 2.0
    judge_malformed: float = 0.0
    rater_malformed: float = 0.0
    latency: float = 0.0


@dataclass(frozen=True)
class DatagenConfig:
    """A validated datagen config (see the module docstring for the YAML).

    Attributes:
        name: World name (a folder name: the default output is ``worlds/<name>``).
        seed: Seed of cue draws, layout, clicks and the scripted truth.
        output: World directory.
        source: The config file ("" for configs built in code).
        style: Style dimensions ``m``.
        personas: The K personas.
        kinds: Question kinds.
        cues: Cues.
        topics: Topics.
        quirks: Quirks students may have.
        students: Student profiles (the judge's roles).
        models: Role -> model settings.
        samples: Judge samples per (pair, display order, label assignment).
        judge_mode: ``"samples"`` (``samples`` picks per configuration) or ``"logprobs"`` (one
            call per configuration, its ``top_logprobs`` giving the pick probability; sampling
            where an answer has none).
        top_logprobs: Alternatives asked for per token in ``logprobs`` mode.
        judge_min_valid: Share of the judge's picks that must be valid for a world to be built
            (``judge: {min_valid: ...}``).
        asks: The students answer preference questions, so the world can be asked
            (`prefduel.datagen.asks`; ``asks: {enabled: ...}``).
        ask_retries: Extra tries of a malformed answer to a preference question.
        cues_per_question: Cues drawn for each (topic, chain, kind): questions =
            topics x chains x kinds x cues_per_question.
        retries: Role -> extra tries (next sample indices) for malformed answers.
        rater_scale: Lowest and highest rater score.
        bt_ridge: Ridge of the per-(student, question) Bradley-Terry fit.
        bt_scale: Logits spanning U in [0, 1].
        layout: Arrival layout.
        templates: Prompt templates.
        scripted: Scripted backend settings.
        llm: Endpoint settings (the CLI's LLM flags override them).
        batch: How ``prefduel datagen --batch`` packs, polls and retries provider batches.
    """

    name: str
    seed: int
    output: str
    source: str
    style: tuple[StyleDim, ...]
    personas: tuple[Persona, ...]
    kinds: tuple[Kind, ...]
    cues: tuple[Cue, ...]
    topics: tuple[Topic, ...]
    quirks: tuple[Quirk, ...]
    students: tuple[Student, ...]
    models: Mapping[str, RoleModel]
    samples: int = 4
    judge_mode: str = "samples"
    top_logprobs: int = 5
    judge_min_valid: float = DEFAULT_MIN_VALID
    asks: bool = True
    ask_retries: int = 2
    cues_per_question: int = 1
    retries: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_RETRIES))
    rater_scale: tuple[float, float] = (1.0, 10.0)
    bt_ridge: float = DEFAULT_PARAMS.bt_ridge
    bt_scale: float = DEFAULT_PARAMS.bt_scale
    layout: WorldLayout = field(default_factory=WorldLayout)
    templates: Templates = field(default_factory=Templates)
    scripted: ScriptedSettings = field(default_factory=ScriptedSettings)
    llm: LLMConfig = field(default_factory=LLMConfig)
    batch: BatchSettings = field(default_factory=BatchSettings)

    @property
    def K(self) -> int:
        """Number of personas."""
        return len(self.personas)

    @property
    def n_questions(self) -> int:
        """Questions in the bank."""
        chains = sum(len(t.chains) for t in self.topics)
        return chains * len(self.kinds) * self.cues_per_question

    @property
    def rounds(self) -> int:
        """Rounds per arrival."""
        return self.layout.rounds or min(24, self.n_questions)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready summary (ids, models, settings; no API key, only its variable name)."""
        return {
            "name": self.name,
            "seed": self.seed,
            "source": self.source,
            "personas": [p.id for p in self.personas],
            "kinds": [k.id for k in self.kinds],
            "cues": [c.id for c in self.cues],
            "topics": [t.id for t in self.topics],
            "students": [s.id for s in self.students],
            "models": {
                role: {
                    k: v
                    for k, v in dataclasses.asdict(m).items()
                    if v not in (None, ()) and not (k == "structured" and v == "off")
                }
                for role, m in self.models.items()
            },
            "samples": self.samples,
            **({"judge": self._judge_json()} if self._judge_json() else {}),
            "asks": {"enabled": self.asks, "retries": self.ask_retries},
            "cues_per_question": self.cues_per_question,
            "retries": dict(self.retries),
            "rater_scale": list(self.rater_scale),
            "bt": {"ridge": self.bt_ridge, "scale": self.bt_scale},
            "world": {"arrivals": self.layout.arrivals, "rounds": self.rounds},
            "templates": self.templates.to_json(),
            "scripted": {
                **{k: getattr(self.scripted.params, k) for k in SCRIPTED_PARAMS},
                "rater_gain": self.scripted.rater_gain,
                "judge_malformed": self.scripted.judge_malformed,
                "rater_malformed": self.scripted.rater_malformed,
            },
            "llm": {k: v for k, v in self.llm.to_json().items()},
        }

    def _judge_json(self) -> dict[str, Any]:
        """The ``judge`` settings that differ from the defaults."""
        out: dict[str, Any] = {}
        if self.judge_mode != "samples":
            out.update(mode=self.judge_mode, top_logprobs=self.top_logprobs)
        if self.judge_min_valid != DEFAULT_MIN_VALID:
            out["min_valid"] = self.judge_min_valid
        return out


# -- sections as the runtime settings ---------------------------------------------------------

#: Characters a name that becomes a file or folder name may not contain: the path separators
#: slash and backslash, the drive separator colon, and control characters (NUL included).
_UNSAFE_NAME = re.compile(r"[/\\:\x00-\x1f\x7f]")
_FOLDER_NAME_RULE = (
    "expected a name usable as a folder name: not empty, not '.' or '..', and without '/', "
    "'\\', ':' or control characters (NUL included)"
)


def _safe_folder_name(text: str) -> str:
    """A user-given name that becomes a file or folder name (it cannot leave its folder)."""
    if text in (".", "..") or _UNSAFE_NAME.search(text):
        raise ValueError(f"{_FOLDER_NAME_RULE}; got {text!r}")
    return text


FolderName = Annotated[Text, AfterValidator(_safe_folder_name)]


def _name(data: Mapping[str, Any], where: Where, source: str) -> str:
    if "name" in data:
        value, path = data["name"], "name"
    else:
        value = Path(source).stem if source else "datagen"
        path = "name (default: the file's stem)"
    return validate(FolderName, value, error=DatagenConfigError, source=where.source, prefix=path)


def _models(section: ModelsSection | None, where: Where) -> dict[str, RoleModel]:
    """Each role's `RoleModel`: the default model and the role's defaults, then its keys."""
    section = section or ModelsSection()
    out = {}
    for role in ROLES:
        entry = getattr(section, role)
        entry = section.default if entry is None else entry
        if isinstance(entry, str):
            entry = {"model": entry}
        if isinstance(entry, Mapping):
            given = dict(entry)
            entry = {"model": section.default, **DEFAULT_ROLE_SETTINGS[role], **given}
            if (
                role == "judge"
                and given.get("structured") in ("auto", "json_schema", "json_object")
                and "max_tokens" not in given
            ):
                entry["max_tokens"] = STRUCTURED_JUDGE_TOKENS
        out[role] = validate(
            RoleModel, entry, error=DatagenConfigError, source=where.source, prefix=f"models.{role}"
        )
    return out


def _scripted(section: Any) -> ScriptedSettings:
    if section is None:
        return ScriptedSettings()
    knobs = {k: getattr(section, k) for k in SCRIPTED_PARAMS if getattr(section, k) is not None}
    return ScriptedSettings(
        params=dataclasses.replace(DEFAULT_PARAMS, **knobs),
        rater_gain=section.rater_gain,
        judge_malformed=section.judge_malformed,
        rater_malformed=section.rater_malformed,
        latency=section.latency,
    )


def _templates(value: Any, where: Where) -> Templates:
    """The prompt templates: the defaults, replaced by the ``prompts`` section (or its file)."""
    if value is None:
        return Templates()
    source = where.source
    if isinstance(value, Mapping) and set(value) == {"file"}:
        file = validate(
            PathText, value["file"], error=DatagenConfigError, source=source, prefix="prompts.file"
        )
        path = Path(file) if Path(file).is_absolute() else where.base / file
        value = read_yaml(path, "file", lambda message: where.error("prompts.file", message))
        source = str(path)
    section = validate(
        PromptsSection, value, error=DatagenConfigError, source=source, prefix="prompts"
    )
    given = {name: text for name, text in section if text is not None}
    return Templates(**given)


def _llm(data: Mapping[str, Any], where: Where) -> LLMConfig:
    """The ``llm`` section with the top-level shortcuts ``cache``, ``call_log`` and ``budget``."""
    section = dict(data.get("llm") or {})
    shortcuts = [key for key in ("cache", "call_log", "budget") if key in data]
    for key in shortcuts:
        if key in section:
            raise where.error(key, f"given both as {key!r} and as 'llm.{key}'; keep one")
        section[key] = data[key]
    try:
        return validate(
            LLMConfig, section, error=DatagenConfigError, source=where.source, prefix="llm"
        )
    except DatagenConfigError as exc:
        message = str(exc)
        for key in shortcuts:  # name a shortcut as the file writes it
            message = message.replace(f"{where.source}: llm.{key}: ", f"{where.source}: {key}: ")
        raise DatagenConfigError(message) from None


def _cues_per_question(section: QuestionsSection | None, n_cues: int, where: Where) -> int:
    count = (section or QuestionsSection()).cues_per_question
    if count > n_cues:
        message = f"expected at most {n_cues} (the number of cues), got {count}"
        raise where.error("questions.cues_per_question", message)
    return count


def _check_rounds(config: DatagenConfig, where: Where) -> None:
    if config.rounds > config.n_questions:
        raise where.error(
            "world.rounds",
            f"expected at most {config.n_questions} (the questions in the bank: topics x "
            f"chains x kinds x cues_per_question), got {config.rounds}",
        )


def _settings(top: ConfigFile, n_cues: int, where: Where) -> dict[str, Any]:
    """The config's fields from the sections other than the collections and ``llm``."""
    judge = top.judge or JudgeSection()
    asks = top.asks if isinstance(top.asks, AsksSection) else AsksSection(
        enabled=top.asks is not False
    )
    return {
        "models": _models(top.models, where),
        "samples": top.samples,
        "judge_mode": judge.mode,
        "top_logprobs": judge.top_logprobs,
        "judge_min_valid": judge.min_valid,
        "asks": asks.enabled,
        "ask_retries": asks.retries,
        "cues_per_question": _cues_per_question(top.questions, n_cues, where),
        "retries": (top.retries or RetriesSection()).model_dump(),
        "rater_scale": (top.rater or RaterSection()).scale,
        "bt_ridge": (top.bt or BtSection()).ridge,
        "bt_scale": (top.bt or BtSection()).scale,
        "layout": top.world or WorldLayout(),
        "templates": _templates(top.prompts, where),
    }


def config_from_mapping(
    data: Any, *, source: str = "", base: str | os.PathLike[str] | None = None
) -> DatagenConfig:
    """Validate a parsed YAML config.

    Args:
        data: The parsed YAML.
        source: Its file name (for error messages and the default world name).
        base: Folder that relative input files are found in (default: the source's folder,
            else the working directory).

    Returns:
        The config.

    Raises:
        DatagenConfigError: Naming the file and the field that is wrong.
    """
    base_dir = Path(base) if base is not None else (Path(source).parent if source else Path("."))
    where = Where(source or "config", base_dir)
    top = validate(
        ConfigFile, data, error=DatagenConfigError, source=where.source, root="(top level)"
    )
    name = _name(data, where, source)
    scripted = _scripted(top.scripted)
    parts = read_collections(
        data, where, seed=top.seed, template_scale=scripted.params.template_scale
    )
    config = DatagenConfig(
        name=name,
        seed=top.seed,
        output=top.output or os.path.join("worlds", name),
        source=source,
        **{f.name: getattr(parts, f.name) for f in dataclasses.fields(parts)},
        **_settings(top, len(parts.cues), where),
        scripted=scripted,
        llm=_llm(data, where),
        batch=validate(
            BatchSettings,
            data.get("batch") or {},
            error=DatagenConfigError,
            source=where.source,
            prefix="batch",
        ),
    )
    _check_rounds(config, where)
    check_sizes(
        parts,
        config.templates.to_json(),
        questions=config.n_questions,
        samples=config.samples,
        arrivals=config.layout.arrivals,
        rounds=config.rounds,
        where=where,
    )
    return config


def load_config(path: str | os.PathLike[str]) -> DatagenConfig:
    """Read and validate a datagen config file.

    Raises:
        DatagenConfigError: The file is missing, not YAML, or invalid (the message names the
            file and the field).
    """
    data = read_yaml(path, "config file", DatagenConfigError)
    return config_from_mapping(data, source=str(path))


__all__ = [
    "DEFAULT_MODEL",
    "ROLES",
    "SCRIPTED_PARAMS",
    "Chain",
    "Cue",
    "DatagenConfig",
    "DatagenConfigError",
    "DatagenError",
    "Kind",
    "Persona",
    "Quirk",
    "RoleModel",
    "ScriptedSettings",
    "Student",
    "StyleDim",
    "Topic",
    "WorldLayout",
    "config_from_mapping",
    "load_config",
    "template_students",
]
