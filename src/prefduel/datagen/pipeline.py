"""The datagen pipeline: questions -> answers -> rater scores -> judge picks -> a stored World.

Every call goes through an `LLMClient` and its SQLite cache,
so every stage is resumable: re-running after a kill (or after failures) answers finished calls
from the cache for free and sends only the missing ones. Each reply is committed to the cache in
the event-loop step in which it arrives, so a kill loses only the replies in flight at that
moment (at most ``max_connections``, the one being committed included), which are sent again;
every other reply received is served from the cache.

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
==========  ===================================  ===========================================

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
``malformed.jsonl``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from prefduel import __version__
from prefduel.core.btl import pairs_of
from prefduel.datagen.aggregate import (
    NO_PICK,
    assemble_world,
    layout,
    pick_diagnostics,
    probabilities_and_utilities,
    rater_features,
    tally,
)
from prefduel.datagen.calls import QuestionSpec, RequestBuilder, question_bank
from prefduel.datagen.config import DatagenConfig, DatagenError
from prefduel.datagen.prompts import (
    LABELS,
    parse_answer,
    parse_pick,
    parse_question,
    parse_scores,
)
from prefduel.datagen.scripted import ScriptedWorld
from prefduel.llm.cache import ResponseCache, default_cache_path
from prefduel.llm.client import LLMClient, estimate_cost, run_sync
from prefduel.llm.config import LLMConfig, make_client
from prefduel.llm.openai_backend import public_url
from prefduel.llm.prices import PriceTable, load_prices
from prefduel.llm.request import LLMRequest, LLMResponse
from prefduel.worlds.tutorsim import JUDGE_CONFIGS
from prefduel.worlds.world import World

STAGES = ("questions", "answers", "rater", "judge")
ROLE_OF = {"questions": "question", "answers": "answer", "rater": "rater", "judge": "judge"}
#: Requests handed to the client at once (bounds memory for millions of judge calls).
CHUNK = 4096


class _Placeholder(str):
    """Stand-in text of an answer a dry run does not know yet (it is not cached)."""

    __slots__ = ()


_FAILED = object()
_MALFORMED = object()


@dataclass
class StageReport:
    """What one stage did.

    Attributes:
        stage: Stage name.
        calls: Requests answered (cache hits, new answers and failures; retries included).
        cached: Answered from the cache (free).
        sent: Answered by the backend in this run.
        failed: Calls without an answer (re-run to retry them).
        malformed: Answers that could not be parsed.
        retried: Extra requests for malformed answers (next sample index).
        unusable: Items left without a usable answer after all tries (questions dropped,
            g = 0, judge picks missing).
        prompt_tokens: Prompt tokens sent in this run.
        completion_tokens: Completion tokens received in this run.
        cost: Money spent in this run.
        earlier_cost: What this stage's answers served from the cache cost when an earlier run
            (or another run sharing the cache) received them: their stored tokens at this
            run's prices; each distinct request counted once.
        seconds: Wall time.
    """

    stage: str
    calls: int = 0
    cached: int = 0
    sent: int = 0
    failed: int = 0
    malformed: int = 0
    retried: int = 0
    unusable: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    earlier_cost: float = 0.0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict."""
        return dataclasses.asdict(self)


@dataclass
class StageEstimate:
    """A dry-run estimate of one stage.

    Attributes:
        stage: Stage name.
        calls: Requests the stage will make (retries of malformed answers not yet seen are
            not included).
        cached: Of which already in the cache (free).
        prompt_tokens: Estimated prompt tokens of the calls to send.
        completion_tokens: Estimated completion tokens of the calls to send (the role's
            ``expected_tokens``).
        cost: Estimated cost of the calls to send (0 for the scripted backend).
        exact: Whether every prompt is known (earlier stages cached); otherwise prompts are
            estimated with placeholder answers of ``expected_tokens`` tokens.
        unpriced: Models without a price (counted at 0).
    """

    stage: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    exact: bool = True
    unpriced: tuple[str, ...] = ()

    @property
    def to_send(self) -> int:
        """Calls that would be sent."""
        return self.calls - self.cached

    def to_json(self) -> dict[str, Any]:
        """The fields as a dict (``to_send`` included)."""
        return {**dataclasses.asdict(self), "to_send": self.to_send}


@dataclass
class DatagenPlan:
    """A dry run: per-stage estimates, before anything is spent."""

    config: DatagenConfig
    stages: list[StageEstimate]
    currency: str
    backend: str
    cache: str | None
    budget: float | None

    @property
    def total(self) -> StageEstimate:
        """Sum over stages."""
        out = StageEstimate("total")
        for s in self.stages:
            out.calls += s.calls
            out.cached += s.cached
            out.prompt_tokens += s.prompt_tokens
            out.completion_tokens += s.completion_tokens
            out.cost += s.cost
            out.exact = out.exact and s.exact
            out.unpriced = tuple(sorted({*out.unpriced, *s.unpriced}))
        return out

    def format(self) -> str:
        """The estimate as a text table."""
        c = self.config
        lines = [
            f"datagen dry run: {c.name} ({len(c.students)} students x {c.n_questions} questions "
            f"x {c.K} personas, {c.samples} judge samples; backend {self.backend}; cache "
            f"{self.cache or 'none'})",
            f"{'stage':10s} {'calls':>10s} {'cached':>10s} {'to send':>10s} "
            f"{'prompt tok':>12s} {'compl. tok':>12s} {'est. cost':>12s}",
        ]
        for s in [*self.stages, self.total]:
            mark = "" if s.exact else "  ~ (prompts of uncached inputs estimated)"
            lines.append(
                f"{s.stage:10s} {s.calls:>10,d} {s.cached:>10,d} {s.to_send:>10,d} "
                f"{s.prompt_tokens:>12,d} {s.completion_tokens:>12,d} "
                f"{s.cost:>8.4f} {self.currency}{mark if s.stage != 'total' else ''}"
            )
        total = self.total
        if self.backend == "scripted":
            lines.append("the scripted backend is offline and free")
        if total.unpriced:
            lines.append(
                f"no price for {list(total.unpriced)} (counted at 0): add them to a price "
                "file (--prices FILE)"
            )
        if self.budget is not None:
            if total.cost <= self.budget:
                lines.append(f"budget: {self.budget:g} {self.currency} (the estimate fits)")
            else:
                lines.append(
                    f"budget: {self.budget:g} {self.currency}: the estimate EXCEEDS it; sending "
                    "stops at the budget, and a re-run with a higher --budget resumes"
                )
        lines.append(
            "not counted: retries of malformed answers not seen yet, and the client's retries "
            "of failed attempts"
        )
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        """JSON-ready estimate."""
        return {
            "config": self.config.name,
            "backend": self.backend,
            "cache": self.cache,
            "currency": self.currency,
            "budget": self.budget,
            "stages": [s.to_json() for s in self.stages],
            "total": self.total.to_json(),
        }


@dataclass
class DatagenResult:
    """The outcome of `generate`.

    Attributes:
        config: The config.
        complete: Whether every call has an answer (a world was built).
        world: The world (None when incomplete).
        output: Where it was written (None when not written).
        stages: Per-stage reports.
        malformed: One record per malformed answer (stage, item, sample, text).
        failures: One record per failed call (stage, item, error).
        dropped: Ids of questions dropped (no usable question or answer).
        diagnostics: Judge behaviour (see `pick_diagnostics`).
        seconds: Wall time.
        currency: The price table's currency.
        backend: The backend's cache namespace (``"openai"``, ``"scripted"``, ...).
        base_url: The endpoint requests went to (`public_url`: no credentials,
            query or fragment); None for a backend without one (scripted).
    """

    config: DatagenConfig
    complete: bool
    world: World | None
    output: Path | None
    stages: list[StageReport]
    malformed: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    currency: str = "USD"
    backend: str = ""
    base_url: str | None = None

    def stage(self, name: str) -> StageReport:
        """The report of stage ``name``."""
        return next(s for s in self.stages if s.stage == name)

    def spend(self) -> dict[str, Any]:
        """Money spent: in this run, in earlier runs, and over all runs (``cumulative``).

        ``this_run`` is what this run's new answers cost. ``earlier_runs`` prices, from the
        tokens stored in the cache, every answer this run was served from the cache (each
        distinct request once): what the runs before it (stopped by the budget, failed,
        interrupted or killed) paid for the answers this world is built from. A complete run
        asks every request of the world, so ``cumulative`` covers every answer received over
        all runs. Not included: replies that were in flight at a kill (never received, so
        their tokens are unknown; they were sent again) and failed attempts.
        """
        this_run = sum(s.cost for s in self.stages)
        earlier = sum(s.earlier_cost for s in self.stages)
        return {
            "currency": self.currency,
            "this_run": this_run,
            "earlier_runs": earlier,
            "cumulative": this_run + earlier,
        }

    def summary(self) -> str:
        """The final summary as text."""
        c = self.config
        lines = [
            f"datagen {c.name}: {len(c.students)} students x {c.n_questions} questions x "
            f"{c.K} personas, {c.samples} judge samples per condition",
            f"{'stage':10s} {'calls':>9s} {'cached':>9s} {'sent':>9s} {'failed':>7s} "
            f"{'malformed':>9s} {'retries':>7s} {'tokens':>11s} {'cost':>10s} {'time':>8s} "
            f"{'calls/s':>8s}",
        ]
        total = StageReport("total")
        for s in self.stages:
            for f in dataclasses.fields(StageReport):
                if f.name != "stage":
                    setattr(total, f.name, getattr(total, f.name) + getattr(s, f.name))
        for s in [*self.stages, total]:
            rate = s.calls / s.seconds if s.seconds > 0 else 0.0
            lines.append(
                f"{s.stage:10s} {s.calls:>9,d} {s.cached:>9,d} {s.sent:>9,d} {s.failed:>7,d} "
                f"{s.malformed:>9,d} {s.retried:>7,d} "
                f"{s.prompt_tokens + s.completion_tokens:>11,d} {s.cost:>10.4f} "
                f"{s.seconds:>6.1f} s {rate:>8,.0f}"
            )
        d = self.diagnostics
        if d.get("valid") is not None:
            lines.append(
                f"judge picks: {d['valid']:,d} valid, {d['missing']:,d} missing (malformed); "
                f"first-shown answer won {100 * d['first_shown_won']:.1f}%, label A chosen "
                f"{100 * d['label_a_chosen']:.1f}%"
            )
        if self.malformed:
            by_stage = Counter(m["stage"] for m in self.malformed)
            lines.append(
                "malformed answers: "
                + ", ".join(f"{n} {stage}" for stage, n in by_stage.items())
                + (" (listed in datagen/malformed.jsonl)" if self.output else "")
            )
        spend = self.spend()
        lines.append(
            f"spend: {spend['this_run']:.4f} {self.currency} in this run, "
            f"{spend['cumulative']:.4f} {self.currency} over all runs (answers served from the "
            "cache priced from their stored tokens)"
        )
        rater = self.stage("rater")
        if rater.unusable:
            lines.append(f"rater: {rater.unusable} question(s) without usable scores (g = 0)")
        if self.dropped:
            lines.append(f"dropped questions (no usable text or answer): {self.dropped}")
        if not self.complete:
            reasons = Counter(f["error"] for f in self.failures)
            lines.append(
                f"INCOMPLETE: {len(self.failures)} call(s) failed, no world written; re-run "
                "the same command to resume (answered calls are cached)"
            )
            for reason, n in reasons.most_common(3):
                lines.append(f"  {n} x {reason}")
        elif self.world is not None:
            w = self.world
            where = str(self.output) if self.output is not None else "(not written)"
            lines.append(
                f"world {where}: N={w.N} arrivals x S={w.S} rounds x K={w.K} personas, "
                f"d={w.d}; {self.seconds:.1f} s"
            )
            if self.output is not None:
                lines.append(f"run it: prefduel run --worlds {where}")
        return "\n".join(lines) + "\n"


# -- senders: live (the client) and dry (the cache only) -------------------------------------


class _LiveSender:
    """Sends through the client; keeps stage reports and a progress bar."""

    dry = False

    def __init__(self, client: LLMClient, progress: bool):
        self.client = client
        self.reports: dict[str, StageReport] = {s: StageReport(s) for s in STAGES}
        self.progress = progress
        self.bar: tqdm | None = None
        self._started = 0.0
        self._billable = bool(getattr(client.backend, "billable", True))
        # 64-bit prefixes of the keys whose answer is already priced in this run (a request
        # asked twice is paid once: the second is a hit, or shares the first one's answer)
        self._priced: set[int] = set()

    def _earlier_cost(self, response: LLMResponse) -> float:
        """The cost of a cache hit when it was received (0 if already priced in this run)."""
        mark = int(response.key[:16], 16)
        if mark in self._priced:
            return 0.0
        self._priced.add(mark)
        if not self._billable:
            return 0.0
        usage = response.usage
        return self.client.prices.cost(
            response.request.model, usage.prompt_tokens, usage.completion_tokens
        )

    def start(self, stage: str, total: int) -> None:
        self._started = time.perf_counter()
        self.bar = tqdm(
            total=total,
            desc=f"{stage:9s}",
            unit="call",
            file=sys.stderr,
            disable=not self.progress,
            dynamic_ncols=True,
            smoothing=0.05,
            mininterval=0.2,
        )

    def grow(self, n: int) -> None:
        if self.bar is not None and n:
            self.bar.total = (self.bar.total or 0) + n
            self.bar.refresh()

    def finish(self, stage: str) -> None:
        self.reports[stage].seconds += time.perf_counter() - self._started
        if self.bar is not None:
            self._postfix(self.reports[stage])
            self.bar.refresh()
            self.bar.close()
            self.bar = None

    def _postfix(self, report: StageReport) -> None:
        if self.bar is None:
            return
        text = (
            f"hits={report.cached:,d} tok={report.prompt_tokens + report.completion_tokens:,d} "
            f"cost={report.cost:.4f}"
        )
        if report.failed:
            text += f" failed={report.failed:,d}"
        if report.malformed:
            text += f" malformed={report.malformed:,d}"
        self.bar.set_postfix_str(text, refresh=False)

    async def __call__(self, stage: str, requests: list[LLMRequest]) -> list[LLMResponse | None]:
        report = self.reports[stage]

        def on_result(response: LLMResponse) -> None:
            report.calls += 1
            if response.cached:
                report.cached += 1
                report.earlier_cost += self._earlier_cost(response)
            elif response.ok:
                self._priced.add(int(response.key[:16], 16))
                report.sent += 1
                report.prompt_tokens += response.usage.prompt_tokens
                report.completion_tokens += response.usage.completion_tokens
                report.cost += response.cost
            else:
                report.failed += 1
            if self.bar is not None:
                self._postfix(report)  # before update: the refresh it may trigger shows it
                self.bar.update(1)

        return list(await self.client.complete_many(requests, on_result=on_result))


class _DrySender:
    """Answers from the cache only; estimates what the rest would cost."""

    dry = True

    def __init__(
        self,
        cache: ResponseCache | None,
        namespace: str,
        prices: PriceTable,
        billable: bool,
        completion: dict[str, int],
    ) -> None:
        self.cache = cache
        self.namespace = namespace
        self.prices = prices
        self.billable = billable
        self.completion = completion
        self.estimates = {s: StageEstimate(s) for s in STAGES}

    def start(self, stage: str, total: int) -> None:
        pass

    def grow(self, n: int) -> None:
        pass

    def finish(self, stage: str) -> None:
        pass

    async def __call__(self, stage: str, requests: list[LLMRequest]) -> list[LLMResponse | None]:
        est = self.estimates[stage]
        out: list[LLMResponse | None] = []
        uncached = []
        for request in requests:
            hit = self.cache.get(request, self.namespace) if self.cache is not None else None
            out.append(hit)
            if hit is None:
                uncached.append(request)
        estimate = estimate_cost(
            uncached,
            prices=self.prices,
            completion_tokens=lambda r: self.completion[r.role],
        )
        est.calls += len(requests)
        est.cached += len(requests) - len(uncached)
        est.prompt_tokens += estimate.prompt_tokens
        est.completion_tokens += estimate.completion_tokens
        if self.billable:
            est.cost += estimate.cost
            est.unpriced = tuple(sorted({*est.unpriced, *estimate.unpriced_models}))
        return out


# -- the pipeline ------------------------------------------------------------------------------


class _Pipeline:
    def __init__(self, config: DatagenConfig, sender: _LiveSender | _DrySender, *, scripted: bool):
        self.config = config
        self.sender = sender
        self.builder = RequestBuilder(config, scripted=scripted)
        self.reports = {s: StageReport(s) for s in STAGES}
        if isinstance(sender, _LiveSender):
            sender.reports = self.reports
        self.malformed: list[dict[str, Any]] = []
        self.failures: list[dict[str, Any]] = []
        self.inexact: set[str] = set()

    def _chars(self, role: str) -> int:
        return 4 * self.config.models[role].completion_estimate()

    async def _batch(
        self,
        stage: str,
        jobs: Sequence[tuple[Hashable, int]],
        make: Callable[[Any, int], LLMRequest],
        parse: Callable[[Any, str], Any],
        placeholder: Callable[[Any], Any],
        *,
        stride: int = 1,
        describe: Callable[[Any], dict[str, Any]] = lambda key: {"item": str(key)},
    ) -> dict[tuple[Hashable, int], Any]:
        """Run ``jobs`` (item key, sample) with retries of malformed answers.

        Returns:
            ``(key, sample) -> value`` where value is the parsed answer, a placeholder (dry
            run, not cached), ``_FAILED`` or ``_MALFORMED``.
        """
        tries = self.config.retries[ROLE_OF[stage]]
        report = self.reports[stage]
        results: dict[tuple[Hashable, int], Any] = {}
        pending = list(jobs)
        for attempt in range(tries + 1):
            if not pending:
                break
            if attempt:
                report.retried += len(pending)
                self.sender.grow(len(pending))
            again = []
            for start in range(0, len(pending), CHUNK):
                chunk = pending[start : start + CHUNK]
                requests = [make(key, s + attempt * stride) for key, s in chunk]
                responses = await self.sender(stage, requests)
                for (key, s), request, response in zip(chunk, requests, responses, strict=True):
                    if response is None:
                        results[(key, s)] = placeholder(key)
                        continue
                    if not response.ok:
                        results[(key, s)] = _FAILED
                        self.failures.append(
                            {
                                "stage": stage,
                                **describe(key),
                                "sample": request.sample,
                                "error": response.error or "failed",
                            }
                        )
                        continue
                    value = parse(key, response.text or "")
                    if value is not None:
                        results[(key, s)] = value
                        continue
                    report.malformed += 1
                    self.malformed.append(
                        {
                            "stage": stage,
                            **describe(key),
                            "sample": request.sample,
                            "try": attempt,
                            "text": (response.text or "")[:500],
                        }
                    )
                    if attempt < tries:
                        again.append((key, s))
                    else:
                        results[(key, s)] = _MALFORMED
                        report.unusable += 1
            pending = again
        return results

    async def run(self) -> dict[str, Any]:
        cfg = self.config
        b = self.builder
        specs = question_bank(cfg)
        k = cfg.K

        # questions
        self.sender.start("questions", len(specs))
        res = await self._batch(
            "questions",
            [(q.index, 0) for q in specs],
            lambda qi, s: b.question(specs[qi], s),
            lambda qi, text: parse_question(text, specs[qi].cue_text),
            lambda qi: _Placeholder("q" * self._chars("question")),
            describe=lambda qi: {"item": specs[qi].id},
        )
        self.sender.finish("questions")
        questions: dict[int, Any] = {q.index: res[(q.index, 0)] for q in specs}
        asked = [qi for qi, text in questions.items() if isinstance(text, str)]
        if any(isinstance(questions[qi], _Placeholder) for qi in asked):
            self.inexact.update(("answers", "rater", "judge"))

        # answers
        self.sender.start("answers", len(asked) * k)
        res = await self._batch(
            "answers",
            [((qi, p), 0) for qi in asked for p in range(k)],
            lambda key, s: b.answer(questions[key[0]], cfg.personas[key[1]], s),
            lambda key, text: parse_answer(text),
            lambda key: _Placeholder(f"[{cfg.personas[key[1]].id}] " + "a" * self._chars("answer")),
            describe=lambda key: {"item": specs[key[0]].id, "persona": cfg.personas[key[1]].id},
        )
        self.sender.finish("answers")
        answers = {qi: [res[((qi, p), 0)] for p in range(k)] for qi in asked}
        usable = [qi for qi in asked if all(isinstance(a, str) for a in answers[qi])]
        dropped = [
            qi
            for qi in questions
            if questions[qi] is _MALFORMED
            or (qi in answers and _MALFORMED in answers[qi] and _FAILED not in answers[qi])
        ]
        if any(isinstance(a, _Placeholder) for qi in usable for a in answers[qi]):
            self.inexact.add("judge")

        # rater
        ids = [p.id for p in cfg.personas]
        self.sender.start("rater", len(asked))
        res = await self._batch(
            "rater",
            [(qi, 0) for qi in asked],
            lambda qi, s: b.rater(questions[qi], s),
            lambda qi, text: parse_scores(text, ids, cfg.rater_scale),
            lambda qi: dict.fromkeys(ids, 0.0),
            describe=lambda qi: {"item": specs[qi].id},
        )
        self.sender.finish("rater")
        scores = {qi: res[(qi, 0)] for qi in asked}

        # judge
        pairs = pairs_of(k)
        n_pairs, n_cfg, samples = len(pairs), len(JUDGE_CONFIGS), cfg.samples
        picks = np.full(
            (len(cfg.students), len(specs), n_pairs, n_cfg, samples), NO_PICK, dtype=np.int8
        )
        cells = [(i, qi) for i in range(len(cfg.students)) for qi in usable]
        per_cell = n_pairs * n_cfg * samples
        self.sender.start("judge", len(cells) * per_cell)

        def make(key: tuple[int, int, int, int], sample: int) -> LLMRequest:
            i, qi, j, c = key
            a, bb = int(pairs[j, 0]), int(pairs[j, 1])
            a_first, a_label_a = JUDGE_CONFIGS[c]
            first, second = (a, bb) if a_first else (bb, a)
            first_label = LABELS[0] if a_first == a_label_a else LABELS[1]
            return b.judge(
                cfg.students[i],
                questions[qi],
                answers[qi][first],
                answers[qi][second],
                first_label,
                sample,
            )

        def parse(key: tuple[int, int, int, int], text: str) -> int | None:
            pick = parse_pick(text)
            if pick is None:
                return None
            a_label = LABELS[0] if JUDGE_CONFIGS[key[3]][1] else LABELS[1]
            return 1 if pick == a_label else 0

        def describe(key: tuple[int, int, int, int]) -> dict[str, Any]:
            i, qi, j, c = key
            a_first, a_label_a = JUDGE_CONFIGS[c]
            return {
                "item": specs[qi].id,
                "student": cfg.students[i].id,
                "pair": [cfg.personas[int(pairs[j, 0])].id, cfg.personas[int(pairs[j, 1])].id],
                "a_first": a_first,
                "a_label": LABELS[0] if a_label_a else LABELS[1],
            }

        group = max(1, CHUNK // per_cell)
        for start in range(0, len(cells), group):
            jobs = [
                ((i, qi, j, c), s)
                for i, qi in cells[start : start + group]
                for j in range(n_pairs)
                for c in range(n_cfg)
                for s in range(samples)
            ]
            res = await self._batch(
                "judge", jobs, make, parse, lambda key: None, stride=samples, describe=describe
            )
            for ((i, qi, j, c), s), value in res.items():
                if isinstance(value, int):
                    picks[i, qi, j, c, s] = value
        self.sender.finish("judge")
        return {
            "specs": specs,
            "questions": questions,
            "answers": answers,
            "usable": usable,
            "dropped": dropped,
            "scores": scores,
            "picks": picks,
        }


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
    prices = load_prices(llm.prices)
    cache_path = Path(llm.cache or default_cache_path()) if llm.use_cache else None
    cache = (
        ResponseCache(cache_path, create=False)
        if cache_path is not None and cache_path.exists()
        else None
    )
    completion = {role: m.completion_estimate() for role, m in config.models.items()}
    sender = _DrySender(
        cache, _namespace(llm), prices, billable=llm.backend != "scripted", completion=completion
    )
    pipeline = _Pipeline(config, sender, scripted=llm.backend == "scripted")
    try:
        run_sync(pipeline.run())
    finally:
        if cache is not None:
            cache.close()
    stages = [sender.estimates[s] for s in STAGES]
    for s in stages:
        s.exact = s.stage not in pipeline.inexact
    return DatagenPlan(
        config=config,
        stages=stages,
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


def generate(
    config: DatagenConfig,
    *,
    client: LLMClient | None = None,
    llm: LLMConfig | None = None,
    output: str | Path | None = None,
    progress: bool = True,
    write: bool = True,
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

    Returns:
        The result; ``complete`` is False when calls failed (re-run to resume).
    """
    started = time.perf_counter()
    owned = client is None
    if client is None:
        llm = llm or config.llm
        client = make_datagen_client(config, llm)
        # the summary records the settings used (command-line flags included), not the file's
        config = dataclasses.replace(config, llm=llm)
    sender = _LiveSender(client, progress)
    pipeline = _Pipeline(config, sender, scripted=client.namespace == "scripted")

    async def main() -> dict[str, Any]:
        try:
            return await pipeline.run()
        finally:
            await client.backend.aclose()

    try:
        data = run_sync(main())
    finally:
        if sender.bar is not None:
            sender.bar.close()
        if owned:
            client.close()
    stages = [pipeline.reports[s] for s in STAGES]
    result = DatagenResult(
        config=config,
        complete=not pipeline.failures,
        world=None,
        output=None,
        stages=stages,
        malformed=pipeline.malformed,
        failures=pipeline.failures,
        currency=client.prices.currency,
        backend=client.namespace,
        base_url=_endpoint(client),
    )
    specs: list[QuestionSpec] = data["specs"]
    result.dropped = [specs[qi].id for qi in data["dropped"]]
    if result.complete:
        result.world, tables = _build(config, data, client, result)
        if write:
            result.output = Path(output if output is not None else config.output)
            _write(result, tables, data)
    result.seconds = time.perf_counter() - started
    if result.output is not None:
        _write_summary(result)
    return result


def _endpoint(client: LLMClient) -> str | None:
    """The base URL the client's backend sends to (`public_url`), or None."""
    backend = client.backend
    url = getattr(backend, "endpoint", None)
    if url is None:
        url = getattr(backend, "base_url", None)
    return public_url(url) if isinstance(url, str) and url else None


def _build(
    config: DatagenConfig, data: dict[str, Any], client: LLMClient, result: DatagenResult
) -> tuple[World, dict[str, np.ndarray]]:
    usable: list[int] = data["usable"]
    specs: list[QuestionSpec] = data["specs"]
    if config.rounds > len(usable):
        raise DatagenError(
            f"only {len(usable)} usable questions for {config.rounds} rounds per arrival "
            f"(dropped: {result.dropped}); raise the retries or lower world.rounds"
        )
    picks = data["picks"][:, usable]
    prob, utility = probabilities_and_utilities(
        picks, config.K, ridge=config.bt_ridge, scale=config.bt_scale
    )
    ids = [p.id for p in config.personas]
    scores = np.array(
        [
            [data["scores"][qi][pid] for pid in ids]
            if isinstance(data["scores"][qi], dict)
            else [np.nan] * len(ids)
            for qi in usable
        ]
    ).reshape(len(usable), len(ids))
    g = rater_features(scores)
    student_index, question_index, uniforms = layout(
        len(config.students), len(usable), config.layout.arrivals, config.rounds, config.seed
    )
    result.diagnostics = pick_diagnostics(picks)
    questions = []
    for qi, row in zip(usable, scores, strict=True):
        entry = {**specs[qi].to_json(), "text": data["questions"][qi]}
        entry["rater"] = None if np.isnan(row).any() else dict(zip(ids, row.tolist(), strict=True))
        questions.append(entry)
    students = [
        {
            "id": s.id,
            "profile": s.id,
            "name": s.name,
            "description": s.description,
            "quirks": list(s.quirks),
        }
        for s in config.students
    ]
    personas = [{"id": p.id, "name": p.name, "prompt": p.prompt} for p in config.personas]
    builder_models = RequestBuilder(config, scripted=client.namespace == "scripted").models
    info = {
        "generator": "datagen",
        "config": config.name,
        "source": config.source,
        "backend": client.namespace,
        "models": builder_models,
        "samples": config.samples,
        "bt": {"ridge": config.bt_ridge, "scale": config.bt_scale},
        "layout": (
            "students assigned in a seeded balanced random order; each arrival gets "
            f"{config.rounds} distinct questions drawn uniformly from {len(usable)}"
        ),
        "dropped_questions": result.dropped,
        "rater_unusable": int(np.isnan(scores).any(axis=1).sum()),
        "judge": result.diagnostics,
        "version": __version__,
    }
    world = assemble_world(
        name=config.name,
        seed=config.seed,
        prob=prob,
        utility=utility,
        g=g,
        student_index=student_index,
        question_index=question_index,
        uniforms=uniforms,
        students=students,
        questions=questions,
        personas=personas,
        info=info,
    )
    wins, total = tally(picks)
    tables = {
        "P": prob,
        "U": utility,
        "wins": wins,
        "total": total,
        "scores": scores,
        "g": g,
        "picks": picks,
    }
    return world, tables


def _write(result: DatagenResult, tables: dict[str, np.ndarray], data: dict[str, Any]) -> None:
    assert result.world is not None and result.output is not None
    config = result.config
    out = result.output
    result.world.save(out)
    extra = out / "datagen"
    extra.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(extra / "tables.npz", **tables)
    usable: list[int] = data["usable"]
    with open(extra / "questions.jsonl", "w", encoding="utf-8") as handle:
        for entry, qi in zip(result.world.questions, usable, strict=True):
            row = {
                **entry,
                "answers": dict(
                    zip([p.id for p in config.personas], data["answers"][qi], strict=True)
                ),
            }
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    pairs = pairs_of(config.K)
    picks = tables["picks"]
    with open(extra / "battles.jsonl", "w", encoding="utf-8") as handle:
        for i, q, j, c, s in zip(*np.nonzero(picks >= 0), strict=True):
            a, b = int(pairs[j, 0]), int(pairs[j, 1])
            a_first, a_label_a = JUDGE_CONFIGS[c]
            first, second = (a, b) if a_first else (b, a)
            a_won = picks[i, q, j, c, s] == 1
            first_won = a_won == a_first
            first_label = LABELS[0] if a_first == a_label_a else LABELS[1]
            row = {
                "model_a": config.personas[first].id,
                "model_b": config.personas[second].id,
                "winner": "model_a" if first_won else "model_b",
                "judge": config.students[int(i)].id,
                "question_id": result.world.questions[int(q)]["id"],
                "label_a": first_label,
                "sample": int(s),
            }
            handle.write(json.dumps(row) + "\n")
    with open(extra / "malformed.jsonl", "w", encoding="utf-8") as handle:
        for record in result.malformed:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _write_summary(result: DatagenResult) -> None:
    assert result.output is not None
    extra = result.output / "datagen"
    extra.mkdir(parents=True, exist_ok=True)
    summary = {
        "config": result.config.to_json(),
        "complete": result.complete,
        "backend": result.backend,
        "base_url": result.base_url,
        "spend": result.spend(),
        "stages": [s.to_json() for s in result.stages],
        "currency": result.currency,
        "malformed": dict(Counter(m["stage"] for m in result.malformed)),
        "dropped_questions": result.dropped,
        "diagnostics": result.diagnostics,
        "seconds": round(result.seconds, 3),
        "version": __version__,
    }
    (extra / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


__all__ = [
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
