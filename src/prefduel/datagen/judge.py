"""Datagen's judge stage: sampled picks, or pick probabilities from log-probabilities.

Every (student, question, pair a < b, display order, label assignment) is a *configuration*
(TutorSim's four judge configurations per pair). Its pick probability is measured one of two ways
(the config's ``judge: {mode: ...}``):

* ``samples`` (default): ``samples`` picks at the judge's temperature, each one call; a malformed
  pick is asked again ``retries.judge`` times with the sample index ``samples`` further;
* ``logprobs``: ONE call with ``logprobs`` and ``top_logprobs``: the mass of the two label tokens
  at the position of the pick, renormalised (`prefduel.llm.logprobs.choice_probabilities`), is
  the probability directly (no sampling noise, ``samples`` times fewer calls). Where a reply
  carries no usable logprobs (an endpoint without them, or no label token among the top
  alternatives), that configuration falls back to ``samples`` sampled picks: the very requests of
  mode ``samples``, so they share its cache entries.

The two agree in expectation: a probability ``p`` enters the aggregation as ``p * samples`` wins
of ``samples`` (`prefduel.datagen.aggregate.expected_tally`), which is what ``samples`` sampled
picks give on average.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from prefduel.core.btl import pairs_of
from prefduel.datagen.aggregate import NO_PICK
from prefduel.datagen.calls import JudgeSettings, QuestionSpec, judge_order
from prefduel.datagen.prompts import LABELS, parse_pick
from prefduel.llm.logprobs import response_choice
from prefduel.llm.request import LLMResponse
from prefduel.llm.stages import Stage, StageEngine
from prefduel.worlds.tutorsim import JUDGE_CONFIGS

#: A configuration: (student, question, pair, judge condition).
Config = tuple[int, int, int, int]
#: A sampled pick: (configuration, sample).
JudgeJob = tuple[Config, int]


class _NoLogprobs:
    """The value of a logprob call whose reply has no usable logprobs (sample instead)."""

    def __repr__(self) -> str:
        return "NO_LOGPROBS"


NO_LOGPROBS: Any = _NoLogprobs()


class JudgeStage:
    """The judge stage of one run, for the stage engine.

    Args:
        settings: The judge's settings (students, personas, samples, mode, templates, calls).
        engine: The stage engine (its report ``judge`` counts every call).
        specs: The question bank.
        questions: Bank index -> question text.
        answers: Asked question -> one answer per persona.

    Attributes:
        picks: ``(I, Q, pairs, 4, samples)`` int8: 1 when the pair's first persona won, 0 when
            the second did, ``NO_PICK`` when missing (or measured by logprobs).
        probs: ``(I, Q, pairs, 4)``: the first persona's pick probability from logprobs; NaN
            where it was sampled (or not asked).
        fallback: Configurations whose logprob reply had no usable logprobs (sampled instead).
    """

    def __init__(
        self,
        settings: JudgeSettings,
        engine: StageEngine,
        specs: list[QuestionSpec],
        questions: dict[int, Any],
        answers: dict[int, list[Any]],
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.specs = specs
        self.questions = questions
        self.answers = answers
        self.pairs = pairs_of(len(settings.persona_ids))
        shape = (len(settings.students), len(specs), len(self.pairs), len(JUDGE_CONFIGS))
        self.picks = np.full((*shape, settings.samples), NO_PICK, dtype=np.int8)
        self.probs = np.full(shape, np.nan)
        self.fallback = 0

    # -- requests and replies ---------------------------------------------------------------

    def _request(self, conf: Config, sample: int, *, logprobs: bool = False) -> Any:
        i, qi, j, c = conf
        first, second, first_label = judge_order(int(self.pairs[j, 0]), int(self.pairs[j, 1]), c)
        answers = self.answers[qi]
        return self.settings.request(
            self.settings.students[i],
            self.questions[qi],
            answers[first],
            answers[second],
            first_label,
            sample,
            logprobs=logprobs,
        )

    @staticmethod
    def _a_label(conf: Config) -> str:
        return LABELS[0] if JUDGE_CONFIGS[conf[3]][1] else LABELS[1]

    def _describe(self, conf: Config) -> dict[str, Any]:
        i, qi, j, c = conf
        a_first, a_label_a = JUDGE_CONFIGS[c]
        ids = self.settings.persona_ids
        return {
            "item": self.specs[qi].id,
            "student": self.settings.students[i].id,
            "pair": [ids[int(self.pairs[j, 0])], ids[int(self.pairs[j, 1])]],
            "a_first": a_first,
            "a_label": LABELS[0] if a_label_a else LABELS[1],
        }

    def sampled_stage(self) -> Stage[JudgeJob]:
        """One pick per (configuration, sample); a retry takes the sample index ``samples``
        further."""
        samples, calls = self.settings.samples, self.settings.calls

        def parse(job: JudgeJob, text: str) -> int | None:
            pick = parse_pick(text)
            return None if pick is None else int(pick == self._a_label(job[0]))

        return Stage(
            "judge",
            lambda job, previous: self._request(job[0], job[1] + len(previous) * samples),
            parse,
            describe=lambda job: self._describe(job[0]),
            tries=calls.tries,
            answer=self.settings.answer_format,
            structured=calls.structured,
        )

    def logprob_stage(self) -> Stage[Config]:
        """One call per configuration; its value is the first persona's pick probability, or
        `NO_LOGPROBS`."""

        def read(conf: Config, text: str, response: LLMResponse) -> Any:
            probs = response_choice(response, LABELS)
            return NO_LOGPROBS if probs is None else probs[self._a_label(conf)]

        return Stage(
            "judge",
            lambda conf, previous: self._request(conf, 0, logprobs=True),
            describe=self._describe,
            answer=self.settings.answer_format,
            structured=self.settings.calls.structured,
            read=read,
        )

    # -- the run ------------------------------------------------------------------------------

    async def run(self, usable: Sequence[int]) -> None:
        """Judge every configuration of the usable questions (fills `picks` and `probs`)."""
        settings = self.settings
        logprobs = settings.mode == "logprobs"
        n_pairs, n_cfg = len(self.pairs), len(JUDGE_CONFIGS)
        cells = [(i, qi) for i in range(len(settings.students)) for qi in usable]
        per_cell = n_pairs * n_cfg * (1 if logprobs else settings.samples)
        self.engine.start("judge", len(cells) * per_cell)
        # whole cells at a time, as many as the engine takes at once (a wave of batches)
        group = max(1, self.engine.chunk // per_cell)
        for start in range(0, len(cells), group):
            configs = [
                (i, qi, j, c)
                for i, qi in cells[start : start + group]
                for j in range(n_pairs)
                for c in range(n_cfg)
            ]
            if logprobs:
                configs = await self._from_logprobs(configs)
                self.engine.sender.grow(len(configs) * settings.samples)
            await self._sampled(configs)
        self.engine.finish("judge")

    async def _from_logprobs(self, configs: list[Config]) -> list[Config]:
        """Ask each configuration once for logprobs; return those to sample instead."""
        outcomes = await self.engine.run(self.logprob_stage(), configs)
        again = []
        for conf, outcome in zip(configs, outcomes, strict=True):
            if outcome.value is NO_LOGPROBS:
                again.append(conf)
            elif isinstance(outcome.value, float):
                self.probs[conf] = outcome.value
        self.fallback += len(again)
        return again

    async def _sampled(self, configs: list[Config]) -> None:
        """``samples`` picks of each configuration."""
        if not configs:
            return
        jobs: list[JudgeJob] = [(c, s) for c in configs for s in range(self.settings.samples)]
        for ((i, qi, j, c), s), outcome in zip(
            jobs, await self.engine.run(self.sampled_stage(), jobs), strict=True
        ):
            if isinstance(outcome.value, int):
                self.picks[i, qi, j, c, s] = outcome.value


__all__ = ["NO_LOGPROBS", "JudgeStage"]
