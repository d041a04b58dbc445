"""The gains and curve sections of ``prefduel stats``, and the explained summary of ``run``:
shared-writer tables, same numbers."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from prefduel.core.document import Paragraph, Table
from prefduel.runner.references import ASK_REFERENCES, REFERENCES
from prefduel.stats.paired import paired_gains
from prefduel.stats.sections import StatsOptions, format_curves, format_gains
from prefduel.stats.summary import REFERENCE_LEGEND, summary_report
from prefduel.stats.table import format_table, render, summarize_rows

NAN = float("nan")
GAINS = [
    {
        "world": "dev",
        "policy": "notransfer",
        "competitor": "random",
        "n": 2,
        "change_mean": -38.34,
        "t_lo": -63.81,
        "t_hi": -12.8,
        "boot_lo": -40.3,
        "boot_hi": -36.26,
    },
    {
        "world": "w|x",
        "policy": "coduel",
        "competitor": "random",
        "n": 1,
        "change_mean": 5.0,
        "t_lo": NAN,
        "t_hi": NAN,
        "boot_lo": NAN,
        "boot_hi": NAN,
    },
]


def test_gains_table_in_text_markdown_and_csv():
    lines = format_gains(GAINS, "text").splitlines()
    assert lines[0] == "paired change in excess regret vs random"
    assert lines[1].split() == "world policy seeds change 95% t 95% bootstrap".split()
    assert lines[2].split() == ["dev", "notransfer", "2", "-38.3%", *"[-63.8, -12.8]".split(),
                                *"[-40.3, -36.3]".split()]
    assert lines[3].split() == ["w|x", "coduel", "1", "+5.0%", "–", "–"]  # one seed: no interval
    md = format_gains(GAINS, "md").splitlines()
    assert md[2:4] == ["| world | policy | seeds | change | 95% t | 95% bootstrap |",
                       "|---|---|---:|---:|---:|---:|"]
    assert md[4] == "| dev | notransfer | 2 | -38.3% | [-63.8, -12.8] | [-40.3, -36.3] |"
    assert md[5].startswith("| w\\|x | coduel |")
    records = list(csv.DictReader(io.StringIO(format_gains(GAINS, "csv"))))
    assert records[0]["change_mean"] == "-38.34" and records[1]["t_lo"] == "nan"
    assert records[1]["world"] == "w|x"
    assert format_gains([], "text") == ""


def _curve_rows(seeds: int) -> list[dict]:
    rng = np.random.default_rng(0)
    return [
        {
            "kind": "policy",
            "world": "dev",
            "policy": policy,
            "seed": seed,
            "excess_per_arrival": list(rng.random(60) + offset),
            "excess_per_round": list(rng.random(8) + offset),
        }
        for policy, offset in (("random", 5.0), ("notransfer", 1.0))
        for seed in range(seeds)
    ]


def test_curves_show_checkpoints_as_tables_with_bands_in_markdown():
    text = format_curves(_curve_rows(3), StatsOptions(window=5)).splitlines()
    assert text[0].startswith("dev: excess regret per arrival (centered 5-arrival mean")
    assert text[1].split() == ["policy", "0", "50", "59"]
    assert text[2].split()[0] == "random" and len(text[2].split()) == 4
    assert "dev: mean excess regret per round (over arrivals and seeds)" in text
    md = format_curves(_curve_rows(3), StatsOptions(window=5, fmt="md"))
    assert "| policy | round 1 | round 4 | round 8 |\n|---|---:|---:|---:|" in md
    row = next(line for line in md.splitlines() if line.startswith("| notransfer | 1."))
    assert row.count("[") == 3  # mean [lo, hi] at each arrival checkpoint
    single = format_curves(_curve_rows(1), StatsOptions(window=5, fmt="md"))
    assert "[" not in single.replace("[95% band]", "")  # one seed: no band, no "nan"
    data = format_curves(_curve_rows(1), StatsOptions(window=5, fmt="csv")).splitlines()
    assert data[0] == "world,policy,curve,x,mean,lo,hi,seeds" and len(data) == 1 + 2 * (60 + 8)


def test_render_joins_blocks_with_blank_lines_and_csv_tables_back_to_back():
    blocks = [Paragraph("### a"), Table(["x"], [["1"]]), Table(["y"], [["2"]])]
    assert render(blocks, "md") == "### a\n\n| x |\n|---:|\n| 1 |\n\n| y |\n|---:|\n| 2 |\n"
    assert render(blocks, "text") == "### a\n\nx\n1\n\ny\n2\n"
    assert render(blocks, "csv") == "x\n1\ny\n2\n"
    assert render([], "text") == ""


def _scored_rows(seeds: int, world: str = "dev", arrivals: int = 5) -> list[dict]:
    """Rows of three policies and two references whose excess regret is ``base`` plus noise."""
    rng = np.random.default_rng(1)
    rows = []
    for seed in range(seeds):
        for policy, base, kind in (
            ("a", 100.0, "policy"),
            ("b", 130.0, "policy"),
            ("c", 300.0, "policy"),
            ("ref:floor", 0.0, "reference"),
            ("ref:oracle-user", 50.0, "reference"),
        ):
            excess = base + (10 * rng.random() if base else 0.0)
            rows.append({
                "kind": kind, "world": world, "seed": seed, "policy": policy,
                "score": 100 - excess / 4, "excess": excess,
                "excess_per_arrival": [excess / arrivals] * arrivals,
                "excess_per_round": [excess / arrivals / 24] * 24,
            })
    return rows


def _gain_cells(rows: list[dict], policy: str, competitor: str) -> tuple[str, str, str]:
    """Seeds, change and t interval of ``policy`` as the gains table of ``stats --competitor``
    prints them."""
    pool = [r for r in rows if r["kind"] == "policy"]
    for line in format_gains(paired_gains(pool, competitor), "text").splitlines()[2:]:
        cells = line.split()
        if cells[1] == policy:
            return cells[2], cells[3], " ".join(cells[4:6])
    raise AssertionError(f"no gains row for {policy}")


def test_run_summary_names_the_best_policy_against_the_next_best():
    rows = _scored_rows(4)
    text = summary_report(rows, "text")
    assert text.startswith(format_table(summarize_rows(rows), "text"))
    seeds, change, t = _gain_cells(rows, "a", "b")
    assert seeds == "4" and change.startswith("-") and t.startswith("[-")
    line = next(x for x in text.splitlines() if x.startswith("best policy on dev:"))
    assert line == f"best policy on dev: a; excess regret vs the next best, b: {change} {t}"
    assert "paired by seed over 4 seeds, 95% t interval: prefduel stats --competitor b" in text


def test_run_summary_with_one_seed_gives_no_interval_and_one_policy_no_headline():
    rows = _scored_rows(1)
    line = next(x for x in summary_report(rows, "text").splitlines() if x.startswith("best"))
    assert line.endswith("b: " + _gain_cells(rows, "a", "b")[1] + " (one seed: no interval)")
    alone = [r for r in rows if r["policy"] not in ("b", "c")]
    assert "best policy" not in summary_report(alone, "text")


def test_run_summary_legend_explains_units_samples_and_the_references_shown():
    text = summary_report(_scored_rows(4, arrivals=5), "text")
    legend = text.split("score: ", 1)[1]
    flat = " ".join(legend.split())  # the legend is wrapped at 100 columns
    assert "uniformly random pairs 0, the floor 100" in flat
    assert "excess: excess regret R - G" in flat and "utilities in [0, 1]" in flat
    assert "dev: 5 arrivals x 24 rounds" in flat
    assert "±: standard error of the mean over 4 seeds (each seed an independent world)" in flat
    assert "docs/tutorduel.md#reference-rows" in flat
    assert max(len(line) for line in text.splitlines()) <= 100
    ref_lines = [x.split()[0] for x in legend.splitlines() if x.startswith("  ref:")]
    assert ref_lines == ["ref:floor", "ref:oracle-user"]  # the references shown, table order


def test_every_reference_has_a_legend_line():
    assert set(REFERENCE_LEGEND) == {*REFERENCES, *ASK_REFERENCES}
    assert all(len(f"  {name:<28}{text}") <= 100 for name, text in REFERENCE_LEGEND.items())


@pytest.mark.parametrize("fmt", ["md", "csv", "json"])
def test_run_summary_keeps_machine_readable_formats_unchanged(fmt):
    rows = _scored_rows(3)
    assert summary_report(rows, fmt) == format_table(summarize_rows(rows), fmt)


def test_run_summary_of_several_worlds_has_a_headline_each_and_one_legend():
    rows = _scored_rows(3) + _scored_rows(3, world="control-scrambled", arrivals=7)
    text = summary_report(rows, "text")
    assert [x.split(":")[0] for x in text.splitlines() if x.startswith("best policy on")] == [
        "best policy on dev",
        "best policy on control-scrambled",
    ]
    assert text.count("score: uniformly random pairs 0") == 1
    flat = " ".join(text.split())
    assert "(dev: 5, control-scrambled: 7 arrivals x 24 rounds)" in flat  # names kept whole
