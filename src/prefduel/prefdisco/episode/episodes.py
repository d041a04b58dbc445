"""Episodes: one model, one condition, one (persona, task) instance -> a transcript.

Three conditions share one scaffold (`prefduel.prefdisco.episode.prompts`): the final answer
is requested with the same system prompt and template; only the information block differs.

* ``baseline``: the problem only ("you know nothing about this user's preferences");
* ``discovery``: first an ask phase of at most ``max_turns`` turns (the model replies
  ``QUESTION: ...`` or ``READY``; each question goes to the `PassiveUser`), then the final
  answer with the questions and replies as the information. A reply that is neither is shown
  back with the format restated, up to ``ask_attempts`` requests; if it stays unreadable the
  phase ends as ``malformed`` (never counted as READY). Every ask-phase reply is kept, raw,
  with its finish reason (``Transcript.asks``);
* ``oracle``: the full hidden profile (attribute, value, importance) as the information.

This module runs the ``ask`` strategy of discovery (the model asks); the ``interviewer``
strategy has its own runner (`prefduel.prefdisco.interviewer.strategy`) with the same final request.
With ``follow_up_check`` an ask episode also records whether the model's second question
changes when the first reply is altered (`ask_follow_up`, one more ask request;
`prefduel.prefdisco.episode.follow_up`).

Every request is a pure function of the dataset, the settings and earlier answers, so a re-run
sends the same requests, and the LLM cache answers those already paid for (resume). Each turn
goes through the stage engine (`prefduel.llm.stages.ask`), one call at a time: the next
request needs the reply.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prefduel.llm.request import Completer, LLMRequest, LLMResponse
from prefduel.llm.stages import MALFORMED, Stage, ask
from prefduel.prefdisco.config import CONDITIONS, RunConfig
from prefduel.prefdisco.dataset.preferences import PreferenceProfile
from prefduel.prefdisco.dataset.prompts import retry_turn
from prefduel.prefdisco.dataset.tasks import Task
from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.follow_up import FollowUp, Topic, altered_reply
from prefduel.prefdisco.episode.user import PassiveUser, Router, is_importance_question
from prefduel.prefdisco.errors import DatasetError, EpisodeError


@dataclass(frozen=True)
class EpisodeKey:
    """Identifies an episode: model x condition x (persona, task), and for discovery the
    strategy (``ask``: the model asks; ``interviewer``: the Bayesian interviewer,
    `prefduel.prefdisco.interviewer.strategy`)."""

    model: str
    condition: str
    persona_id: str
    task_id: str
    strategy: str = "ask"

    @property
    def id(self) -> str:
        """``model|condition|persona|task`` (the row key in transcripts and scores);
        ``model|discovery:interviewer|persona|task`` for another strategy than ``ask``."""
        condition = self.condition
        if self.strategy != "ask":
            condition = f"{condition}:{self.strategy}"
        return f"{self.model}|{condition}|{self.persona_id}|{self.task_id}"


@dataclass(frozen=True)
class Transcript:
    """What happened in one episode.

    Attributes:
        key: The episode.
        source: The task's source (benchmark).
        domain: The task's domain.
        turns: The ask phase: each question, its route, the disclosures and the reply
            (JSON form of `UserTurn`); empty outside
            discovery.
        stop: Why the ask phase ended: ``ready``, ``malformed`` (a reply that stayed neither
            a question nor READY), ``max_turns``; for the interviewer ``min_gain``,
            ``exhausted`` or ``max_turns``; or the condition name for baseline/oracle.
        info: The information block the final request carried.
        response: The final answer.
        settings: Digest of the settings the episode ran under.
        asks: Every ask-phase reply, raw: ``turn``, ``text``, ``finish_reason`` and how it
            was read (``question``, ``ready`` or ``malformed``).
        calls: The episode's calls (`prefduel.prefdisco.study.calls.call_record`): role, model,
            sample, cache key, finish reason, tokens and cost.
        follow_up: The counterfactual follow-up check (`prefduel.prefdisco.episode.follow_up`), or
            None (not a discovery episode, budget 1, or no routed first question).
        interview: The interviewer's per-turn log (`InterviewResult.to_json`), or None.
    """

    key: EpisodeKey
    source: str
    domain: str
    turns: tuple[Mapping[str, Any], ...]
    stop: str
    info: str
    response: str
    settings: str
    asks: tuple[Mapping[str, Any], ...] = ()
    calls: tuple[Mapping[str, Any], ...] = ()
    follow_up: Mapping[str, Any] | None = None
    interview: Mapping[str, Any] | None = None

    @property
    def questions(self) -> int:
        """Clarifying questions asked."""
        return len(self.turns)

    @property
    def asked(self) -> tuple[str, ...]:
        """Attribute ids the questions were routed to, first occurrence order."""
        ids = [a for t in self.turns for a in t["route"]["attributes"]]
        return tuple(dict.fromkeys(ids))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (one line of ``transcripts.jsonl``)."""
        return {
            "episode_id": self.key.id,
            "model": self.key.model,
            "condition": self.key.condition,
            "strategy": self.key.strategy if self.key.condition == "discovery" else None,
            "persona_id": self.key.persona_id,
            "task_id": self.key.task_id,
            "source": self.source,
            "domain": self.domain,
            "turns": [dict(t) for t in self.turns],
            "stop": self.stop,
            "info": self.info,
            "response": self.response,
            "settings": self.settings,
            "asks": [dict(a) for a in self.asks],
            "calls": [dict(c) for c in self.calls],
            "follow_up": None if self.follow_up is None else dict(self.follow_up),
            "interview": None if self.interview is None else dict(self.interview),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, where: str = "transcript") -> Transcript:
        """Rebuild from `to_json` output.

        Raises:
            DatasetError: Missing fields (names ``where``).
        """
        try:
            return cls(
                key=EpisodeKey(
                    str(data["model"]),
                    str(data["condition"]),
                    str(data["persona_id"]),
                    str(data["task_id"]),
                    str(data.get("strategy") or "ask"),
                ),
                source=str(data["source"]),
                domain=str(data["domain"]),
                turns=tuple(data["turns"]),
                stop=str(data["stop"]),
                info=str(data["info"]),
                response=str(data["response"]),
                settings=str(data["settings"]),
                asks=tuple(data.get("asks") or ()),
                calls=tuple(data.get("calls") or ()),
                follow_up=data.get("follow_up"),
                interview=data.get("interview"),
            )
        except (KeyError, TypeError) as exc:
            raise DatasetError(f"{where}: malformed transcript ({exc})") from None


@dataclass
class EpisodeContext:
    """What episodes need besides their key.

    Attributes:
        taxonomy: The taxonomy.
        tasks: Task id -> task.
        profiles: (persona id, task id) -> hidden profile.
        settings: The run settings.
        digest: Digest of the settings (stored in each transcript).
        model_client: Answers the model-under-test roles (ask, answer, phrase).
        router: Routes the user's questions.
        prior: The interviewer's learned prior (`prefduel.prefdisco.interviewer.prior`), when
            the interviewer strategy runs.
    """

    taxonomy: Taxonomy
    tasks: Mapping[str, Task]
    profiles: Mapping[tuple[str, str], PreferenceProfile]
    settings: RunConfig
    digest: str
    model_client: Completer
    router: Router
    prior: Any = None


def settings_digest(settings: Mapping[str, Any]) -> str:
    """SHA-256 (16 hex digits) of canonical JSON settings."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def ask_request(
    key: EpisodeKey,
    block: str,
    turns: Sequence[tuple[str, str]],
    settings: RunConfig,
    previous: tuple[str, ...] = (),
) -> LLMRequest:
    """The ask-phase request after ``turns`` (question, reply) pairs (``previous``: this
    turn's unreadable replies, shown back with the format restated)."""
    messages = prompts.ask_messages(block, turns, settings.max_turns)
    for text in previous:
        messages = (*messages, *retry_turn(text, prompts.ASK_FORMAT))
    return LLMRequest(
        key.model,
        messages,
        settings.params("ask"),
        seed=settings.api_seed,
        sample=len(previous),
        role="ask",
    )


def _read_ask(text: str) -> tuple[str, str | None] | None:
    kind, question = prompts.parse_ask(text)
    return None if kind == "unparsed" else (kind, question)


def ask_stage(
    key: EpisodeKey, block: str, turns: Sequence[tuple[str, str]], settings: RunConfig
) -> Stage[int]:
    """One ask-phase turn (the item: its index): ``("question", text)`` or ``("ready",
    None)``; a reply that is neither is asked again, up to ``ask_attempts`` requests."""
    return Stage(
        "ask",
        request=lambda turn, previous: ask_request(key, block, turns, settings, previous),
        parse=lambda turn, text: _read_ask(text),
        describe=lambda turn: {"item": key.id, "turn": turn},
        tries=settings.ask_attempts,
    )


def answer_request(key: EpisodeKey, task: Task, info: str, settings: RunConfig) -> LLMRequest:
    """The final-answer request (identical across conditions except ``info``)."""
    block = prompts.task_block(task.question, task.options)
    return LLMRequest(
        key.model,
        prompts.final_messages(block, info, choice=task.answer_type == "choice"),
        settings.params("answer"),
        seed=settings.api_seed,
        role="answer",
    )


def oracle_info(profile: PreferenceProfile, taxonomy: Taxonomy) -> str:
    """The oracle condition's information block."""
    return prompts.info_oracle(
        (taxonomy[p.attribute], taxonomy[p.attribute].value(p.value), p.weight) for p in profile
    )


async def run_episode(key: EpisodeKey, context: EpisodeContext) -> Transcript:
    """Run one episode to its final answer.

    Args:
        key: The episode.
        context: Dataset, settings and clients.

    Returns:
        The transcript.

    Raises:
        DatasetError: The key names an unknown task, profile or condition.
        EpisodeError: An LLM call failed after its retries (nothing is stored; re-run).
    """
    if key.condition not in CONDITIONS:
        raise DatasetError(f"episode {key.id}: unknown condition {key.condition!r}")
    if key.strategy != "ask":
        raise DatasetError(
            f"episode {key.id}: run_episode runs the ask strategy; the {key.strategy} strategy "
            "has its own runner (prefduel.prefdisco.interviewer.strategy.run_interview)"
        )
    task = context.tasks.get(key.task_id)
    profile = context.profiles.get((key.persona_id, key.task_id))
    if task is None or profile is None:
        raise DatasetError(f"episode {key.id}: no task or profile for this persona and task")
    return await _run(key, task, profile, context)


#: The model under test's turns (ask, answer): the item is the request; every reply is usable.
MODEL_TURN: Stage[LLMRequest] = Stage("model", request=lambda request, previous: request)


async def _complete(client: Completer, request: LLMRequest, key: EpisodeKey) -> str:
    outcome = await ask(MODEL_TURN, request, client)
    if outcome.failed:
        raise EpisodeError(f"episode {key.id}: {request.role} call failed: {outcome.error}")
    return str(outcome.value)


class ReplyLog:
    """A `Completer` that keeps the responses it passes on (the raw ask-phase replies)."""

    def __init__(self, client: Completer) -> None:
        self.client = client
        self.responses: list[LLMResponse] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        response = await self.client.complete(request)
        self.responses.append(response)
        return response


async def _ask_phase(
    key: EpisodeKey, block: str, profile: PreferenceProfile, context: EpisodeContext
) -> tuple[list[Mapping[str, Any]], list[tuple[str, str]], list[dict[str, Any]], str]:
    """The discovery questions: (user turns, (question, reply) pairs, raw replies, stop)."""
    settings = context.settings
    user = PassiveUser(profile, context.taxonomy, context.router, style=settings.user_style)
    replies = ReplyLog(context.model_client)
    turns: list[Mapping[str, Any]] = []
    pairs: list[tuple[str, str]] = []
    asks: list[dict[str, Any]] = []
    for index in range(settings.max_turns):
        outcome = await ask(ask_stage(key, block, tuple(pairs), settings), index, replies)
        if outcome.failed:
            raise EpisodeError(f"episode {key.id}: ask call failed: {outcome.error}")
        for response in replies.responses:
            kind = _read_ask(response.text or "")
            asks.append(
                {
                    "turn": index,
                    "text": response.text,
                    "finish_reason": response.finish_reason,
                    "read": "malformed" if kind is None else kind[0],
                }
            )
        replies.responses.clear()
        if outcome.value is MALFORMED:
            return turns, pairs, asks, "malformed"
        kind, question = outcome.value
        if kind != "question" or question is None:
            return turns, pairs, asks, "ready"
        turn = await user.answer(question)
        turns.append(turn.to_json())
        pairs.append((question, turn.reply))
    return turns, pairs, asks, "max_turns"


async def _altered_topic(
    key: EpisodeKey, block: str, pairs: tuple[tuple[str, str], ...], context: EpisodeContext
) -> Topic:
    """The model's second question after an altered first reply, as a topic."""
    outcome = await ask(ask_stage(key, block, pairs, context.settings), 1, context.model_client)
    if outcome.failed:
        raise EpisodeError(f"episode {key.id}: ask call failed (follow-up check): {outcome.error}")
    if outcome.value is MALFORMED:
        return Topic(stop="malformed")
    kind, question = outcome.value
    if kind != "question" or question is None:
        return Topic(stop="ready")
    route = await context.router.route(question)
    return Topic(tuple(route.attributes), is_importance_question(question))


async def ask_follow_up(
    key: EpisodeKey,
    block: str,
    turns: Sequence[Mapping[str, Any]],
    stop: str,
    context: EpisodeContext,
) -> FollowUp | None:
    """The counterfactual follow-up check of an ``ask`` episode
    (`prefduel.prefdisco.episode.follow_up`): one more ask request with the first reply altered;
    None when there is nothing to alter."""
    settings = context.settings
    if settings.max_turns < 2 or not turns:
        return None
    instance = (key.persona_id, key.task_id)
    altered = altered_reply(turns[0], context.taxonomy, settings.user_style, instance)
    if altered is None:
        return None
    attribute, reply = altered
    topic = await _altered_topic(key, block, ((str(turns[0]["question"]), reply),), context)
    original = Topic.of_turn(turns[1]) if len(turns) > 1 else Topic(stop=stop)
    return FollowUp(attribute, reply, original, topic)


async def _run(
    key: EpisodeKey, task: Task, profile: PreferenceProfile, context: EpisodeContext
) -> Transcript:
    settings = context.settings
    block = prompts.task_block(task.question, task.options)
    turns: list[Mapping[str, Any]] = []
    asks: list[dict[str, Any]] = []
    follow_up = None
    if key.condition == "discovery":
        turns, pairs, asks, stop = await _ask_phase(key, block, profile, context)
        info = prompts.info_discovery(pairs)
        if settings.follow_up_check:
            follow_up = await ask_follow_up(key, block, turns, stop, context)
    elif key.condition == "oracle":
        stop = "oracle"
        info = oracle_info(profile, context.taxonomy)
    else:
        stop = "baseline"
        info = prompts.info_baseline()
    response = await _complete(context.model_client, answer_request(key, task, info, settings), key)
    return Transcript(
        key=key,
        source=task.source,
        domain=task.domain,
        turns=tuple(turns),
        stop=stop,
        info=info,
        response=response,
        settings=context.digest,
        asks=tuple(asks),
        follow_up=None if follow_up is None else follow_up.to_json(),
    )
