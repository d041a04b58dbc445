"""The dry run of ``prefdisco run``: episodes to run, calls and cost, before anything is sent.

Two figures, because replies decide how many calls an episode makes:

* **calls**: every question the budget allows, one judgement per hidden attribute, the grader
  only where the rules cannot decide by construction (``free`` tasks), the LLM router (when it
  will be used) once per question, the follow-up check's extra ask request (and its routing)
  per ``ask`` discovery episode, the interviewer's phrasing request per question (``phrasing:
  llm``; none with templates): what a run costs when every reply is well formed;
* **max_calls**: the worst case, a true bound: every stage asks again after each malformed
  reply up to its tries (``ask_attempts``, the router's attempts, ``phrase_attempts``,
  ``judge_attempts`` for judge and grader), each judge and grader request asking for
  structured output is refused at each rung and sent again one rung down (``json_schema``,
  then ``json_object``, then none), the grader is asked for every
  episode, and the routers are measured on the labelled questions when ``auto`` may choose
  the LLM router.

Transport retries of failed attempts (rate limits, timeouts) are not calls and are not
counted. Completion tokens are each request's ``max_tokens``; answers already in the cache are
not discounted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefduel.llm.estimate import estimate_cost
from prefduel.llm.prices import load_prices
from prefduel.llm.request import LLMRequest
from prefduel.prefdisco.config import PrefDiscoConfig, RunConfig
from prefduel.prefdisco.dataset.folder import Dataset
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.episode.episodes import EpisodeKey, answer_request, ask_request, oracle_info
from prefduel.prefdisco.episode.judging import (
    SCORE_ANSWER,
    VERDICT_ANSWER,
    grader_request,
    judge_request,
)
from prefduel.prefdisco.episode.router_check import (
    llm_router,
    load_router_questions,
    measures_llm_router,
)
from prefduel.prefdisco.episode.routing import LLMRouter
from prefduel.prefdisco.interviewer.belief import Candidate
from prefduel.prefdisco.interviewer.replies import phrase_stage
from prefduel.prefdisco.report.rows import load_scores
from prefduel.prefdisco.study.clients import NoClient
from prefduel.prefdisco.study.run_folder import episode_keys

#: A request with ``i`` malformed replies shown back (``i`` = 0 is the first try).
Retried = Callable[[tuple[str, ...]], LLMRequest]


def _tries(build: Retried, tries: int, bad_reply: str, worst: bool) -> list[LLMRequest]:
    """The first request, or every try with the longest bad replies shown back."""
    return [build((bad_reply,) * i) for i in range(tries if worst else 1)]


class _EpisodeCalls:
    """The requests of one episode, best or worst case (see the module docstring)."""

    def __init__(self, dataset: Dataset, settings: RunConfig, router: LLMRouter | None) -> None:
        self.dataset = dataset
        self.settings = settings
        self.router = router
        self.answer = "x" * 4 * (settings.answer_max_tokens or 1024)
        self.bad = "x" * 4 * (settings.judge_max_tokens or 256)

    def _routing(self, worst: bool) -> list[LLMRequest]:
        """The LLM router's requests for one question (none with the keyword router)."""
        router = self.router
        if router is None:
            return []
        question = "x" * 500  # a question is cut at 500 characters
        return _tries(
            lambda previous: router.request(question, previous), router.attempts, self.bad, worst
        )

    def _asks(self, key: EpisodeKey, block: str, turn: int, worst: bool) -> list[LLMRequest]:
        """One ask-phase turn after ``turn`` earlier (question, reply) pairs, routed."""
        settings = self.settings
        pairs = [("x" * 500, "x" * 300)] * turn
        return [
            *_tries(
                lambda previous: ask_request(key, block, pairs, settings, previous),
                settings.ask_attempts,
                "x" * 4 * (settings.ask_max_tokens or 256),
                worst,
            ),
            *self._routing(worst),
        ]

    def _ask_phase(self, key: EpisodeKey, block: str, worst: bool) -> list[LLMRequest]:
        settings = self.settings
        requests = []
        for turn in range(settings.max_turns):
            requests += self._asks(key, block, turn, worst)
        if settings.follow_up_check and settings.max_turns >= 2:
            requests += self._asks(key, block, 1, worst)  # the second question, reply altered
        return requests

    def _interview(self, key: EpisodeKey, block: str, worst: bool) -> list[LLMRequest]:
        """The interviewer's questions: phrased by the model (``phrasing: llm``), routed."""
        config = self.settings.interviewer
        stage = phrase_stage(
            self.dataset.taxonomy,
            block,
            config.phrase_model or key.model,
            self.settings.params("ask"),
            config.phrase_attempts,
        )
        candidate = Candidate(self.dataset.taxonomy.ids[0])
        requests = []
        for _ in range(config.max_turns or self.settings.max_turns):
            if config.phrasing == "llm":
                requests += _tries(
                    lambda previous: stage.request(candidate, previous),
                    config.phrase_attempts,
                    "x" * 4 * (self.settings.ask_max_tokens or 256),
                    worst,
                )
            requests += self._routing(worst)
        return requests

    def requests(self, key: EpisodeKey, worst: bool) -> list[LLMRequest]:
        """Every request of the episode ``key``."""
        dataset, settings = self.dataset, self.settings
        task = dataset.tasks[key.task_id]
        profile = dataset.profiles[(key.persona_id, key.task_id)]
        block = prompts.task_block(task.question, task.options)
        info = prompts.info_baseline()
        requests = []
        if key.condition == "discovery":
            if key.strategy == "interviewer":
                requests += self._interview(key, block, worst)
            else:
                requests += self._ask_phase(key, block, worst)
            info = oracle_info(profile, dataset.taxonomy)  # as long as the replies can be
        elif key.condition == "oracle":
            info = oracle_info(profile, dataset.taxonomy)
        requests.append(answer_request(key, task, info, settings))
        tries = settings.judge_attempts
        # an endpoint that refuses structured output is asked again one rung down
        # (json_schema -> json_object -> none; `AnswerFormat.sends_at_most`)
        judge_sends = SCORE_ANSWER.sends_at_most(settings.judge_structured) if worst else 1
        grader_sends = VERDICT_ANSWER.sends_at_most(settings.grader_structured) if worst else 1
        for p in profile:
            rubric = dataset.rubrics[(p.attribute, p.value)]
            requests += judge_sends * _tries(
                lambda previous, r=rubric: judge_request(
                    task, self.answer, r, dataset.taxonomy, settings, previous
                ),
                tries,
                self.bad,
                worst,
            )
        if worst or task.answer_type == "free":
            requests += grader_sends * _tries(
                lambda previous: grader_request(task, self.answer, settings, previous),
                tries,
                self.bad,
                worst,
            )
        return requests


def _scored(folder: Path) -> set[str]:
    path = folder / "scores.jsonl"
    if not path.exists():
        return set()
    return {row["episode_id"] for row in load_scores(path)}


def estimate_run(dataset: Dataset, config: PrefDiscoConfig, folder: str | Path) -> dict[str, Any]:
    """Count the episodes still to run and estimate their calls and cost (``--dry-run``).

    Returns:
        ``episodes``, ``scored``, ``to_run``; ``calls`` and ``cost`` when every reply is well
        formed; ``max_calls`` and ``max_cost``, the worst case (every malformed reply asked
        again; a bound on the calls sent); tokens, currency and the models without a price.
    """
    settings = config.run
    keys = episode_keys(dataset, settings)
    scored = _scored(Path(folder))
    todo = [k for k in keys if k.id not in scored]
    measure = measures_llm_router(settings, config.llm_for("user").backend == "scripted")
    router = llm_router(dataset.taxonomy, settings, NoClient()) if measure else None
    calls = _EpisodeCalls(dataset, settings, router if settings.router == "llm" else None)
    worst_calls = _EpisodeCalls(dataset, settings, router)
    best = [r for key in todo for r in calls.requests(key, worst=False)]
    worst = [r for key in todo for r in worst_calls.requests(key, worst=True)]
    if router is not None and todo:
        questions = load_router_questions(taxonomy=dataset.taxonomy)
        best += [router.request(q.question) for q in questions]
        worst += [
            r
            for q in questions
            for r in _tries(
                lambda previous, q=q: router.request(q.question, previous),
                router.attempts,
                worst_calls.bad,
                True,
            )
        ]
    prices = load_prices(config.llm_for("model").prices)
    low, high = estimate_cost(best, prices=prices), estimate_cost(worst, prices=prices)
    return {
        "episodes": len(keys),
        "scored": len(keys) - len(todo),
        "to_run": len(todo),
        "calls": low.calls,
        "max_calls": high.calls,
        "prompt_tokens": low.prompt_tokens,
        "completion_tokens": low.completion_tokens,
        "cost": low.cost,
        "max_cost": high.cost,
        "currency": low.currency,
        "unpriced": list(high.unpriced_models),
    }


__all__ = ["estimate_run"]
