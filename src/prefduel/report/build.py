"""Build the report: read and check rows, compute, draw, write ``DIR/report.html``."""

from __future__ import annotations

import datetime as _dt
import importlib
import importlib.util
import platform
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from prefduel import __version__
from prefduel.core.errors import PrefduelError, SpecError
from prefduel.report.compute import StudentsFn, WorldReport, compute_report
from prefduel.report.data import ReportInput, ReportWarning, canonical_policy, load_input
from prefduel.report.figures import (
    SavedFigure,
    forest_figure,
    heatmap_figure,
    learning_figure,
    policy_colors,
    require_matplotlib,
    save_figure,
    slug,
    style,
)
from prefduel.report.html import Page, render, seed_text, settings_value

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
    """

    html: Path
    figures: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    worlds: list[WorldReport] = field(default_factory=list)


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
    reports: list[WorldReport], colors: dict[str, str], competitor: str, window: int, out: Path
) -> dict[str, SavedFigure]:
    """Draw and save every figure; keys ``learning:<world>``, ``forest``, ``profiles:<world>``."""
    figures: dict[str, SavedFigure] = {}
    stems = _unique_stems([r.world for r in reports])
    fig_dir = out / FIGURE_DIR
    with style():
        for report in reports:
            if report.curves:
                fig = learning_figure(report, colors, competitor, window)
                figures[f"learning:{report.world}"] = save_figure(
                    fig, fig_dir, f"learning_curves_{stems[report.world]}"
                )
        forest = forest_figure(reports, colors, competitor)
        if forest is not None:
            figures["forest"] = save_figure(forest, fig_dir, "paired_gains")
        for report in reports:
            table = report.profiles
            if table is not None and len(table.groups) > 1 and table.policies:
                fig = heatmap_figure(table, colors)
                figures[f"profiles:{report.world}"] = save_figure(
                    fig, fig_dir, f"profiles_{stems[report.world]}"
                )
    return figures


def play_fragment(reports: Sequence[WorldReport], allow_test: bool) -> tuple[str | None, str, str]:
    """The "Be the policy for one student" fragment (`prefduel.pages.play_widget`).

    Uses ``play_widget(get_world(first_world, first_seed, allow_test=...), arrival=0)``.

    Returns:
        ``(html or None, caption, status)``: the fragment, the sentence introducing it, and a
        status line for the settings section (why it is missing, if it is).
    """
    from prefduel.pages import play_widget

    if not reports or not reports[0].seeds:
        return None, "", "not available (no world)"
    world_name, seed = reports[0].world, reports[0].seeds[0]
    from prefduel.worlds.rosters import get_world

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


def _settings(
    data: ReportInput,
    reports: list[WorldReport],
    *,
    competitor: str,
    window: int,
    allow_test: bool,
    command: str | None,
    generated: str,
    play_status: str,
    filters: dict[str, Any],
) -> list[tuple[str, str]]:
    versions = ", ".join(f"{v} ({n} rows)" for v, n in sorted(data.versions.items()))
    policies = sorted({p for r in reports for p in r.policies})
    refs = sorted({e["policy"] for r in reports for e in r.leaderboard if e["kind"] != "policy"})
    items: list[tuple[str, str]] = [
        ("command", f'<code class="cmd">{escape(command)}</code>' if command else "(library call)"),
        ("generated", escape(generated)),
        ("results file", f"<code>{escape(str(data.path))}</code>"),
        ("results sha256", f"<code>{data.sha256}</code>"),
        ("rows", escape(f"{len(data.rows)} used of {data.total_rows} in the file")),
        ("package versions in rows", escape(versions)),
        ("worlds", settings_value([r.world for r in reports])),
        (
            "seeds per world",
            escape("; ".join(f"{r.world}: {seed_text(r.seeds)} ({len(r.seeds)})" for r in reports)),
        ),
        ("policies", settings_value(policies)),
        ("references", settings_value(refs) if refs else "none"),
        ("competitor", f"<code>{escape(competitor)}</code>"),
        ("moving-mean window", escape(f"{window} arrivals (centered)")),
        ("intervals", "95% Student-t over seeds; 95% percentile bootstrap, 4000 resamples"),
        ("locked test rosters", "allowed" if allow_test else "not allowed"),
    ]
    for name, value in filters.items():
        if value:
            items.append((name, settings_value(value)))
    items.append(("interactive play widget", escape(play_status)))
    items += [(name, escape(value)) for name, value in _versions()]
    return items


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
            from `prefduel.worlds.rosters.get_students`).
        figures: Draw the figures; False writes a page of tables only (quick looks, tests).

    Returns:
        Paths written, warnings and timings.

    Raises:
        MissingDependencyError: matplotlib is not installed.
        ResultsFileError: the results file is missing, empty or corrupt.
        SpecError: a filter matches nothing, the competitor has no rows, or ``out_dir`` is a
            file.
    """
    start = time.perf_counter()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SpecError(f"--out {out} exists and is not a directory")
    if figures:
        require_matplotlib()  # fail before any work
    timings: dict[str, float] = {}
    competitor = canonical_policy(competitor)
    data = load_input(
        results, worlds=worlds, policies=policies, only_version=only_version, always=[competitor]
    )
    timings["read"] = time.perf_counter() - start

    t0 = time.perf_counter()
    reports, gain_notes = compute_report(
        data, competitor=competitor, window=window, students=students, allow_test=allow_test
    )
    for note in gain_notes + [n for r in reports for n in r.notes]:
        warnings.warn(note, ReportWarning, stacklevel=2)
    timings["compute"] = time.perf_counter() - t0

    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    all_policies = [p for r in reports for p in r.policies]
    colors = policy_colors(all_policies, competitor if competitor in all_policies else None)
    drawn = _figures(reports, colors, competitor, window, out) if figures else {}
    timings["figures"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    play_html, play_caption, play_status = play_fragment(reports, allow_test)
    timings["play"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    generated = _dt.datetime.now().astimezone().isoformat(timespec="seconds")
    n_seeds = sorted({len(r.seeds) for r in reports})
    page = Page(
        title=title,
        source=f"{data.path} · generated {generated}",
        tab_title=f"{title} · {data.path.name}",
        reports=reports,
        competitor=competitor,
        window=window,
        colors=colors,
        warnings=list(data.warnings),
        gain_notes=gain_notes,
        figures=drawn,
        chips=[
            f"{len(reports)} world{'s' if len(reports) != 1 else ''}",
            f"{len(set(all_policies))} policies",
            "seeds per world: " + "/".join(map(str, n_seeds)),
            f"{len(data.rows)} rows",
            "versions: " + ", ".join(sorted(data.versions)),
        ],
        play_html=play_html,
        play_caption=play_caption,
        settings=_settings(
            data,
            reports,
            competitor=competitor,
            window=window,
            allow_test=allow_test,
            command=command,
            generated=generated,
            play_status=play_status,
            filters={
                "--worlds": worlds if not isinstance(worlds, str) else [worlds],
                "--policies": policies if not isinstance(policies, str) else [policies],
                "--only-version": only_version,
            },
        ),
    )
    html_path = out / REPORT_NAME
    timings["total"] = time.perf_counter() - start
    page.settings.append(("build time", escape(f"{timings['total']:.1f} s before writing")))
    html_path.write_text(render(page), encoding="utf-8")
    timings["html"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - start
    paths = [p for f in drawn.values() for p in (f.png, f.svg)]
    return ReportResult(
        html=html_path,
        figures=paths,
        warnings=page.warnings + gain_notes + [n for r in reports for n in r.notes],
        timings=timings,
        worlds=reports,
    )
