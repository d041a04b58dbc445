"""The gains and curve sections of ``prefduel stats``: shared-writer tables, same numbers."""

from __future__ import annotations

import csv
import io

import numpy as np

from prefduel.core.document import Paragraph, Table
from prefduel.stats.sections import StatsOptions, format_curves, format_gains
from prefduel.stats.table import render

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
