"""The pipeline's boundary: a `DatagenConfig` cut into each stage's own settings.

`split_config` is the one place after loading that reads the whole config. What each part of a
run receives:

==============  ==========================  ===============================================
part            settings                    what it holds
==============  ==========================  ===============================================
questions       `QuestionSettings`          the question role's calls, seed, topics, kinds,
                                            cues, cues per question, question templates
answers         `AnswerSettings`            the answer role's calls, personas, answer
                                            templates
rater           `RaterSettings`             the rater role's calls, personas, score scale,
                                            rater templates
judge           `JudgeSettings`             the judge role's calls, students, persona ids,
                                            samples, mode, top_logprobs, judge templates
asks            `AskSettings` (None when    the students' calls (the judge's model, role
                ``asks.enabled`` is off)    tag ``student``), the rater's settings,
                                            students, personas, style dimensions, kinds
world           `WorldSettings`             name, seed, source, persona and student records,
                                            samples, judge mode, min_valid, Bradley-Terry fit,
                                            arrivals, rounds
the run         `RunInfo`                   name and sizes (the plan's and the summary's
                                            titles), the settings the summary records
==============  ==========================  ===============================================

A role's `RoleCalls` carry the model name sent: with the scripted backend the fingerprint of the
scripted truth (`scripted_model_name`), so the cache never serves answers of another truth.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prefduel.datagen.asks import ASK_STAGES, AskSettings
from prefduel.datagen.calls import (
    AnswerSettings,
    JudgeSettings,
    QuestionSettings,
    RaterSettings,
    RoleCalls,
)
from prefduel.datagen.config import DatagenConfig
from prefduel.llm.config import LLMConfig
from prefduel.worlds.tutorsim_catalogue import Persona
from prefduel.worlds.tutorsim_catalogue import ProfileEntry as Student


@dataclass(frozen=True)
class WorldSettings:
    """What turns the collected picks and scores into a world.

    Attributes:
        name: World (roster) name.
        seed: Seed of the arrival layout and the click draws.
        source: The config file ("" for configs built in code), recorded in the world's info.
        personas: The K personas (the world's persona records; rater scores by their ids).
        students: The students (the world's student records).
        samples: Judge samples per configuration (recorded in the world's info).
        judge_mode: ``samples`` or ``logprobs`` (recorded when not ``samples``).
        min_valid: Share of the judge's picks that must be valid for a world to be built.
        bt_ridge: Ridge of the per-(student, question) Bradley-Terry fit.
        bt_scale: Logits spanning U in [0, 1].
        arrivals: Arrivals N.
        rounds: Rounds S per arrival.
    """

    name: str
    seed: int
    source: str
    personas: tuple[Persona, ...]
    students: tuple[Student, ...]
    samples: int
    judge_mode: str
    min_valid: float
    bt_ridge: float
    bt_scale: float
    arrivals: int
    rounds: int


@dataclass(frozen=True)
class RunInfo:
    """What the dry-run plan and the run's summary say about the whole run.

    Attributes:
        name: World name.
        students: Students.
        questions: Questions in the bank.
        personas: Personas K.
        samples: Judge samples per configuration.
        record: The settings ``datagen/summary.json`` records (`DatagenConfig.to_json`, with
            the LLM settings used).
    """

    name: str
    students: int
    questions: int
    personas: int
    samples: int
    record: Mapping[str, Any]


@dataclass(frozen=True)
class StageSettings:
    """A run's settings, one part per stage (`split_config`)."""

    questions: QuestionSettings
    answers: AnswerSettings
    rater: RaterSettings
    judge: JudgeSettings
    world: WorldSettings
    run: RunInfo
    asks: AskSettings | None = None

    def calls(self) -> tuple[RoleCalls, ...]:
        """The roles' calls, in stage order (the students' last, when they are asked)."""
        four = (self.questions.calls, self.answers.calls, self.rater.calls, self.judge.calls)
        return four if self.asks is None else (*four, self.asks.student)

    def names(self) -> tuple[str, ...]:
        """The stages of the run, in order (the ask stages when the students are asked)."""
        four = ("questions", "answers", "rater", "judge")
        return four if self.asks is None else (*four, *ASK_STAGES)

    def models(self) -> dict[str, str]:
        """Role -> the model name its requests send."""
        return {c.role: c.model for c in self.calls()}


#: The TutorSim knobs the scripted roles read (`prefduel.datagen.scripted`): only these enter
#: the scripted model's fingerprint, so a knob added to TutorSim for something else (the
#: answer noise of preference questions) leaves every scripted cache valid.
SCRIPTED_KNOBS = (
    "cue_strength",
    "judge_beta",
    "judge_label",
    "judge_noise",
    "judge_position",
    "ncenter",
    "persona_offset",
    "question_noise",
    "quirk_strength",
    "rater_bias",
    "rater_dim_error",
    "rater_noise",
    "taste_scale",
    "topic_noise",
    "utility_noise",
)


def scripted_model_name(config: DatagenConfig) -> str:
    """``scripted/<12 hex>``: the model name of scripted requests, a fingerprint of everything
    the scripted answers depend on besides the prompt (seed, style/need/taste values, quirks,
    scripted knobs)."""
    truth = {
        "seed": config.seed,
        "style": [d.id for d in config.style],
        "personas": [dataclasses.asdict(p) for p in config.personas],
        "kinds": [dataclasses.asdict(k) for k in config.kinds],
        "cues": [dataclasses.asdict(c) for c in config.cues],
        "topics": [t.id for t in config.topics],
        "quirks": [dataclasses.asdict(q) for q in config.quirks],
        "students": [dataclasses.asdict(s) for s in config.students],
        "scripted": {
            **{knob: getattr(config.scripted.params, knob) for knob in SCRIPTED_KNOBS},
            "rater_gain": config.scripted.rater_gain,
            "judge_malformed": config.scripted.judge_malformed,
            "rater_malformed": config.scripted.rater_malformed,
        },
        "rater_scale": list(config.rater_scale),
    }
    text = json.dumps(truth, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "scripted/" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _role_calls(config: DatagenConfig, scripted: bool) -> dict[str, RoleCalls]:
    fingerprint = scripted_model_name(config) if scripted else None
    return {
        role: RoleCalls(role, fingerprint or m.model, m, config.retries[role] + 1)
        for role, m in config.models.items()
    }


def _world(config: DatagenConfig) -> WorldSettings:
    return WorldSettings(
        name=config.name,
        seed=config.seed,
        source=config.source,
        personas=config.personas,
        students=config.students,
        samples=config.samples,
        judge_mode=config.judge_mode,
        min_valid=config.judge_min_valid,
        bt_ridge=config.bt_ridge,
        bt_scale=config.bt_scale,
        arrivals=config.layout.arrivals,
        rounds=config.rounds,
    )


def split_config(
    config: DatagenConfig, *, scripted: bool = False, llm: LLMConfig | None = None
) -> StageSettings:
    """Cut ``config`` into each stage's settings.

    Args:
        config: The validated config.
        scripted: Requests go to the scripted backend: every role's model name is
            `scripted_model_name`.
        llm: The LLM settings used (the summary records them; default ``config.llm``).

    Returns:
        The settings of every stage, the world and the run.
    """
    calls, t = _role_calls(config, scripted), config.templates
    rater = RaterSettings(
        calls["rater"], config.personas, config.rater_scale, t.rater_system, t.rater_user
    )
    judge = calls["judge"]
    asks = (
        AskSettings(
            RoleCalls("student", judge.model, judge.settings, config.ask_retries + 1),
            rater,
            config.students,
            config.personas,
            config.style,
            tuple(k.id for k in config.kinds),
        )
        if config.asks
        else None
    )
    return StageSettings(
        questions=QuestionSettings(
            calls["question"],
            config.seed,
            config.topics,
            config.kinds,
            config.cues,
            config.cues_per_question,
            t.question_system,
            t.question_user,
        ),
        answers=AnswerSettings(calls["answer"], config.personas, t.answer_system, t.answer_user),
        rater=rater,
        judge=JudgeSettings(
            calls["judge"],
            config.students,
            tuple(p.id for p in config.personas),
            config.samples,
            config.judge_mode,
            config.top_logprobs,
            t.judge_system,
            t.judge_user,
        ),
        world=_world(config),
        run=RunInfo(
            config.name,
            len(config.students),
            config.n_questions,
            config.K,
            config.samples,
            dataclasses.replace(config, llm=llm or config.llm).to_json(),
        ),
        asks=asks,
    )


__all__ = [
    "RunInfo",
    "StageSettings",
    "WorldSettings",
    "scripted_model_name",
    "split_config",
]
