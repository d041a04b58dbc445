"""Episodes: one model, one condition, one (persona, task) instance -> a transcript.

Three conditions share one scaffold (`prefduel.prefdisco.prompts`): the final answer
is requested with the same system prompt and template; only the information block differs.

* ``baseline``: the problem only ("you know nothing about this user's preferences");
* ``discovery``: first an ask phase of at most ``max_turns`` turns (the model replies
  ``QUESTION: ...`` or ``READY``; each question goes to the `PassiveUser`), then the final
  answer with the questions and replies as the information;
* ``oracle``: the full hidden profile (attribute, value, importance) as the information.

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

from prefduel.llm.request import Completer, LLMRequest
from prefduel.llm.stages import Stage, ask
from prefduel.prefdisco import prompts
from prefduel.prefdisco.config import CONDITIONS, RunConfig
from prefduel.prefdisco.errors import DatasetError, EpisodeError
from prefduel.prefdisco.preferences import PreferenceProfile
from prefduel.prefdisco.tasks import Task
from prefduel.prefdisco.taxonomy import Taxonomy
from prefduel.prefdisco.user import PassiveUser, Router


@dataclass(frozen=True)
class EpisodeKey:
    """Identifies an episode: model x condition x (persona, task)."""

    model: str
    condition: str
    persona_id: str
    task_id: str

    @property
    def id(self) -> str:
        """``model|condition|persona|task`` (the row key in transcripts and scores)."""
        return f"{self.model}|{self.condition}|{self.persona_id}|{self.task_id}"


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
        stop: Why the ask phase ended: ``ready``, ``unparsed`` (neither a question nor READY),
            ``max_turns``; or the condition name for baseline/oracle.
        info: The information block the final request carried.
        response: The final answer.
        settings: Digest of the settings the episode ran under.
    """

    key: EpisodeKey
    source: str
    domain: str
    turns: tuple[Mapping[str, Any], ...]
    stop: str
    info: str
    response: str
    settings: str

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
            "persona_id": self.key.persona_id,
            "task_id": self.key.task_id,
            "source": self.source,
            "domain": self.domain,
            "turns": [dict(t) for t in self.turns],
            "stop": self.stop,
            "info": self.info,
            "response": self.response,
            "settings": self.settings,
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
                ),
                source=str(data["source"]),
                domain=str(data["domain"]),
                turns=tuple(data["turns"]),
                stop=str(data["stop"]),
                info=str(data["info"]),
                response=str(data["response"]),
                settings=str(data["settings"]),
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
        model_client: Answers the model-under-test roles (ask, answer).
        router: Routes the user's questions.
    """

    taxonomy: Taxonomy
    tasks: Mapping[str, Task]
    profiles: Mapping[tuple[str, str], PreferenceProfile]
    settings: RunConfig
    digest: str
    model_client: Completer
    router: Router


def settings_digest(settings: Mapping[str, Any]) -> str:
    """SHA-256 (16 hex digits) of canonical JSON settings."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def ask_request(
    key: EpisodeKey, block: str, turns: Sequence[tuple[str, str]], settings: RunConfig
) -> LLMRequest:
    """The ask-phase request after ``turns`` (question, reply) pairs."""
    return LLMRequest(
        key.model,
        prompts.ask_messages(block, turns, settings.max_turns),
        settings.params("ask"),
        seed=settings.api_seed,
        role="ask",
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


async def _run(
    key: EpisodeKey, task: Task, profile: PreferenceProfile, context: EpisodeContext
) -> Transcript:
    settings = context.settings
    block = prompts.task_block(task.question, task.options)
    turns: list[Mapping[str, Any]] = []
    pairs: list[tuple[str, str]] = []
    if key.condition == "discovery":
        user = PassiveUser(profile, context.taxonomy, context.router)
        stop = "max_turns"
        for _ in range(settings.max_turns):
            text = await _complete(
                context.model_client, ask_request(key, block, pairs, settings), key
            )
            kind, question = prompts.parse_ask(text)
            if kind != "question" or question is None:
                stop = kind
                break
            turn = await user.answer(question)
            turns.append(turn.to_json())
            pairs.append((question, turn.reply))
        info = prompts.info_discovery(pairs)
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
    )
