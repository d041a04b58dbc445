"""Build the report: read and check rows, compute, draw, write ``DIR/report.html``."""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.util
import platform
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefduel import __version__
from prefduel.core.errors import PrefduelError, SpecError
from prefduel.core.outputs import output_dir
from prefduel.pages import play_widget
from prefduel.report.ask_figures import ask_figure
from prefduel.report.ask_section import AskReport, ask_figure_keys, compute_asks
from prefduel.report.compute import StudentsFn, WorldReport, compute_report
from prefduel.report.data import ReportInput, ReportWarning, canonical_policy, load_input
from prefduel.report.figures import (
    SavedFigure,
    forest_figure,
    heatmap_figure,
    learning_figure,
    missing_matplotlib,
    policy_colors,
    save_figure,
    style,
)
from prefduel.report.html import Page, render, seed_text, settings_value
from prefduel.report.labels import report_labels, slug
from prefduel.worlds.spec import get_world

REPORT_NAME = "report.html"
FIGURE_DIR = "figures"


@dataclass
class ReportResult:
    """What `build_report` wrote.

    Attributes:
        html: Path of ``report.html``.
        figures: Every PNG and SVG written.
        warnings: Every warning and note shown in the report (each also issued as a
            `ReportWarning`).
        timings: Seconds spent per stage (read, compute, figures, html, total).
        worlds: The computed numbers, one entry per world.
        labels: ``{policy spec: label}`` the page and the figures show (distinct labels; the
            specs stay the keys of ``worlds``).
        figures_skipped: Why no figure was drawn although figures were asked for (matplotlib
            is not installed; issued once as a `ReportWarning`), or None.
    """

    html: Path
    figures: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    worlds: list[WorldReport] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    figures_skipped: str | None = None


def _versions() -> list[tuple[str, str]]:
    out = [("prefduel (installed)", __version__), ("Python", platform.python_version())]
    for name in ("numpy", "scipy", "matplotlib"):
        try:
            module = importlib.import_module(name)
            out.append((name, str(getattr(module, "__version__", "?"))))
        except ImportError:
            out.append((name, "not installed"))
    out.append(("platform", platform.platform()))
    return out


def _unique_stems(worlds: Sequence[str]) -> dict[str, str]:
    stems: dict[str, str] = {}
    used: set[str] = set()
    for world in worlds:
        stem, k = slug(world), 2
        while stem in used:
            stem, k = f"{slug(world)}-{k}", k + 1
        used.add(stem)
        stems[world] = stem
    return stems


def _figures(
    reports: list[WorldReport],
    colors: dict[str, str],
    labels: dict[str, str],
    run: _Run,
    out: Path,
    asks: AskReport | None = None,
) -> dict[str, SavedFigure]:
    """Draw and save every figure; keys ``learning:<world>``, ``forest``, ``profiles:<world>``
    and ``asks:<world>`` (a world with ask tracks)."""
    competitor = run.competitor
    figures: dict[str, SavedFigure] = {}
    ask_worlds = ask_figure_keys(asks)
    stems = _unique_stems(list(dict.fromkeys([r.world for r in reports] + list(ask_worlds))))
    fig_dir = out / FIGURE_DIR
    with style():
        for report in reports:
            if report.curves:
                fig = learning_figure(report, colors, competitor, run.window, labels)
                figures[f"learning:{report.world}"] = save_figure(
                    fig, fig_dir, f"learning_curves_{stems[report.world]}"
                )
        forest = forest_figure(reports, colors, competitor, labels)
        if forest is not None:
            figures["forest"] = save_figure(forest, fig_dir, "paired_gains")
        for report in reports:
            table = report.profiles
            if table is not None and len(table.groups) > 1 and table.policies:
                fig = heatmap_figure(table, colors, labels=labels)
                figures[f"profiles:{report.world}"] = save_figure(
                    fig, fig_dir, f"profiles_{stems[report.world]}"
                )
        for world in ask_worlds:
            assert asks is not None  # ask_worlds is empty without
            fig = ask_figure(world, *asks.of(world), colors, labels)
            figures[f"asks:{world}"] = save_figure(fig, fig_dir, f"ask_tracks_{stems[world]}")
    return figures


def play_fragment(reports: Sequence[WorldReport], allow_test: bool) -> tuple[str | None, str, str]:
    """The "Be the policy for one student" fragment (`prefduel.pages.play_widget`).

    Uses ``play_widget(get_world(first_world, first_seed, allow_test=...), arrival=0)``.

    Returns:
        ``(html or None, caption, status)``: the fragment, the sentence introducing it, and a
        status line for the settings section (why it is missing, if it is).
    """
    if not reports or not reports[0].seeds:
        return None, "", "not available (no world)"
    world_name, seed = reports[0].world, reports[0].seeds[0]
    try:
        world = get_world(world_name, seed, allow_test=allow_test)
        fragment = str(play_widget(world, arrival=0))
    except PrefduelError as exc:
        return None, "", f"not included for {world_name} seed {seed}: {exc}"
    except Exception as exc:  # a bug in the widget must not cost the whole report
        message = f"the play widget failed ({type(exc).__name__}: {exc}); section left out"
        warnings.warn(message, ReportWarning, stacklevel=2)
        return None, "", message
    caption = (
        f"Pick the pair of answers to show, round after round, to the first student of "
        f"{world_name} (seed {seed}), and compare your regret with the policies above."
    )
    return fragment, caption, f"included: {world_name}, seed {seed}, arrival 0"


@dataclass(frozen=True)
class _Run:
    """The options of one build (`build_report`'s arguments), as the page records them."""

    title: str
    competitor: str
    window: int
    allow_test: bool
    command: str | None
    worlds: Sequence[str] | str | None
    policies: Sequence[str] | str | None
    only_version: str | None
    students: StudentsFn | None
    figures: bool

    def filters(self) -> dict[str, Any]:
        """``{flag: value}`` of the row filters (the settings section lists those set)."""
        return {
            "--worlds": [self.worlds] if isinstance(self.worlds, str) else self.worlds,
            "--policies": [self.policies] if isinstance(self.policies, str) else self.policies,
            "--only-version": self.only_version,
        }


def _settings(
    data: ReportInput,
    reports: list[WorldReport],
    run: _Run,
    page: Page,
    generated: str,
    play_status: str,
) -> list[tuple[str, str]]:
    """The settings section: everything needed to reproduce the page, as plain text."""
    versions = ", ".join(f"{v} ({n} rows)" for v, n in sorted(data.versions.items()))
    policies = sorted({p for r in reports for p in r.policies})
    refs = sorted({e["policy"] for r in reports for e in r.leaderboard if e["kind"] != "policy"})
    seeds = "; ".join(f"{r.world}: {seed_text(r.seeds)} ({len(r.seeds)})" for r in reports)
    items: list[tuple[str, str]] = [
        ("command", run.command or "(library call)"),
        ("generated", generated),
        ("results file", str(data.path)),
        ("results sha256", data.sha256),
        ("rows", f"{len(data.rows)} used of {data.total_rows} in the file"),
        ("package versions in rows", versions),
        ("worlds", settings_value([r.world for r in reports])),
        ("seeds per world", seeds),
        ("policies", settings_value(policies)),
        ("short names", _renamed(page.labels)),
        ("references", settings_value(refs) if refs else "none"),
        ("competitor", run.competitor),
        ("moving-mean window", f"{run.window} arrivals (centered)"),
        ("intervals", "95% Student-t over seeds; 95% percentile bootstrap, 4000 resamples"),
        ("locked test rosters", "allowed" if run.allow_test else "not allowed"),
    ]
    items += [(name, settings_value(value)) for name, value in run.filters().items() if value]
    items.append(("interactive play widget", play_status))
    items.append(("figures", _figures_status(run, page)))
    return items + _versions()


def _renamed(labels: dict[str, str]) -> str:
    """``label = spec`` of every policy shown by another name than its spec."""
    pairs = [f"{label} = {spec}" for spec, label in sorted(labels.items()) if label != spec]
    return "; ".join(pairs) if pairs else "none (every policy is shown by its spec)"


def _figures_status(run: _Run, page: Page) -> str:
    if page.figure_note is not None:
        return "none: matplotlib not installed"
    if not run.figures:
        return "none (built with figures=False)"
    return f"{len(page.figures)} figures, PNG and SVG in {FIGURE_DIR}/"


def _page(
    data: ReportInput,
    reports: list[WorldReport],
    gain_notes: list[str],
    run: _Run,
    *,
    colors: dict[str, str],
    labels: dict[str, str],
    drawn: dict[str, SavedFigure],
    figure_note: str | None,
    play: tuple[str | None, str, str],
    asks: AskReport | None = None,
) -> Page:
    """Everything the page shows, from the computed numbers and the drawn figures."""
    generated = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    n_seeds = sorted({len(r.seeds) for r in reports})
    play_html, play_caption, play_status = play
    page = Page(
        title=run.title,
        source=f"{data.path} · generated {generated}",
        tab_title=f"{run.title} · {data.path.name}",
        reports=reports,
        competitor=run.competitor,
        window=run.window,
        colors=colors,
        warnings=list(data.warnings),
        gain_notes=gain_notes,
        figures=drawn,
        chips=[
            f"{len(reports)} world{'s' if len(reports) != 1 else ''}",
            f"{len({p for r in reports for p in r.policies})} policies",
            "seeds per world: " + "/".join(map(str, n_seeds)),
            f"{len(data.rows)} rows",
            "versions: " + ", ".join(sorted(data.versions)),
        ],
        play_html=play_html,
        play_caption=play_caption,
        labels=labels,
        figure_note=figure_note,
        asks=asks,
    )
    page.settings = _settings(data, reports, run, page, generated, play_status)
    return page


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Record the seconds the block takes as ``timings[stage]``."""
    t0 = time.perf_counter()
    yield
    timings[stage] = time.perf_counter() - t0


def _build(results: str | Path, out: Path, run: _Run) -> ReportResult:
    """`build_report` with its options gathered: read, compute, draw, write the page."""
    start = time.perf_counter()
    if out.exists() and not out.is_dir():
        raise SpecError(
            f"report folder {out} is an existing file, not a folder; give a folder path"
        )
    skipped = _figures_skipped(run)
    run = replace(run, competitor=canonical_policy(run.competitor))
    data = load_input(
        results,
        worlds=run.worlds,
        policies=run.policies,
        only_version=run.only_version,
        always=[run.competitor],
    )
    timings = {"read": time.perf_counter() - start}
    output_dir(out, "report folder", SpecError)  # before the work: nothing computed is lost
    with _timed(timings, "compute"):
        reports, gain_notes = compute_report(
            data,
            competitor=run.competitor,
            window=run.window,
            students=run.students,
            allow_test=run.allow_test,
        )
        asks = compute_asks(data)
        notes = gain_notes + [n for r in reports for n in r.notes]
        for note in notes:
            warnings.warn(note, ReportWarning, stacklevel=3)  # at build_report's caller
    with _timed(timings, "figures"):
        names = [p for r in reports for p in r.policies]
        colors = policy_colors(names, run.competitor if run.competitor in names else None)
        labels = report_labels([e["policy"] for r in reports for e in r.leaderboard])
        draw = run.figures and skipped is None
        drawn = _figures(reports, colors, labels, run, out, asks) if draw else {}
    with _timed(timings, "play"):
        play = play_fragment(reports, run.allow_test)
    with _timed(timings, "html"):
        note = missing_matplotlib() if skipped else None
        page = _page(
            data,
            reports,
            gain_notes,
            run,
            colors=colors,
            labels=labels,
            drawn=drawn,
            figure_note=note,
            play=play,
            asks=asks,
        )
        page.settings.append(("build time", f"{time.perf_counter() - start:.1f} s before writing"))
        html = out / REPORT_NAME
        html.write_text(render(page), encoding="utf-8")
    timings["total"] = time.perf_counter() - start
    figures = [p for f in drawn.values() for p in (f.png, f.svg)]
    if skipped:
        warnings.warn(skipped, ReportWarning, stacklevel=3)
    return ReportResult(
        html, figures, page.warnings + notes, timings, reports, labels, figures_skipped=skipped
    )


def _figures_skipped(run: _Run) -> str | None:
    """Why the figures asked for cannot be drawn (the one line the command prints), or None."""
    reason = missing_matplotlib() if run.figures else None
    if reason is None:
        return None
    return f"report figures skipped: {reason} (the page has every table)"


def build_report(
    results: str | Path,
    out_dir: str | Path,
    *,
    competitor: str = "random",
    worlds: Sequence[str] | str | None = None,
    policies: Sequence[str] | str | None = None,
    allow_test: bool = False,
    window: int = 25,
    only_version: str | None = None,
    command: str | None = None,
    title: str = "prefduel report",
    students: StudentsFn | None = None,
    figures: bool = True,
) -> ReportResult:
    """Write the self-contained report ``out_dir/report.html`` and its figures.

    Args:
        results: A JSONL results file.
        out_dir: Output directory (created); figures go to ``out_dir/figures/`` as PNG and SVG.
        competitor: Policy the paired gains are measured against (a spec; canonicalized).
        worlds: Only these worlds (comma string or list).
        policies: Only these policies (comma string or list); references stay unless some
            ``ref:...`` names are listed; the competitor is always read for the gains.
        allow_test: Allow reading the students of locked ``test-*`` rosters (per-profile
            breakdown, play widget).
        window: Moving-mean window of the learning curves, in arrivals.
        only_version: Keep only rows written by this package version.
        command: Command line to record in the report.
        title: Page title.
        students: ``(world, seed) -> (students, student_index)`` (default: cheap tables
            from `prefduel.worlds.WorldSpec.students`).
        figures: Draw the figures; False writes a page of tables only (quick looks, tests).
            Without matplotlib the page has every table and, where each figure would be, a
            note saying how to install it (``result.figures_skipped``, also issued once as a
            `ReportWarning`).

    Returns:
        Paths written, warnings and timings.

    Raises:
        ResultsFileError: the results file is missing, empty or corrupt.
        SpecError: a filter matches nothing, the competitor has no rows, or ``out_dir`` is a
            file.
    """
    run = _Run(
        title=title,
        competitor=competitor,
        window=window,
        allow_test=allow_test,
        command=command,
        worlds=worlds,
        policies=policies,
        only_version=only_version,
        students=students,
        figures=figures,
    )
    return _build(results, Path(out_dir), run)
