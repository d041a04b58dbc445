"""What the report must say for a reader to judge it: the share of users with a BT MLE and their
correlations apart, an arbitrary Elo order (and Elo over seeded orders), degenerate features,
global rank intervals, and which estimate predicts held-out votes best."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pb_rank_data import analysis, arena, rank

from prefduel.core.document import Paragraph
from prefduel.core.document_text import to_markdown
from prefduel.core.rng import stream
from prefduel.ranking import (
    RankConfig,
    analyze,
    battles_from_frame,
    correlation_summary,
    elo_ratings,
)
from prefduel.ranking.analysis import overlap_rank_intervals
from prefduel.ranking.elo import elo_orders
from prefduel.ranking.report_sections import report_document
from prefduel.ranking.style import feature_check

DATA = Path(__file__).parent / "data" / "pathological_votes.csv"
QUICK = RankConfig(bootstrap=10, features=False, min_votes=30, holdout_folds=3)
ORDER_WARNING = "online Elo follows the file order"


def _battles(with_time: bool):
    frame = arena(seed=4, n_users=30)[0]
    return battles_from_frame(frame if with_time else frame.drop(columns=["tstamp"]))


def _warnings(result) -> list[str]:
    data = result.to_dict()
    intro = report_document(data, {}).intro
    return [b.text for b in intro if isinstance(b, Paragraph) and b.style == "warn"]


def test_elo_order_warning_appears_without_timestamps_only():
    timed = analyze(_battles(True), QUICK)
    assert not any(ORDER_WARNING in m for m in timed.messages) and not _warnings(timed)
    untimed = analyze(_battles(False), QUICK)
    assert any(ORDER_WARNING in m and "--elo-orders" in m for m in untimed.messages)
    assert any("No timestamps" in w and "--elo-orders" in w for w in _warnings(untimed))
    assert untimed.to_dict()["global"]["elo_order"] == {"timestamps": False, "orders": 0}


def test_elo_over_seeded_orders_is_the_mean_with_its_spread():
    battles = _battles(False)
    config = RankConfig(bootstrap=10, features=False, min_votes=30, elo_orders=4)
    result = analyze(battles, config)
    g = result.global_ratings
    reps = elo_orders(battles, stream(0, "ranking", "elo_orders"), 4, config.k)
    np.testing.assert_array_equal(g.elo, reps.mean(axis=0))
    np.testing.assert_array_equal(g.elo_order_sd, reps.std(axis=0))
    np.testing.assert_array_equal(g.elo_in_order, elo_ratings(battles, config.k))
    assert (g.elo_order_sd > 0).all() and not _warnings(result)
    order = result.to_dict()["global"]["elo_order"]
    assert order["orders"] == 4 and order["order_sd_max"] == pytest.approx(g.elo_order_sd.max())
    row = result.model_table()[0]
    assert {"elo_order_sd", "elo_in_order"} <= set(row)
    assert "elo_order_sd" not in analyze(battles, QUICK).model_table()[0]  # default: unchanged
    again = analyze(battles, config)
    np.testing.assert_array_equal(again.global_ratings.elo, g.elo)
    np.testing.assert_array_equal(again.personal.elo, result.personal.elo)
    seen, elo = result.personal.seen, result.personal.elo
    assert np.isfinite(elo[seen]).all() and np.isnan(elo[~seen]).all()


def test_id_prompts_make_degenerate_features_and_no_prediction(tmp_path, capsys):
    out = tmp_path / "ids"
    args = [str(DATA), "--out", str(out), "--encoding-errors", "replace", "--min-votes", "20"]
    assert rank([*args, "--bootstrap", "10", "--mlp-ensemble", "1", "--cv-folds", "3"]) == 0
    printed = capsys.readouterr().out
    assert "vs mean predictor" not in printed and "features are degenerate" in printed
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    check = data["features"]
    assert check["degenerate"] and check["single_token_share"] == 1.0
    assert any("single tokens (ids, not text)" in r for r in check["reasons"])
    assert data["predictions"] == {} and "styles" not in data
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "Degenerate features" in markdown and "Predicting a user's scores" not in markdown
    assert "No timestamps" in markdown  # the fixture has none


def test_real_prompts_pass_the_feature_check():
    _, _, result = analysis()
    assert result.feature_check["degenerate"] is False and result.predictions
    assert result.feature_check["effective_rank"] >= 2


def test_feature_check_names_each_degeneracy():
    rng = np.random.default_rng(0)
    varied = rng.normal(size=(20, 5))
    texts = ["write a poem about the sea", "fix my code please"]
    assert feature_check(varied, texts)["reasons"] == []
    constant = np.ones((20, 5))
    assert feature_check(constant, texts)["reasons"] == ["no feature varies across users"]
    line = np.outer(rng.normal(size=20), [1.0, 2.0, -1.0])
    assert "only 1 direction" in feature_check(line, texts)["reasons"][0]
    ids = [f"{i:032x}" for i in range(50)]
    assert "single tokens" in feature_check(varied, ids)["reasons"][0]


def test_global_rank_intervals_follow_the_overlap_rule():
    ci = np.array([[10.0, 12.0], [9.0, 11.0], [5.0, 6.0], [0.0, 9.5]])
    rank = np.array([1, 2, 3, 4])
    # 0 overlaps only 1; 1 overlaps 0 and 3; 2 is surely below 0 and 1; 3 surely below 0 only
    np.testing.assert_array_equal(
        overlap_rank_intervals(rank, ci), [[1, 2], [1, 3], [3, 4], [2, 4]]
    )
    # a point rank outside the interval rule (a percentile interval missing its estimate) is kept
    odd = overlap_rank_intervals(np.array([2, 1]), np.array([[5.0, 6.0], [1.0, 2.0]]))
    assert odd.tolist() == [[1, 2], [1, 2]]
    _, _, result = analysis()
    for row in result.model_table():
        assert 1 <= row["rank_lo"] <= row["rank"] <= row["rank_hi"] <= len(result.battles.models)
    assert [row["rank"] for row in result.model_table()] == list(
        range(1, result.battles.n_models + 1)
    )


def test_summary_line_gives_the_share_with_an_mle_and_splits_rho():
    _, _, result = analysis()
    p = result.personal
    split = result.to_dict()["correlation"]["by_bt_estimate"]
    with_mle = int(p.bt_mle_exists.sum())
    assert split["mle_exists"]["users"] == with_mle
    assert split["mle_exists"]["users"] + split["no_mle"]["users"] == p.users.size
    assert split["no_mle"]["bt"] | {"bt_estimate": "ridge"} == (
        correlation_summary(result.rho_bt[~p.bt_mle_exists]) | {"bt_estimate": "ridge"}
    )
    assert split["mle_exists"]["bt_estimate"] == "mle"
    assert (p.bt_estimate == "ridge").sum() == p.bt_fallback.sum() == p.users.size - with_mle
    summary = report_document(result.to_dict(), {}).sections[0]
    assert summary.title == "Summary"
    lead = summary.blocks[0].text
    share = round(100 * with_mle / p.users.size)
    assert f"{with_mle} of {p.users.size} users ({share}%) have a BT maximum-likelihood" in lead


def test_which_estimate_to_trust_reports_held_out_log_loss():
    _, _, result = analysis()
    loss = result.to_dict()["holdout"]
    assert loss["votes"] == int(result.personal.votes.sum()) and loss["folds"] == 5
    assert {"global", "ridge", "hierarchical"} <= set(loss)
    assert loss["best"] == min(("global", "ridge", "hierarchical"), key=loss.get)
    markdown = to_markdown(report_document(result.to_dict(), {}))
    section = markdown.split("## Which estimate to trust")[1].split("\n## ")[0]
    assert f"{loss['votes']} held-out votes" in section
    assert f"| {loss['hierarchical']:.4f} |" in section
