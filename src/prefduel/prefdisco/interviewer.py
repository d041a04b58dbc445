"""The Bayesian interviewer: a discovery strategy that chooses each question by information gain.

Instead of asking an LLM to ask, the interviewer keeps a `Belief` over the user's sparse
preferences (a prior learned offline from *other* simulated users, `interview_prior`) and, at
each turn, asks about the candidate with the largest expected information gain about the
rubric-weighted preferences (`interview_belief`): one value question per unobserved
attribute and, with ``importance_questions``, one importance question per preference found.
It stops when the best gain falls below ``min_gain`` or the budget is spent. The reply is
read into evidence (`interview_replies.read_reply`); the LLM only words the questions
(``phrasing: llm``; offline the taxonomy's questions) and writes the final answer, with the
same final request as every other condition (`episodes.answer_request`, the discovery
information block), so the existing judging and metrics score the transcript unchanged::

    prior = learn_prior(taxonomy, PriorConfig(seed=1), sparsity=config.generate.sparsity)
    check_disjoint(prior, dataset.personas.values())
    result = await run_interview(EpisodeKey(model, "discovery", pid, tid), context, prior)
    result.transcript        # a `Transcript`, as `run_episode` returns
    result.steps             # per turn: question, gain, reply, evidence, what was disclosed

`counterfactual_follow_up` re-runs the first two turns with the first reply altered and says
whether the follow-up question changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, Strict

from prefduel.core.rng import stream
from prefduel.core.schema import Integer, Number, frozen_dataclass
from prefduel.llm.stages import MALFORMED, ask
from prefduel.prefdisco import prompts
from prefduel.prefdisco.episodes import (
    MODEL_TURN,
    EpisodeContext,
    EpisodeKey,
    Transcript,
    answer_request,
)
from prefduel.prefdisco.errors import ConfigError, DatasetError, EpisodeError
from prefduel.prefdisco.interview_belief import Belief, Candidate
from prefduel.prefdisco.interview_prior import LEVELS, InterviewPrior, PriorConfig
from prefduel.prefdisco.interview_replies import (
    LEVEL_WORDS,
    InterviewUser,
    ReplyReading,
    phrase_stage,
    read_reply,
    template_question,
)
from prefduel.prefdisco.taxonomy import Taxonomy

STOP_REASONS = ("min_gain", "exhausted", "max_turns")


@frozen_dataclass(error=ConfigError, path="interviewer")
class InterviewerConfig:
    """Settings of the Bayesian interviewer.

    Attributes:
        max_turns: Question budget (None: the run's ``max_turns``).
        min_gain: Stop when the best expected gain (nats, rubric-weighted) is below this.
        importance_questions: Also ask how much a found preference matters (coarse level).
        importance_weight: λ, weight of importance uncertainty relative to value uncertainty.
        presence_weight: Weight of the uncertainty about *whether* an attribute is in the
            profile, relative to the uncertainty about its value (0: only the values the
            rubric will test count).
        phrasing: ``template`` (the taxonomy's questions, no LLM call) or ``llm`` (role
            ``phrase``, by ``phrase_model``).
        phrase_model: Model that words the questions (None: the model under test).
        phrase_attempts: Phrasing requests per question before the template is used.
        prior: How the prior is learned (`PriorConfig`).
    """

    max_turns: Annotated[Integer, Field(ge=1)] | None = None
    min_gain: Annotated[Number, Field(ge=0)] = 0.02
    importance_questions: Annotated[bool, Strict()] = False
    importance_weight: Annotated[Number, Field(ge=0)] = 0.5
    presence_weight: Annotated[Number, Field(ge=0)] = 1.0
    phrasing: Literal["template", "llm"] = "template"
    phrase_model: str | None = None
    phrase_attempts: Annotated[Integer, Field(ge=1)] = 2
    prior: PriorConfig = field(default_factory=PriorConfig)


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
        reply: The user's reply (the altered one in a counterfactual run).
        reading: The evidence read from the reply.
        disclosed: Hidden ``(attribute, value)`` pairs the reply revealed.
        levels: Hidden ``(attribute, importance level)`` pairs the reply revealed.
        uncertainty: U before and after the reply.
        altered: Whether the reply was replaced (counterfactual).
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
    altered: bool = False

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
            "altered": self.altered,
        }


@dataclass(frozen=True)
class InterviewResult:
    """One interviewer episode.

    Attributes:
        transcript: The transcript, in the shape `run_episode` produces (condition
            ``discovery``; ``stop`` is ``ready`` when the interviewer stopped by itself).
        steps: The per-turn log (`InterviewStep`).
        stop_reason: ``min_gain``, ``exhausted`` (nothing left to ask) or ``max_turns``.
        known: Attribute id -> value the interviewer learned (None: no preference).
    """

    transcript: Transcript
    steps: tuple[InterviewStep, ...]
    stop_reason: str
    known: Mapping[str, str | None]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (the log; the transcript is stored separately)."""
        return {
            "episode_id": self.transcript.key.id,
            "stop_reason": self.stop_reason,
            "known": dict(self.known),
            "steps": [s.to_json() for s in self.steps],
        }


@dataclass
class _Interview:
    """The state of one running interview."""

    key: EpisodeKey
    context: EpisodeContext
    config: InterviewerConfig
    belief: Belief
    user: InterviewUser
    block: str
    steps: list[InterviewStep] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    turns_json: list[dict[str, Any]] = field(default_factory=list)

    async def phrase(self, candidate: Candidate) -> tuple[str, str]:
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
        outcome = await ask(stage, candidate, self.context.model_client)
        if outcome.failed:
            raise EpisodeError(f"episode {self.key.id}: phrase call failed: {outcome.error}")
        if outcome.value is MALFORMED:
            return template_question(candidate, taxonomy), "template-fallback"
        return str(outcome.value), "llm"

    async def interview(self, replies: Mapping[int, str]) -> str:
        """Ask until the gain is too small, nothing is left or the budget is spent; return
        the stop reason (`STOP_REASONS`)."""
        for turn in range(interviewer_budget(self.config, self.context)):
            choice = self.belief.gains(self.config.importance_questions)
            if not choice:
                return "exhausted"
            if choice[0][1] < self.config.min_gain:
                return "min_gain"
            await self.turn(choice[:2], replies.get(turn))
        return "max_turns"

    async def turn(self, choice: list[tuple[Candidate, float]], altered: str | None) -> None:
        candidate, gain = choice[0]
        question, how = await self.phrase(candidate)
        answer = await self.user.answer(question)
        reply = answer.turn.reply if altered is None else altered
        reading = read_reply(reply, candidate, self.context.taxonomy)
        before = self.belief.uncertainty()
        belief = self.belief.mark_asked(candidate)
        for evidence in reading.evidence:
            belief = belief.update(evidence)
        self.belief = belief
        turn_json = answer.to_json() | {"reply": reply}
        self.steps.append(
            InterviewStep(
                turn=len(self.steps),
                candidate=candidate,
                gain=gain,
                runner_up=choice[1] if len(choice) > 1 else None,
                question=question,
                phrasing=how,
                reply=reply,
                reading=reading,
                disclosed=tuple(
                    (d.attribute, d.value) for d in answer.turn.disclosures if d.value is not None
                ),
                levels=answer.importance,
                uncertainty=(before, belief.uncertainty()),
                altered=altered is not None,
            )
        )
        self.pairs.append((question, reply))
        self.turns_json.append(turn_json)


def interviewer_budget(config: InterviewerConfig, context: EpisodeContext) -> int:
    """The question budget: the interviewer's ``max_turns``, else the run's."""
    return config.max_turns or context.settings.max_turns


async def run_interview(
    key: EpisodeKey,
    context: EpisodeContext,
    prior: InterviewPrior,
    config: InterviewerConfig | None = None,
    *,
    replies: Mapping[int, str] | None = None,
    final_answer: bool = True,
) -> InterviewResult:
    """Run the interviewer on one episode against the simulated user.

    Args:
        key: The episode (condition ``discovery``; ``key.model`` writes the final answer and,
            with ``phrasing: llm`` and no ``phrase_model``, words the questions).
        context: Dataset, settings, the model client and the user's router.
        prior: The learned prior (its taxonomy must be the context's).
        config: Interviewer settings.
        replies: Turn -> reply text to use instead of the user's (counterfactual runs).
        final_answer: Request the final answer (False: the transcript's response is empty).

    Returns:
        The transcript and the per-turn log.

    Raises:
        DatasetError: Not a discovery key, or no task or profile for it.
        EpisodeError: An LLM call failed after its retries.
    """
    config = config or InterviewerConfig()
    task = context.tasks.get(key.task_id)
    profile = context.profiles.get((key.persona_id, key.task_id))
    if key.condition != "discovery" or task is None or profile is None:
        raise DatasetError(
            f"episode {key.id}: the interviewer runs discovery episodes of a known task and profile"
        )
    belief = Belief(
        prior,
        task.domain,
        context.taxonomy,
        importance_weight=config.importance_weight,
        presence_weight=config.presence_weight,
    )
    user = InterviewUser(profile, context.taxonomy, context.router, prior.level_cuts)
    block = prompts.task_block(task.question, task.options)
    run = _Interview(key, context, config, belief, user, block)
    stop = await run.interview(replies or {})
    info = prompts.info_discovery(run.pairs)
    response = ""
    if final_answer:
        request = answer_request(key, task, info, context.settings)
        outcome = await ask(MODEL_TURN, request, context.model_client)
        if outcome.failed:
            raise EpisodeError(f"episode {key.id}: answer call failed: {outcome.error}")
        response = str(outcome.value)
    transcript = Transcript(
        key=key,
        source=task.source,
        domain=task.domain,
        turns=tuple(run.turns_json),
        stop="max_turns" if stop == "max_turns" else "ready",
        info=info,
        response=response,
        settings=context.digest,
    )
    return InterviewResult(transcript, tuple(run.steps), stop, run.belief.known())


def alternative_reply(
    candidate: Candidate, reading: ReplyReading, taxonomy: Taxonomy, seed: int, episode: str
) -> str | None:
    """A different answer to the question about ``candidate``: another state of the attribute
    (another value, or "no particular preference"; for importance, another level), worded as
    the simulated user words it and drawn from ``stream(seed, "counterfactual", episode)``.

    Returns:
        The reply text, or None when ``reading`` told nothing about the attribute asked.
    """
    said = [
        e.value
        for e in reading.evidence
        if e.attribute == candidate.attribute and e.kind == candidate.kind
    ]
    if len(said) != 1:
        return None
    rng = stream(seed, "counterfactual", episode)
    attribute = taxonomy[candidate.attribute]
    if candidate.kind == "importance":
        levels = [lv for lv in LEVELS if lv != said[0]]
        words = LEVEL_WORDS[LEVELS.index(levels[int(rng.integers(len(levels)))])]
        return f"How much {attribute.name.lower()} matters to me: {words}."
    states = [s for s in (None, *attribute.value_ids) if s != said[0]]
    value = states[int(rng.integers(len(states)))]
    if value is None:
        return prompts.user_reply([], [attribute])
    return prompts.user_reply([(attribute, attribute.value(value))], [])


@dataclass(frozen=True)
class FollowUp:
    """The follow-up question with the user's first answer and with an altered one.

    Attributes:
        episode_id: The episode.
        first: The first question's candidate.
        original: The second question's candidate after the real reply (None: stopped).
        altered_reply: The reply used instead of the real one.
        altered: The second question's candidate after the altered reply.
    """

    episode_id: str
    first: Candidate
    original: Candidate | None
    altered_reply: str
    altered: Candidate | None

    @property
    def changed(self) -> bool:
        """Whether the follow-up question differs."""
        return self.original != self.altered


async def counterfactual_follow_up(
    key: EpisodeKey,
    context: EpisodeContext,
    prior: InterviewPrior,
    config: InterviewerConfig | None = None,
    *,
    seed: int = 0,
) -> FollowUp | None:
    """Re-run the first two turns with the first reply altered (`alternative_reply`).

    Returns:
        The two follow-up questions, or None when the interview asked nothing or the first
        reply said nothing about the attribute asked (no answer to alter).
    """
    config = dataclasses.replace(config or InterviewerConfig(), max_turns=2)
    real = await run_interview(key, context, prior, config, final_answer=False)
    if not real.steps:
        return None
    first = real.steps[0]
    altered_reply = alternative_reply(
        first.candidate, first.reading, context.taxonomy, seed, key.id
    )
    if altered_reply is None:
        return None
    other = await run_interview(
        key, context, prior, config, replies={0: altered_reply}, final_answer=False
    )
    return FollowUp(
        episode_id=key.id,
        first=first.candidate,
        original=real.steps[1].candidate if len(real.steps) > 1 else None,
        altered_reply=altered_reply,
        altered=other.steps[1].candidate if len(other.steps) > 1 else None,
    )


__all__ = [
    "STOP_REASONS",
    "FollowUp",
    "InterviewResult",
    "InterviewStep",
    "InterviewerConfig",
    "alternative_reply",
    "counterfactual_follow_up",
    "interviewer_budget",
    "run_interview",
]
