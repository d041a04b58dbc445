"""What datagen reports: the dry-run plan (`DatagenPlan`) and a run's result (`DatagenResult`).

Per-stage accounting (`StageReport`, `StageEstimate`) comes from the stage engine
(`prefduel.llm.stages`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefduel.datagen.settings import RunInfo
from prefduel.llm.errors import endpoint_problem
from prefduel.llm.stages import StageEstimate, StageReport
from prefduel.worlds.world import World


def format_rate(calls: int, seconds: float) -> str:
    """Calls per second with the precision the rate needs: ``10,000``, ``2.5``, ``0.12``,
    ``0.001`` (a slow endpoint is not shown as 0); ``-`` without calls or time."""
    if calls <= 0 or seconds <= 0:
        return "-"
    rate = calls / seconds
    if rate >= 100:
        return f"{rate:,.0f}"
    if rate >= 1:
        return f"{rate:.1f}".rstrip("0").rstrip(".") if rate < 10 else f"{rate:.0f}"
    return f"{rate:.2g}" if rate >= 0.001 else f"{rate:.1e}"


@dataclass
class DatagenPlan:
    """A dry run: per-stage estimates, before anything is spent.

    Attributes:
        run: The run's name and sizes.
        stages: Per-stage estimates.
        currency: The price table's currency.
        backend: The backend (``openai``, ``scripted``).
        cache: The cache file read (None: no cache).
        budget: The spending limit (None: none).
    """

    run: RunInfo
    stages: list[StageEstimate]
    currency: str
    backend: str
    cache: str | None
    budget: float | None

    @property
    def total(self) -> StageEstimate:
        """Sum over stages."""
        return StageEstimate.total(self.stages)

    def format(self) -> str:
        """The estimate as a text table."""
        r = self.run
        lines = [
            f"datagen dry run: {r.name} ({r.students} students x {r.questions} questions "
            f"x {r.personas} personas, {r.samples} judge samples; backend {self.backend}; cache "
            f"{self.cache or 'none'})",
            f"{'stage':10s} {'calls':>10s} {'cached':>10s} {'to send':>10s} "
            f"{'prompt tok':>12s} {'compl. tok':>12s} {'est. cost':>12s} {'batch cost':>12s}",
        ]
        for s in [*self.stages, self.total]:
            mark = "" if s.exact else "  ~ (prompts of uncached inputs estimated)"
            lines.append(
                f"{s.stage:10s} {s.calls:>10,d} {s.cached:>10,d} {s.to_send:>10,d} "
                f"{s.prompt_tokens:>12,d} {s.completion_tokens:>12,d} "
                f"{s.cost:>8.4f} {self.currency} {s.batch_cost:>8.4f} {self.currency}"
                f"{mark if s.stage != 'total' else ''}"
            )
        return "\n".join(lines + self._notes()) + "\n"

    def _notes(self) -> list[str]:
        """The lines under the table: free backend, unpriced models, budget, what is left out."""
        total = self.total
        lines = []
        if self.backend == "scripted":
            lines.append("the scripted backend is offline and free")
        else:
            lines.append(
                "est. cost: online calls; batch cost: the same calls as provider batches "
                "(--batch: the price file's batch_discount off, results within 24 h)"
            )
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
        return lines

    def to_json(self) -> dict[str, Any]:
        """JSON-ready estimate."""
        return {
            "config": self.run.name,
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
        run: The run's name, sizes and the settings its summary records.
        complete: Whether every call has an answer and a world was built (False when calls
            failed, or when the answers were `refused`).
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
        refused: Why no world was built although every call was answered (too few valid
            judge picks or usable questions); None otherwise.
        batch: What batch mode did (``--batch``: batches started and resumed, lines sent
            again online or in new batches, the state file, the discount and the settings);
            None for an online run.
    """

    run: RunInfo
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
    refused: str | None = None
    batch: dict[str, Any] | None = None

    def stage(self, name: str) -> StageReport:
        """The report of stage ``name``."""
        return next(s for s in self.stages if s.stage == name)

    @property
    def endpoint_error(self) -> str | None:
        """Why the calls failed when re-running cannot help (a refused key, a wrong URL or
        port: `prefduel.llm.errors.endpoint_problem`); None when the run is complete or its
        failures are transient (re-run to resume)."""
        if self.complete:
            return None
        return endpoint_problem(self.failures, answered=sum(s.sent for s in self.stages))

    def spend(self) -> dict[str, Any]:
        """Money spent: in this run, in earlier runs, and over all runs (``cumulative``).

        ``this_run`` is what this run's new answers cost. ``earlier_runs`` prices, from the
        tokens stored in the cache, every answer this run was served from the cache (each
        distinct request once): what the runs before it (stopped by the budget, failed,
        interrupted or killed) paid for the answers this world is built from. A complete run
        asks every request of the world, so ``cumulative`` covers every answer received over
        all runs. Not included: replies that were in flight at a kill (never received, so
        their tokens are unknown; they were sent again) and failed attempts. ``this_run`` is
        split into ``online`` calls and provider ``batch`` es (at the batch price).
        """
        this_run = sum(s.cost for s in self.stages)
        batch = sum(s.batch_cost for s in self.stages)
        earlier = sum(s.earlier_cost for s in self.stages)
        return {
            "currency": self.currency,
            "this_run": this_run,
            "online": this_run - batch,
            "batch": batch,
            "earlier_runs": earlier,
            "cumulative": this_run + earlier,
        }

    def summary(self) -> str:
        """The final summary as text."""
        return "\n".join(self._table() + self._notes() + self._ending()) + "\n"

    def _table(self) -> list[str]:
        """The title and the per-stage table (with a total row)."""
        r = self.run
        lines = [
            f"datagen {r.name}: {r.students} students x {r.questions} questions x "
            f"{r.personas} personas, {r.samples} judge samples per condition",
            f"{'stage':10s} {'calls':>9s} {'cached':>9s} {'sent':>9s} {'failed':>7s} "
            f"{'malformed':>9s} {'retries':>7s} {'tokens':>11s} {'cost':>10s} {'time':>8s} "
            f"{'calls/s':>8s}",
        ]
        for s in [*self.stages, StageReport.total(self.stages)]:
            lines.append(
                f"{s.stage:10s} {s.calls:>9,d} {s.cached:>9,d} {s.sent:>9,d} {s.failed:>7,d} "
                f"{s.malformed:>9,d} {s.retried:>7,d} "
                f"{s.prompt_tokens + s.completion_tokens:>11,d} {s.cost:>10.4f} "
                f"{s.seconds:>6.1f} s {format_rate(s.calls, s.seconds):>8s}"
            )
        return lines

    def _notes(self) -> list[str]:
        """Judge diagnostics, malformed answers, spend, unusable rater scores, dropped
        questions."""
        lines = []
        d = self.diagnostics
        if d.get("valid") is not None:
            shares = (
                f"first-shown answer won {100 * d['first_shown_won']:.1f}%, label A chosen "
                f"{100 * d['label_a_chosen']:.1f}%"
            )
            if d.get("from_logprobs") and not d["valid"] and not d["missing"]:
                # every configuration measured by logprobs: no picks were sampled
                lines.append(f"judge: no sampled picks; by the logprob probabilities, {shares}")
            else:
                lines.append(
                    f"judge picks: {d['valid']:,d} valid, {d['missing']:,d} missing "
                    f"(malformed); {shares}"
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
        lines += self._batch_notes()
        lines += self._structured_notes()
        rater = self.stage("rater")
        if rater.unusable:
            lines.append(f"rater: {rater.unusable} question(s) without usable scores (g = 0)")
        if self.dropped:
            lines.append(f"dropped questions (no usable text or answer): {self.dropped}")
        return lines

    def _batch_notes(self) -> list[str]:
        """What was spent in each mode, and what batch mode did (a batch run only)."""
        if self.batch is None:
            return []
        total = StageReport.total(self.stages)
        b, c = self.batch, self.currency
        online = total.sent - total.batched
        return [
            f"spent by mode: {total.batch_cost:.4f} {c} in provider batches ({total.batched:,d} "
            f"answers, {100 * (1 - b['discount']):g}% of the online price), "
            f"{total.cost - total.batch_cost:.4f} {c} online ({online:,d} answers)",
            f"batches: {b['started']} started, {b['resumed']} resumed from {b['state']}; "
            f"{total.batch_failed:,d} failed and {total.batch_expired:,d} expired line(s), sent "
            f"again: {b['retried_online']:,d} online, {b['retried_batch']:,d} in new batches",
        ]

    def _structured_notes(self) -> list[str]:
        """Which path answered the structured calls, and the judge's logprob configurations."""
        lines = []
        for s in self.stages:
            if s.structured or s.structure_ignored or s.structure_rejected:
                lines.append(
                    f"{s.stage}: structured output: {s.structured:,d} answer(s) in the schema, "
                    f"{s.structure_ignored:,d} in free text (schema ignored), "
                    f"{s.structure_rejected:,d} refused (asked again in the next form: "
                    "json_schema, json_object, none)"
                )
        d = self.diagnostics
        if "from_logprobs" in d:
            lines.append(
                f"judge: {d['from_logprobs']:,d} configuration(s) measured by logprobs, "
                f"{d.get('sampled_without_logprobs', 0):,d} sampled instead (no logprobs in "
                "the reply)"
            )
        return lines

    def _ending(self) -> list[str]:
        """INCOMPLETE (or ENDPOINT ERROR) with the commonest failures, or where the world
        went."""
        lines = []
        if self.refused is not None:
            lines.append(f"NO WORLD: {self.refused.split(';')[0]}; answered calls are cached")
            return lines
        if not self.complete:
            reasons = Counter(f["error"] for f in self.failures)
            written = (
                f" ({self.output}/datagen/summary.json, failures.jsonl, malformed.jsonl)"
                if self.output is not None
                else ""
            )
            problem = self.endpoint_error
            if problem is not None:
                lines.append(
                    f"ENDPOINT ERROR: {len(self.failures)} call(s) failed and re-running as is "
                    f"cannot fix it; no world written{written}. Fix the endpoint settings "
                    "(--base-url, --api-key-env, the server), then re-run: answered calls are "
                    f"cached.\n  {problem}"
                )
                return lines
            lines.append(
                f"INCOMPLETE: {len(self.failures)} call(s) failed, no world written{written}; "
                "re-run the same command to resume (answered calls are cached)"
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
        return lines


__all__ = ["DatagenPlan", "DatagenResult", "format_rate"]
