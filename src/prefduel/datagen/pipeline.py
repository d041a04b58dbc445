"""The datagen pipeline: questions -> answers -> rater scores -> judge picks -> a stored World.

This module describes the four stages (`prefduel.llm.stages.Stage`: the request of an item,
how its reply is parsed, its placeholder in a dry run, what names it in records); the stage
engine (`prefduel.llm.stages.StageEngine`) runs them. Every call goes through an `LLMClient`
and its SQLite cache, so every stage is resumable: re-running after a kill (or after failures)
answers finished calls from the cache for free and sends only the missing ones. Each reply is
committed to the cache in the event-loop step in which it arrives, so a kill loses only the
replies in flight at that moment (at most ``max_connections``, the one being committed
included), which are sent again; every other reply received is served from the cache.

Stages (K personas, I students, Q questions, ``samples`` judge samples):

==========  ===================================  ===========================================
stage       calls                                a malformed answer (cannot be parsed) ...
==========  ===================================  ===========================================
questions   Q                                    is asked again with the next sample index
                                                 (``retries.question`` times), then the
                                                 question is dropped from the bank
answers     Q x K                                same (``retries.answer``), then the question
                                                 is dropped
rater       Q (one call rates all K personas)    same (``retries.rater``), then g = 0 for the
                                                 question
judge       I x Q x K(K-1)/2 x 2 orders x 2      is recorded and counted, and left out of the
            labels x samples                     smoothed log-odds (``retries.judge``: asked
                                                 again first, default 0)
loadings    m (style dimensions; one call rates  same (``retries.rater``), then the ``level``
            all K personas)                      question is left out of the ask bank
asks        I x (m + K(K-1)/2 + kinds)           same (``asks.retries``), then the question
                                                 is left out of the ask bank
==========  ===================================  ===========================================

The last two run only with ``asks.enabled`` (the default; `prefduel.datagen.asks`).

Malformed answers are never dropped silently: each is counted per stage, listed in
``datagen/malformed.jsonl`` and summarized. A call that fails (after the client's retries, or
because the budget is reached) leaves the run incomplete: no world is written, and re-running
the same command resumes.

Then picks -> smoothed log-odds over display orders and label assignments -> ``P`` and
per-(student, question) ridge Bradley-Terry -> ``U`` (TutorSim's functions), rater scores ->
``g``, ``Phi = [e_p, g]``, and the arrivals are laid out (`layout`).

Outputs (``output`` directory): ``world.json`` and ``arrays.npz`` (a stored World: ``prefduel
run --worlds DIR``) and ``datagen/``: ``summary.json`` (config with the LLM settings used,
backend and endpoint, spend of this run and over all runs (`DatagenResult.spend`), per-stage
counts, judge diagnostics), ``questions.jsonl`` (spec, text, rater scores and the K answers of
each question), ``tables.npz`` (``P``, ``U``, wins, valid picks, scores, g and picks per
(student, question)), ``battles.jsonl`` (one Arena-style row per valid pick) and
``malformed.jsonl`` (`prefduel.datagen.output`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefduel.datagen.asks import ASK_STAGES, AskStages
from prefduel.datagen.calls import (
    AnswerSettings,
    QuestionSettings,
    QuestionSpec,
    RaterSettings,
    RoleCalls,
)
from prefduel.datagen.config import DatagenConfig, DatagenError
from prefduel.datagen.errors import WorldRefusedError
from prefduel.datagen.judge import JudgeStage
from prefduel.datagen.output import (
    Collected,
    build_world,
    check_outputs,
    endpoint,
    write_incomplete,
    write_outputs,
    write_summary,
)
from prefduel.datagen.prompts import parse_answer, parse_question, parse_scores
from prefduel.datagen.results import DatagenPlan, DatagenResult
from prefduel.datagen.scripted import ScriptedWorld
from prefduel.datagen.settings import StageSettings, split_config
from prefduel.llm.batchrun import BatchSender
from prefduel.llm.batchstate import BatchSettings, BatchState
from prefduel.llm.cache import ResponseCache, default_cache_path
from prefduel.llm.client import LLMClient, run_sync
from prefduel.llm.config import LLMConfig, make_client
from prefduel.llm.errors import LLMConfigError
from prefduel.llm.prices import load_prices
from prefduel.llm.stages import (
    CHUNK,
    FAILED,
    MALFORMED,
    CacheSender,
    ClientSender,
    Sender,
    Stage,
    StageEngine,
    StageEstimate,
    StageReport,
)

#: The four stages of every run; the ask stages (`ASK_STAGES`) follow when the students are
#: asked (`StageSettings.names`).
STAGES = ("questions", "answers", "rater", "judge")


class _Placeholder(str):
    """Stand-in text of an answer a dry run does not know yet (it is not cached)."""

    __slots__ = ()


# -- the stages --------------------------------------------------------------------------------


def _calls(calls: RoleCalls, answer: Any) -> dict[str, Any]:
    """A stage's tries and structured-output settings (the `Stage` keywords)."""
    return {"tries": calls.tries, "answer": answer, "structured": calls.structured}


class _Pipeline:
    """Datagen's four stages, described for the stage engine; each stage is given only its
    own settings.

    Args:
        stages: The run's settings, one part per stage (`split_config`).
        sender: `ClientSender` (a run) or `CacheSender` (a dry run).
    """

    def __init__(self, stages: StageSettings, sender: Sender) -> None:
        self.stages = stages
        # a batch sender takes a whole wave at once (its batches run together at the provider)
        self.engine = StageEngine(sender, chunk=getattr(sender, "chunk", CHUNK))
        for stage in stages.names():
            self.engine.report(stage)
        #: Stages whose prompts hold placeholders of uncached answers (dry run).
        self.inexact: set[str] = set()

    async def _values(self, stage: Stage[Any], items: Sequence[Any]) -> list[Any]:
        """Run a whole stage over ``items``; the value of each."""
        self.engine.start(stage.name, len(items))
        outcomes = await self.engine.run(stage, items)
        self.engine.finish(stage.name)
        return [o.value for o in outcomes]

    async def run(self) -> Collected:
        """Every stage, in order."""
        stages = self.stages
        specs = stages.questions.bank()
        questions = await self._questions(stages.questions, specs)
        asked = [qi for qi, text in questions.items() if isinstance(text, str)]
        if any(isinstance(questions[qi], _Placeholder) for qi in asked):
            self.inexact.update(("answers", "rater", "judge"))
        answers = await self._answers(stages.answers, specs, questions, asked)
        usable = [qi for qi in asked if all(isinstance(a, str) for a in answers[qi])]
        dropped = [
            qi
            for qi in questions
            if questions[qi] is MALFORMED
            or (qi in answers and MALFORMED in answers[qi] and FAILED not in answers[qi])
        ]
        if any(isinstance(a, _Placeholder) for qi in usable for a in answers[qi]):
            self.inexact.add("judge")
        scores = await self._rater(stages.rater, specs, questions, asked)
        judge = JudgeStage(stages.judge, self.engine, specs, questions, answers)
        await judge.run(usable)
        asks = None if stages.asks is None else await AskStages(stages.asks, self.engine).run()
        return Collected(
            specs,
            questions,
            answers,
            usable,
            dropped,
            scores,
            judge.picks,
            probs=judge.probs if stages.judge.mode == "logprobs" else None,
            fallback=judge.fallback,
            asks=asks,
        )

    async def _questions(self, s: QuestionSettings, specs: list[QuestionSpec]) -> dict[int, Any]:
        """Bank index -> the question written for it."""
        stage: Stage[int] = Stage(
            "questions",
            request=lambda qi, previous: s.request(specs[qi], len(previous)),
            parse=lambda qi, text: parse_question(text, specs[qi].cue_text),
            placeholder=lambda qi: _Placeholder("q" * s.calls.placeholder_chars()),
            describe=lambda qi: {"item": specs[qi].id},
            **_calls(s.calls, s.answer_format),
        )
        indexes = [q.index for q in specs]
        return dict(zip(indexes, await self._values(stage, indexes), strict=True))

    async def _answers(
        self,
        s: AnswerSettings,
        specs: list[QuestionSpec],
        questions: dict[int, Any],
        asked: list[int],
    ) -> dict[int, list[Any]]:
        """Asked question -> one answer per persona."""
        personas, limit = s.personas, s.calls.settings.max_tokens
        stage: Stage[tuple[int, int]] = Stage(
            "answers",
            request=lambda key, previous: s.request(
                questions[key[0]], personas[key[1]], len(previous)
            ),
            parse=lambda key, text: parse_answer(text, limit),
            placeholder=lambda key: _Placeholder(
                f"[{personas[key[1]].id}] " + "a" * s.calls.placeholder_chars()
            ),
            describe=lambda key: {"item": specs[key[0]].id, "persona": personas[key[1]].id},
            **_calls(s.calls, s.answer_format),
        )
        keys = [(qi, p) for qi in asked for p in range(len(personas))]
        values = iter(await self._values(stage, keys))
        return {qi: [next(values) for _ in personas] for qi in asked}

    async def _rater(
        self,
        s: RaterSettings,
        specs: list[QuestionSpec],
        questions: dict[int, Any],
        asked: list[int],
    ) -> dict[int, Any]:
        """Asked question -> persona id -> score (one call rates every persona)."""
        ids = s.ids
        stage: Stage[int] = Stage(
            "rater",
            request=lambda qi, previous: s.request(questions[qi], len(previous)),
            parse=lambda qi, text: parse_scores(text, ids, s.scale),
            placeholder=lambda qi: dict.fromkeys(ids, 0.0),
            describe=lambda qi: {"item": specs[qi].id},
            **_calls(s.calls, s.answer_format),
        )
        return dict(zip(asked, await self._values(stage, asked), strict=True))


# -- public API --------------------------------------------------------------------------------


def _namespace(llm: LLMConfig) -> str:
    return "scripted" if llm.backend == "scripted" else "openai"


def estimate(config: DatagenConfig, *, llm: LLMConfig | None = None) -> DatagenPlan:
    """Dry run: the calls, tokens and cost of every stage, and how many are cached.

    Reads the cache only (nothing is sent, no API key is needed). Stages whose inputs are
    cached get exact prompts; the others are estimated with placeholder answers of the role's
    ``expected_tokens`` (marked ``~``).

    Args:
        config: The config.
        llm: Endpoint settings (default ``config.llm``).

    Returns:
        The plan; `DatagenPlan.format` prints it.
    """
    llm = llm or config.llm
    stages = split_config(config, scripted=llm.backend == "scripted")
    prices = load_prices(llm.prices)
    cache_path = Path(llm.cache or default_cache_path()) if llm.use_cache else None
    cache = (
        ResponseCache(cache_path, create=False)
        if cache_path is not None and cache_path.exists()
        else None
    )
    sender = CacheSender(
        cache,
        _namespace(llm),
        prices,
        billable=llm.backend != "scripted",
        completion={c.role: c.settings.completion_estimate() for c in stages.calls()},
    )
    pipeline = _Pipeline(stages, sender)
    try:
        run_sync(pipeline.run())
    finally:
        if cache is not None:
            cache.close()
    estimates = [sender.estimate(s) for s in stages.names()]
    for s in estimates:
        s.exact = s.stage not in pipeline.inexact
    return DatagenPlan(
        run=stages.run,
        stages=estimates,
        currency=prices.currency,
        backend=llm.backend,
        cache=str(cache_path) if cache_path is not None else None,
        budget=llm.budget,
    )


def make_datagen_client(config: DatagenConfig, llm: LLMConfig | None = None) -> LLMClient:
    """The client a config asks for; the scripted backend gets datagen's handlers
    (`ScriptedWorld`) and ``scripted.latency``."""
    llm = llm or config.llm
    if llm.backend != "scripted":
        return make_client(llm)
    client = make_client(llm, handlers=ScriptedWorld(config).handlers())
    client.backend.latency = config.scripted.latency  # type: ignore[attr-defined]
    return client


def _sender(
    client: LLMClient, progress: bool, batch: BatchSettings | None, folder: Path | None
) -> ClientSender:
    """The stages' sender: online calls, or provider batches whose state is kept in the run
    folder's ``datagen/``."""
    if batch is None:
        return ClientSender(client, progress=progress)
    if folder is None:
        raise DatagenError("batch mode keeps its batches in the run folder: run with write=True")
    state = BatchState(folder / "datagen", client.endpoint or "")
    return BatchSender(client, state, batch, progress=progress)


def _collect(
    stages: StageSettings, client: LLMClient, sender: ClientSender, *, owned: bool
) -> tuple[_Pipeline, Collected]:
    """Run the stages through ``sender`` (``client`` closed afterwards when ``owned``)."""
    pipeline = _Pipeline(stages, sender)

    async def main() -> Collected:
        try:
            return await pipeline.run()
        finally:
            await client.backend.aclose()

    try:
        data = run_sync(main())
    finally:
        sender.close()
        if owned:
            client.close()
    return pipeline, data


def generate(
    config: DatagenConfig,
    *,
    client: LLMClient | None = None,
    llm: LLMConfig | None = None,
    output: str | Path | None = None,
    progress: bool = True,
    write: bool = True,
    batch: bool | BatchSettings = False,
) -> DatagenResult:
    """Run every stage and build the world.

    Args:
        config: The config.
        client: The client to use (default: `make_datagen_client` of ``llm``; it is
            then closed at the end). A client whose backend namespace is ``"scripted"`` gets
            scripted model names (`scripted_model_name`).
        llm: Endpoint settings when ``client`` is None (default ``config.llm``).
        output: World directory (default ``config.output``).
        progress: Show progress bars on stderr.
        write: Write the world and the ``datagen/`` files.
        batch: Send the calls not cached as provider batches (`BatchSender`), with
            ``config.batch`` (True) or these settings; their state is kept in
            ``datagen/batches.json`` of the world folder, so a re-run resumes them.

    Returns:
        The result; ``complete`` is False when calls failed (re-run to resume; with ``write``,
        ``datagen/summary.json`` marked incomplete, ``failures.jsonl`` and ``malformed.jsonl``
        are written, no world).

    Raises:
        WorldRefusedError: Every call was answered but the answers cannot make a world (too
            few valid judge picks, ``judge.min_valid``, or usable questions); with ``write``,
            ``datagen/summary.json`` says why and ``malformed.jsonl`` lists the replies.
        DatagenError: With ``write``, the world folder or one of its files cannot be written
            (checked before the first call); ``batch`` without ``write``.
        LLMConfigError: ``batch`` with a backend that is not an OpenAI-compatible endpoint, or
            a batch state file that cannot be used.
        CacheError: The cache or the call log cannot be used (checked before the first call).
    """
    started = time.perf_counter()
    owned = client is None
    if client is None:
        # the summary records the settings used (command-line flags included), not the file's
        llm = llm or config.llm
        client = make_datagen_client(config, llm)  # checks prices, call log and cache
    stages = split_config(
        config, scripted=client.namespace == "scripted", llm=llm if owned else None
    )
    folder = Path(output if output is not None else config.output) if write else None
    settings = (config.batch if batch is True else batch) or None
    try:
        if folder is not None:
            check_outputs(folder)
        sender = _sender(client, progress, settings, folder)
    except (DatagenError, LLMConfigError):
        if owned:
            client.close()
        raise
    pipeline, data = _collect(stages, client, sender, owned=owned)
    result = _result(pipeline.engine, data, client, stages, folder)
    if isinstance(sender, BatchSender):
        result.batch = {
            **dataclasses.asdict(sender.totals),
            "discount": client.prices.batch_discount,
            "settings": sender.settings.to_json(),
        }
    _finish(result, data, stages, started)
    return result


def _result(
    engine: StageEngine,
    data: Collected,
    client: LLMClient,
    stages: StageSettings,
    folder: Path | None,
) -> DatagenResult:
    """The run's result before the world is built: the stages' accounting and the endpoint."""
    return DatagenResult(
        run=stages.run,
        complete=not engine.failures,
        world=None,
        output=folder,
        stages=[engine.reports[s] for s in stages.names()],
        malformed=engine.malformed,
        failures=engine.failures,
        dropped=[data.specs[qi].id for qi in data.dropped],
        currency=client.prices.currency,
        backend=client.namespace,
        base_url=endpoint(client),
    )


def _finish(result: DatagenResult, data: Collected, stages: StageSettings, started: float) -> None:
    """Build the world from what the stages collected and write the outputs (those of an
    incomplete or refused run: summary, malformed answers, failures).

    Raises:
        WorldRefusedError: Every call was answered but the answers cannot make a world.
        DatagenError: An output cannot be written (every answer stays cached).
    """
    try:
        if result.complete:
            try:
                result.world, tables = build_world(
                    stages.world, data, stages.models(), result.backend, result
                )
            except DatagenError as exc:
                result.complete, result.refused = False, str(exc)
            else:
                if result.output is not None:
                    write_outputs(result, tables, data)
        if not result.complete and result.output is not None:
            write_incomplete(result)
        result.seconds = time.perf_counter() - started
        if result.output is not None:
            write_summary(result)
    except OSError as exc:
        raise DatagenError(
            f"cannot write {exc.filename or result.output}: {exc.strerror or exc}; every answer "
            "is cached: re-running the same command writes the world without sending calls"
        ) from None
    if result.refused is not None:
        raise WorldRefusedError(result.refused, result)


__all__ = [
    "ASK_STAGES",
    "CHUNK",
    "STAGES",
    "DatagenPlan",
    "DatagenResult",
    "StageEstimate",
    "StageReport",
    "estimate",
    "generate",
    "make_datagen_client",
]
