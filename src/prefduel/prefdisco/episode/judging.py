"""Scoring one transcript: per-attribute rubric judgements, PrefAlign, accuracy, discovery.

For each attribute of the hidden profile, the judge (role ``"judge"``) sees the question, the
response, the attribute, the user's value and its rubric, never the condition or the model.
A reply must be ``SCORE: n`` with n in 1..5; otherwise the request is repeated with the reply
shown back and the format restated, up to ``judge_attempts`` times (the stages `judge_stage`
and `grader_stage`, run by the stage engine, `prefduel.llm.stages`). A judgement that never
parses is recorded as missing (``None``) with an error, and PrefAlign of that episode is then
missing too: it is never filled in with 1.

Accuracy uses the rules of `prefduel.prefdisco.episode.matching` first; the grader (role
``"grader"``) is asked only when they cannot decide. Discovery recall is the share of hidden
attributes that at least one question was routed to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from prefduel.llm.concurrency import gather_or_cancel
from prefduel.llm.request import Completer, LLMRequest
from prefduel.llm.stages import MALFORMED, Outcome, Stage, ask
from prefduel.llm.structured import AnswerFormat
from prefduel.prefdisco.config import RunConfig
from prefduel.prefdisco.dataset.preferences import PreferenceProfile
from prefduel.prefdisco.dataset.prompts import retry_turn
from prefduel.prefdisco.dataset.rubrics import Rubric
from prefduel.prefdisco.dataset.tasks import Task
from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.episodes import Transcript
from prefduel.prefdisco.episode.matching import match_answer
from prefduel.prefdisco.episode.metrics import discovery_recall, pref_align
from prefduel.prefdisco.errors import EpisodeError, ScoringError


@dataclass(frozen=True)
class Judgement:
    """One attribute's score.

    Attributes:
        attribute: Attribute id.
        score: 1-5, or None when no reply parsed.
        attempts: Requests made.
        error: Why the score is missing.
    """

    attribute: str
    score: int | None
    attempts: int
    error: str | None = None


@dataclass(frozen=True)
class ScoreRow:
    """Everything measured on one episode (one line of ``scores.jsonl``).

    Attributes:
        episode_id: ``model|condition|persona|task``.
        model: Model under test.
        condition: baseline, discovery or oracle.
        persona_id: Persona.
        task_id: Task.
        source: Task source (benchmark).
        domain: Task domain.
        weights: Attribute -> weight of the hidden profile.
        values: Attribute -> hidden value.
        scores: Attribute -> judge score (None: missing).
        judge_attempts: Attribute -> requests made.
        pref_align: Σ w·score, or None if a score is missing.
        correct: Task accuracy (None: undecided after the grader too).
        accuracy_method: ``choice``, ``numeric``, ``exact``, ``grader`` or ``none``.
        extracted: The final answer the rules extracted.
        questions: Clarifying questions asked.
        asked: Attributes the questions were routed to.
        disclosed: Hidden attributes whose value the user revealed.
        recall: Share of hidden attributes asked about (discovery only).
        errors: Everything that went wrong while scoring (missing scores, grader failures).
        settings: Digest of the run settings.
        stop: Why the ask phase ended (the transcript's ``stop``).
        revealed: Per user reply, the hidden attributes it disclosed something about (value,
            hint or importance), in order.
        usage: Calls, tokens and cost of the whole episode (its run and its scoring).
        finish_reasons: Role -> finish reason -> calls, over the whole episode.
        calls: The scoring calls (`prefduel.prefdisco.study.calls.call_record`); the episode's
            own are in its transcript.
        strategy: The discovery strategy (``ask``, ``interviewer``); None outside discovery.
        follow_up: The transcript's counterfactual follow-up check (None: not recorded).
    """

    episode_id: str
    model: str
    condition: str
    persona_id: str
    task_id: str
    source: str
    domain: str
    weights: Mapping[str, float]
    values: Mapping[str, str]
    scores: Mapping[str, int | None]
    judge_attempts: Mapping[str, int]
    pref_align: float | None
    correct: bool | None
    accuracy_method: str
    extracted: str | None
    questions: int
    asked: tuple[str, ...]
    disclosed: tuple[str, ...]
    recall: float | None
    errors: tuple[str, ...]
    settings: str
    stop: str | None = None
    revealed: tuple[tuple[str, ...], ...] = ()
    usage: Mapping[str, Any] = field(default_factory=dict)
    finish_reasons: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    calls: tuple[Mapping[str, Any], ...] = ()
    strategy: str | None = None
    follow_up: Mapping[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        out = dict(self.__dict__)
        for key in ("weights", "values", "scores", "judge_attempts", "usage"):
            out[key] = dict(out[key])
        for key in ("asked", "disclosed", "errors"):
            out[key] = list(out[key])
        out["revealed"] = [list(r) for r in self.revealed]
        out["finish_reasons"] = {k: dict(v) for k, v in self.finish_reasons.items()}
        out["calls"] = [dict(c) for c in self.calls]
        out["follow_up"] = None if self.follow_up is None else dict(self.follow_up)
        return out


@dataclass
class JudgeContext:
    """What scoring needs.

    Attributes:
        taxonomy: The taxonomy.
        tasks: Task id -> task.
        profiles: (persona, task) -> hidden profile.
        rubrics: (attribute, value) -> rubric.
        settings: Run settings (judge model, attempts, temperature, max tokens).
        client: Answers judge and grader requests.
    """

    taxonomy: Taxonomy
    tasks: Mapping[str, Task]
    profiles: Mapping[tuple[str, str], PreferenceProfile]
    rubrics: Mapping[tuple[str, str], Rubric]
    settings: RunConfig
    client: Completer


def judge_request(
    task: Task,
    response: str,
    rubric: Rubric,
    taxonomy: Taxonomy,
    settings: RunConfig,
    previous: tuple[str, ...] = (),
) -> LLMRequest:
    """The judge request for one attribute (``previous``: earlier unparsable replies)."""
    attribute = taxonomy[rubric.attribute]
    messages = prompts.judge_messages(
        prompts.task_block(task.question, task.options),
        response,
        attribute,
        attribute.value(rubric.value),
        rubric.anchors,
    )
    for text in previous:
        messages = (*messages, *retry_turn(text, prompts.SCORE_FORMAT))
    return LLMRequest(
        settings.judge_model,
        messages,
        settings.params("judge"),
        sample=len(previous),
        role="judge",
    )


def grader_request(
    task: Task, response: str, settings: RunConfig, previous: tuple[str, ...] = ()
) -> LLMRequest:
    """The accuracy grader request."""
    reference = (
        f"({task.answer}) {task.answer_text}" if task.answer_type == "choice" else task.answer
    )
    messages = prompts.grader_messages(
        prompts.task_block(task.question, task.options), reference, response
    )
    for text in previous:
        messages = (*messages, *retry_turn(text, prompts.VERDICT_FORMAT))
    return LLMRequest(
        settings.grader_model_name,
        messages,
        settings.params("grader"),
        sample=len(previous),
        role="grader",
    )


#: The judge's answer as structured output: ``{"score": "4"}`` (or a bare ``"4"``).
SCORE_ANSWER = AnswerFormat.choice("score", ("1", "2", "3", "4", "5"), field="score")
#: The grader's answer as structured output: ``{"verdict": "CORRECT"}``.
VERDICT_ANSWER = AnswerFormat.choice("verdict", ("CORRECT", "INCORRECT"), field="verdict")


def judge_stage(task: Task, response: str, context: JudgeContext) -> Stage[Rubric]:
    """Judging ``response`` on one rubric: ``SCORE: n`` (1-5) or asked again, the unparsable
    replies shown back, up to ``judge_attempts`` requests; as structured output when
    ``judge_structured`` asks for it (the text parser reads what the endpoint sends)."""
    return Stage(
        "judge",
        request=lambda rubric, previous: judge_request(
            task, response, rubric, context.taxonomy, context.settings, previous
        ),
        parse=lambda rubric, text: prompts.parse_score(text),
        describe=lambda rubric: {"item": task.id, "attribute": rubric.attribute},
        tries=context.settings.judge_attempts,
        answer=SCORE_ANSWER,
        structured=context.settings.judge_structured,
    )


def grader_stage(task: Task, response: str, context: JudgeContext) -> Stage[None]:
    """Grading ``response`` against the reference: CORRECT / INCORRECT or asked again, up to
    ``judge_attempts`` requests (structured output as ``grader_structured`` says)."""
    return Stage(
        "grader",
        request=lambda _, previous: grader_request(task, response, context.settings, previous),
        parse=lambda _, text: prompts.parse_verdict(text),
        describe=lambda _: {"item": task.id},
        tries=context.settings.judge_attempts,
        answer=VERDICT_ANSWER,
        structured=context.settings.grader_structured,
    )


def _failed(outcome: Outcome, what: str) -> EpisodeError:
    where = f"{what}: " if what else ""
    return EpisodeError(f"{where}{outcome.request.role} call failed: {outcome.error}")


async def judge_attribute(
    task: Task, response: str, rubric: Rubric, context: JudgeContext, what: str = ""
) -> Judgement:
    """Score one attribute, retrying unparsable replies.

    Raises:
        EpisodeError: A call failed after the client's retries.
    """
    outcome = await ask(judge_stage(task, response, context), rubric, context.client)
    if outcome.failed:
        raise _failed(outcome, what)
    if outcome.value is not MALFORMED:
        return Judgement(rubric.attribute, outcome.value, outcome.tries)
    attempts = context.settings.judge_attempts
    return Judgement(
        rubric.attribute,
        None,
        attempts,
        f"judge gave no valid 1-5 score for {rubric.attribute} in "
        f"{attempts} attempts (last reply {outcome.replies[-1][:60]!r})",
    )


async def grade(
    task: Task, response: str, context: JudgeContext, what: str = ""
) -> tuple[bool | None, str, str | None, str | None]:
    """Accuracy: rules first, the grader if they cannot decide.

    Returns:
        ``(correct, method, extracted, error)``.
    """
    match = match_answer(task, response)
    if match.correct is not None:
        return match.correct, match.method, match.extracted, None
    outcome = await ask(grader_stage(task, response, context), None, context.client)
    if outcome.failed:
        raise _failed(outcome, what)
    if outcome.value is not MALFORMED:
        return outcome.value, "grader", match.extracted, None
    return (
        None,
        "none",
        match.extracted,
        f"grader gave no CORRECT/INCORRECT verdict in {context.settings.judge_attempts} attempts",
    )


async def score_transcript(transcript: Transcript, context: JudgeContext) -> ScoreRow:
    """Score one transcript (judge every hidden attribute, accuracy, discovery).

    Raises:
        EpisodeError: A judge or grader call failed after the client's retries (nothing is
            stored; re-run to retry).
    """
    key = transcript.key
    task = context.tasks[key.task_id]
    profile = context.profiles[(key.persona_id, key.task_id)]
    rubrics = [context.rubrics[(p.attribute, p.value)] for p in profile]
    # one failed call cancels (and waits for) the others: none is left running
    *judgements, (correct, method, extracted, grade_error) = await gather_or_cancel(
        *(judge_attribute(task, transcript.response, r, context, key.id) for r in rubrics),
        grade(task, transcript.response, context, key.id),
    )
    scores = {j.attribute: j.score for j in judgements}
    errors = [j.error for j in judgements if j.error]
    try:
        align: float | None = pref_align(scores, profile.weights)
    except ScoringError as exc:
        align = None
        errors.append(f"PrefAlign missing: {exc}")
    if grade_error:
        errors.append(grade_error)
    asked = transcript.asked
    recall = discovery_recall(profile.attributes, asked) if key.condition == "discovery" else None
    disclosed, revealed = _disclosures(transcript)
    return ScoreRow(
        episode_id=key.id,
        model=key.model,
        condition=key.condition,
        persona_id=key.persona_id,
        task_id=key.task_id,
        source=transcript.source,
        domain=transcript.domain,
        weights=profile.weights,
        values=profile.values,
        scores=scores,
        judge_attempts={j.attribute: j.attempts for j in judgements},
        pref_align=align,
        correct=correct,
        accuracy_method=method,
        extracted=extracted,
        questions=transcript.questions,
        asked=asked,
        disclosed=disclosed,
        recall=recall,
        errors=tuple(errors),
        settings=transcript.settings,
        stop=transcript.stop,
        revealed=revealed,
        strategy=key.strategy if key.condition == "discovery" else None,
        follow_up=transcript.follow_up,
    )


def _hidden(disclosure: Mapping[str, Any]) -> bool:
    """Whether a logged disclosure revealed something about a hidden preference."""
    return disclosure.get("value") is not None or disclosure.get("importance") is not None


def _disclosures(transcript: Transcript) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """The hidden attributes whose value was disclosed (first occurrence order), and per reply
    the hidden attributes it disclosed something about (value, hint or importance)."""
    turns = [t["disclosures"] for t in transcript.turns]
    values = (d["attribute"] for t in turns for d in t if d["value"] is not None)
    revealed = tuple(tuple(dict.fromkeys(d["attribute"] for d in t if _hidden(d))) for t in turns)
    return tuple(dict.fromkeys(values)), revealed
