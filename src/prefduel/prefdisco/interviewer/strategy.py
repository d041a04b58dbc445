"""The Bayesian interviewer: a discovery strategy that chooses each question by information gain.

Instead of asking an LLM to ask, the interviewer keeps a `Belief` over the user's sparse
preferences (a prior learned offline from *other* simulated users, `prior`) and, at
each turn, asks about the candidate with the largest expected information gain about the
rubric-weighted preferences (`belief`): one value question per unobserved
attribute and, with ``importance_questions``, one importance question per preference found.
It stops when the best gain falls below ``min_gain`` (``min_gain``), when nothing is left to
ask (``exhausted``) or when the budget is spent (``max_turns``). The questions go to the
study's `PassiveUser` (the run's ``user_style``, the run's router) and each reply is read
into evidence (`replies.read_reply`: values, "no preference", a vague user's hints,
importance levels). The LLM only words the questions (``phrasing: llm``; offline the
taxonomy's questions) and writes the final answer, with the same final request as every
other condition (`episodes.answer_request`, the discovery information block), so the
existing judging and metrics score the transcript unchanged.

In a study it is the ``interviewer`` strategy (``run.strategies``; settings
``run.interviewer``, `InterviewerConfig`); in Python::

    prior = learn_prior(taxonomy, PriorConfig(seed=1), sparsity=config.generate.sparsity)
    check_disjoint(prior, dataset.personas.values())
    key = EpisodeKey(model, "discovery", pid, tid, strategy="interviewer")
    result = await run_interview(key, context, prior)
    result.transcript        # a `Transcript`, as `run_episode` returns (with the log)
    result.steps             # per turn: question, gain, reply, evidence, what was disclosed
    result.follow_up         # the follow-up with the first reply altered (no extra call)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefduel.llm.stages import MALFORMED, ask
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.episodes import (
    MODEL_TURN,
    EpisodeContext,
    EpisodeKey,
    ReplyLog,
    Transcript,
    answer_request,
)
from prefduel.prefdisco.episode.follow_up import FollowUp, Topic, altered_reply
from prefduel.prefdisco.episode.user import PassiveUser
from prefduel.prefdisco.errors import DatasetError, EpisodeError
from prefduel.prefdisco.interview_config import InterviewerConfig, PriorConfig
from prefduel.prefdisco.interviewer.belief import Belief, Candidate
from prefduel.prefdisco.interviewer.prior import InterviewPrior
from prefduel.prefdisco.interviewer.replies import (
    ReplyReading,
    parse_phrase,
    phrase_stage,
    read_reply,
    template_question,
)

STOP_REASONS = ("min_gain", "exhausted", "max_turns")


@dataclass(frozen=True)
class InterviewStep:
    """One turn of an interview (the per-episode disclosure log).

    Attributes:
        turn: Question number (0-based).
        candidate: What the interviewer chose to ask.
        gain: Its expected information gain.
        runner_up: The next best candidate and its gain (None if there was none).
        question: The question as asked.
        phrasing: ``template``, ``llm`` or ``template-fallback`` (the model's wording was
            unusable).
        reply: The user's reply.
        reading: The evidence read from the reply.
        disclosed: Hidden ``(attribute, value)`` pairs the reply revealed.
        levels: Hidden ``(attribute, importance level)`` pairs the reply revealed.
        uncertainty: U before and after the reply.
    """

    turn: int
    candidate: Candidate
    gain: float
    runner_up: tuple[Candidate, float] | None
    question: str
    phrasing: str
    reply: str
    reading: ReplyReading
    disclosed: tuple[tuple[str, str], ...]
    levels: tuple[tuple[str, str], ...]
    uncertainty: tuple[float, float]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return {
            "turn": self.turn,
            "candidate": self.candidate.to_json(),
            "gain": self.gain,
            "runner_up": (
                None
                if self.runner_up is None
                else {**self.runner_up[0].to_json(), "gain": self.runner_up[1]}
            ),
            "question": self.question,
            "phrasing": self.phrasing,
            "reply": self.reply,
            "reading": self.reading.to_json(),
            "disclosed": [{"attribute": a, "value": v} for a, v in self.disclosed],
            "levels": [{"attribute": a, "level": lv} for a, lv in self.levels],
            "uncertainty": list(self.uncertainty),
        }


@dataclass(frozen=True)
class InterviewResult:
    """One interviewer episode.

    Attributes:
        transcript: The transcript, in the shape `run_episode` produces (condition
            ``discovery``, strategy ``interviewer``; ``stop`` is the interviewer's stop reason;
            ``interview`` holds `to_json`).
        steps: The per-turn log (`InterviewStep`).
        stop_reason: ``min_gain``, ``exhausted`` (nothing left to ask) or ``max_turns``.
        known: Attribute id -> value the interviewer learned (None: no preference).
        hinted: Attribute id -> the values a vague reply left possible.
        follow_up: The follow-up with the first reply altered (None: budget 1, or the first
            question routed to nothing).
    """

    transcript: Transcript
    steps: tuple[InterviewStep, ...]
    stop_reason: str
    known: Mapping[str, str | None]
    hinted: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    follow_up: FollowUp | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (the log; the transcript is stored separately)."""
        return {
            "episode_id": self.transcript.key.id,
            "stop_reason": self.stop_reason,
            "known": dict(self.known),
            "hinted": {a: list(v) for a, v in self.hinted.items()},
            "steps": [s.to_json() for s in self.steps],
            "follow_up": None if self.follow_up is None else self.follow_up.to_json(),
        }


@dataclass
class _Interview:
    """The state of one running interview."""

    key: EpisodeKey
    context: EpisodeContext
    config: InterviewerConfig
    belief: Belief
    user: PassiveUser
    block: str
    steps: list[InterviewStep] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    turns_json: list[dict[str, Any]] = field(default_factory=list)
    asks: list[dict[str, Any]] = field(default_factory=list)
    first: Belief | None = None  # before the first reply was read (the follow-up check)

    async def phrase(self, candidate: Candidate) -> tuple[str, str]:
        """The question for ``candidate`` and how it was worded."""
        taxonomy = self.context.taxonomy
        if self.config.phrasing == "template":
            return template_question(candidate, taxonomy), "template"
        stage = phrase_stage(
            taxonomy,
            self.block,
            self.config.phrase_model or self.key.model,
            self.context.settings.params("ask"),
            self.config.phrase_attempts,
        )
        replies = ReplyLog(self.context.model_client)
        outcome = await ask(stage, candidate, replies)
        for response in replies.responses:
            readable = parse_phrase(response.text or "") is not None
            self.asks.append(
                {
                    "turn": len(self.steps),
                    "text": response.text,
                    "finish_reason": response.finish_reason,
                    "read": "question" if readable else "malformed",
                }
            )
        if outcome.failed:
            raise EpisodeError(f"episode {self.key.id}: phrase call failed: {outcome.error}")
        if outcome.value is MALFORMED:
            return template_question(candidate, taxonomy), "template-fallback"
        return str(outcome.value), "llm"

    def choose(self, belief: Belief) -> tuple[list[tuple[Candidate, float]], str | None]:
        """The best two candidates, or the reason to stop (``exhausted``, ``min_gain``)."""
        choice = belief.gains(self.config.importance_questions)
        if not choice:
            return [], "exhausted"
        if choice[0][1] < self.config.min_gain:
            return [], "min_gain"
        return choice[:2], None

    async def interview(self) -> str:
        """Ask until the gain is too small, nothing is left or the budget is spent; return
        the stop reason (`STOP_REASONS`)."""
        for _ in range(interviewer_budget(self.config, self.context)):
            choice, stop = self.choose(self.belief)
            if stop is not None:
                return stop
            await self.turn(choice)
        return "max_turns"

    async def turn(self, choice: list[tuple[Candidate, float]]) -> None:
        """Ask the best candidate, read the reply, update the belief, log the step."""
        candidate, gain = choice[0]
        question, how = await self.phrase(candidate)
        turn = await self.user.answer(question)
        reading = read_reply(turn.reply, candidate, self.context.taxonomy)
        before = self.belief.uncertainty()
        belief = self.belief.mark_asked(candidate)
        if not self.steps:
            self.first = belief
        for evidence in reading.evidence:
            belief = belief.update(evidence)
        self.belief = belief
        self.steps.append(
            InterviewStep(
                turn=len(self.steps),
                candidate=candidate,
                gain=gain,
                runner_up=choice[1] if len(choice) > 1 else None,
                question=question,
                phrasing=how,
                reply=turn.reply,
                reading=reading,
                disclosed=tuple((d.attribute, d.value) for d in turn.disclosures if d.value),
                levels=tuple((d.attribute, d.importance) for d in turn.disclosures if d.importance),
                uncertainty=(before, belief.uncertainty()),
            )
        )
        self.pairs.append((question, turn.reply))
        self.turns_json.append(turn.to_json())

    def follow_up(self, stop: str) -> FollowUp | None:
        """The next question had the first reply been another
        (`prefduel.prefdisco.episode.follow_up`): read into the belief as it stood before the
        real reply; no call is made."""
        if interviewer_budget(self.config, self.context) < 2 or self.first is None:
            return None
        instance = (self.key.persona_id, self.key.task_id)
        style = self.context.settings.user_style
        altered = altered_reply(self.turns_json[0], self.context.taxonomy, style, instance)
        if altered is None:
            return None
        attribute, reply = altered
        belief = self.first
        for evidence in read_reply(reply, self.steps[0].candidate, self.context.taxonomy).evidence:
            belief = belief.update(evidence)
        choice, why = self.choose(belief)
        topic = Topic(stop=why) if why is not None else _topic(choice[0][0])
        original = _topic(self.steps[1].candidate) if len(self.steps) > 1 else Topic(stop=stop)
        return FollowUp(attribute, reply, original, topic)


def _topic(candidate: Candidate) -> Topic:
    return Topic((candidate.attribute,), candidate.kind == "importance")


def interviewer_budget(config: InterviewerConfig, context: EpisodeContext) -> int:
    """The question budget: the interviewer's ``max_turns``, else the run's."""
    return config.max_turns or context.settings.max_turns


def _start(
    key: EpisodeKey, context: EpisodeContext, prior: InterviewPrior, config: InterviewerConfig
) -> _Interview:
    """A fresh interview of one episode (its belief on the prior, its user)."""
    task = context.tasks.get(key.task_id)
    profile = context.profiles.get((key.persona_id, key.task_id))
    if key.condition != "discovery" or key.strategy != "interviewer":
        raise DatasetError(
            f"episode {key.id}: the interviewer runs discovery episodes of its own strategy "
            "(EpisodeKey(..., 'discovery', ..., strategy='interviewer'))"
        )
    if task is None or profile is None:
        raise DatasetError(f"episode {key.id}: no task or profile for this persona and task")
    belief = Belief(
        prior,
        task.domain,
        context.taxonomy,
        importance_weight=config.importance_weight,
        presence_weight=config.presence_weight,
    )
    user = PassiveUser(profile, context.taxonomy, context.router, style=context.settings.user_style)
    block = prompts.task_block(task.question, task.options)
    return _Interview(key, context, config, belief, user, block)


async def run_interview(
    key: EpisodeKey,
    context: EpisodeContext,
    prior: InterviewPrior | None = None,
    config: InterviewerConfig | None = None,
) -> InterviewResult:
    """Run the interviewer on one episode against the simulated user, then the final answer.

    Args:
        key: The episode (condition ``discovery``; ``key.model`` writes the final answer and,
            with ``phrasing: llm`` and no ``phrase_model``, words the questions).
        context: Dataset, settings, the model client and the user's router.
        prior: The learned prior (default: ``context.prior``; its taxonomy must be the
            context's).
        config: Interviewer settings (default: ``context.settings.interviewer``).

    Returns:
        The transcript (with the log) and the per-turn log.

    Raises:
        DatasetError: Not a discovery key, no task or profile for it, or no prior.
        EpisodeError: An LLM call failed after its retries.
    """
    config = config or context.settings.interviewer
    prior = prior or context.prior
    if prior is None:
        raise DatasetError(f"episode {key.id}: the interviewer needs a prior (learn_prior)")
    run = _start(key, context, prior, config)
    stop = await run.interview()
    follow_up = run.follow_up(stop) if context.settings.follow_up_check else None
    task = context.tasks[key.task_id]
    info = prompts.info_discovery(run.pairs)
    request = answer_request(key, task, info, context.settings)
    outcome = await ask(MODEL_TURN, request, context.model_client)
    if outcome.failed:
        raise EpisodeError(f"episode {key.id}: answer call failed: {outcome.error}")
    transcript = Transcript(
        key=key,
        source=task.source,
        domain=task.domain,
        turns=tuple(run.turns_json),
        stop=stop,
        info=info,
        response=str(outcome.value),
        settings=context.digest,
        asks=tuple(run.asks),
        follow_up=None if follow_up is None else follow_up.to_json(),
    )
    hinted = {
        a: tuple(context.taxonomy[a].values[i - 1].value for i in sorted(states))
        for a, states in run.belief.hints.items()
    }
    result = InterviewResult(
        transcript, tuple(run.steps), stop, run.belief.known(), hinted, follow_up
    )
    transcript = dataclasses.replace(transcript, interview=result.to_json())
    return dataclasses.replace(result, transcript=transcript)


__all__ = [
    "STOP_REASONS",
    "InterviewResult",
    "InterviewStep",
    "InterviewerConfig",
    "PriorConfig",
    "interviewer_budget",
    "run_interview",
]
