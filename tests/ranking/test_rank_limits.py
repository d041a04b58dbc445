"""Sizes a user can type on ``prefduel rank`` are bounded before anything is allocated, and a
vote log that is not a regular file (a device, a pipe, a folder) is refused without reading.
"""

from __future__ import annotations

import os
import signal
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from pb_rank_data import rank

from prefduel.cli import rank_args
from prefduel.core.rng import stream
from prefduel.ranking import (
    BattleFormatError,
    RankConfig,
    RankingError,
    analyze,
    battles_from_arrays,
    bt_bootstrap,
    elo_ratings,
    read_battles,
)
from prefduel.ranking import bt as bt_module
from prefduel.ranking.analysis import MAX_MODELS
from prefduel.ranking.analysis_result import MAX_SETTINGS
from prefduel.ranking.battle_schema import MAX_MODEL_BATTLES
from prefduel.ranking.elo import MAX_K, elo_orders

#: Each count option with its library setting.
COUNTS = {
    "--bootstrap": "bootstrap",
    "--elo-orders": "elo_orders",
    "--topics": "n_topics",
    "--meta-styles": "meta_styles",
    "--style-clusters": "style_clusters",
    "--mlp-ensemble": "members",
    "--cv-folds": "folds",
    "--min-votes": "min_votes",
}


@pytest.fixture
def alarm():
    """Fail instead of hanging if a test blocks (reading a pipe with no writer)."""

    def timeout(signum, frame):
        raise AssertionError("blocked: the file was opened or read")

    old = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("option", [*COUNTS, "--min-model-battles"])
def test_every_count_option_has_a_ceiling(tmp_path, capsys, option):
    high = MAX_SETTINGS.get(COUNTS.get(option), MAX_MODEL_BATTLES)
    votes = tmp_path / "v.csv"
    votes.write_text("model_a,model_b,winner,judge\n", encoding="utf-8")
    code = rank([str(votes), "--out", str(tmp_path / "o"), option, str(high + 1)])
    err = capsys.readouterr().err
    assert code == 2 and option in err and f"<= {high:,}" in err, err
    code = rank([str(votes), "--out", str(tmp_path / "o"), option, "1" + "0" * 400])
    assert code == 2 and option in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("option", ["--k", "--ridge"])
@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0", "1e6", "1e400"])
def test_rates_are_finite_and_bounded(tmp_path, capsys, option, value):
    code = rank(["v.csv", "--out", str(tmp_path / "o"), option, value])
    err = capsys.readouterr().err
    assert code == 2 and option in err and "Traceback" not in err, err


def test_the_library_refuses_the_same_sizes():
    for setting, high in MAX_SETTINGS.items():
        RankConfig(**{setting: high})
        with pytest.raises(RankingError, match=setting):
            RankConfig(**{setting: high + 1})
    with pytest.raises(RankingError, match=r"RankConfig.k: expected a number <= 1000"):
        RankConfig(k=MAX_K * 10)
    with pytest.raises(RankingError, match=r"RankConfig\.ridge: expected a finite number"):
        RankConfig(ridge=float("inf"))


def test_the_options_and_the_library_share_their_ceilings():
    assert rank_args.MAX_COUNTS == {opt: MAX_SETTINGS[key] for opt, key in COUNTS.items()}
    assert rank_args.MAX_MODEL_BATTLES == MAX_MODEL_BATTLES and rank_args.MAX_K == MAX_K


def test_a_large_k_is_refused_instead_of_overflowing():
    battles = battles_from_arrays(["a", "b"] * 50, ["b", "a"] * 50, ["model_a"] * 100)
    assert elo_ratings(battles, k=MAX_K).shape == (2,)
    with pytest.raises(RankingError, match="K-factor"):
        elo_ratings(battles, k=1e6)


def _not_regular(tmp_path: Path, kind: str) -> Path:
    if kind == "device":
        if not os.path.exists("/dev/zero"):
            pytest.skip("no /dev/zero")
        link = tmp_path / "zero.csv"
        link.symlink_to("/dev/zero")
        return link
    if kind == "pipe":
        path = tmp_path / "pipe.csv"
        os.mkfifo(path)
        return path
    path = tmp_path / "folder.csv"
    path.mkdir()
    return path


@pytest.mark.parametrize("kind", ["device", "pipe", "folder"])
def test_a_vote_log_that_is_not_a_regular_file_is_refused_unread(tmp_path, alarm, kind):
    path = _not_regular(tmp_path, kind)
    with pytest.raises(BattleFormatError, match="not a regular file"):
        read_battles(path)


def test_rank_refuses_dev_zero(tmp_path, capsys, alarm):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    code = rank(["/dev/zero", "--format", "csv", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "/dev/zero" in err and "not a regular file" in err
    assert not (tmp_path / "o").exists()


def test_a_missing_vote_log_is_still_called_missing(tmp_path):
    with pytest.raises(BattleFormatError, match="does not exist"):
        read_battles(tmp_path / "none.csv")


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "json", "parquet"])
def test_a_table_with_too_many_columns_is_refused_before_it_is_built(tmp_path, fmt):
    """A 10 MB header of a million columns made pandas abort on a failed allocation."""
    n = 200_000 if fmt != "parquet" else 2_000
    names = [f"c{i}" for i in range(n)]
    path = tmp_path / f"wide.{fmt}"
    if fmt == "csv":
        path.write_text(",".join(names) + "\n" + ",".join("1" * n) + "\n", encoding="utf-8")
    elif fmt in ("jsonl", "json"):
        record = "{" + ", ".join(f'"{c}": 1' for c in names) + "}"
        path.write_text(record + "\n" if fmt == "jsonl" else f"[{record}]", encoding="utf-8")
    else:
        pd = pytest.importorskip("pandas")
        pytest.importorskip("pyarrow")
        pd.DataFrame({c: [1] for c in names}).to_parquet(path)
    with pytest.raises(BattleFormatError, match=rf"{n:,} columns.*at most 1,000"):
        read_battles(path)


def _ring(n_models: int, laps: int = 3) -> object:
    """Battles of ``n_models`` models in a ring, each pair ``laps`` times each way."""
    names = [f"m{i:05d}" for i in range(n_models)]
    a = [names[i] for i in range(n_models)] * laps
    b = [names[(i + 1) % n_models] for i in range(n_models)] * laps
    users = [f"u{i % 7}" for i in range(2 * len(a))]
    return battles_from_arrays(a + b, b + a, ["model_a"] * len(users), users)


def test_the_analysis_refuses_more_models_than_it_can_hold():
    with pytest.raises(RankingError, match=rf"{MAX_MODELS + 1:,} models.*at most {MAX_MODELS:,}"):
        analyze(_ring(MAX_MODELS + 1), RankConfig(bootstrap=0, features=False))


def test_bootstrap_replicates_are_fitted_in_memory_bounded_chunks(monkeypatch):
    """Thousands of replicates over many models once took replicates x models^2 floats at once
    (gigabytes for --bootstrap 10000 on an Arena-sized log)."""
    battles = _ring(40)
    whole = bt_bootstrap(battles, np.random.default_rng(1), 50)
    monkeypatch.setattr(bt_module, "_CHUNK_CELLS", 40_000)  # 25 replicates of 40 x 40 cells
    chunked = bt_bootstrap(battles, np.random.default_rng(1), 50)
    np.testing.assert_allclose(chunked.scores, whole.scores, rtol=0, atol=1e-9)
    tracemalloc.start()
    try:
        fit = bt_bootstrap(battles, np.random.default_rng(2), 1_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fit.scores.shape == (1_000, 40)
    assert peak < 30 * 2**20, f"peak {peak / 2**20:.0f} MiB"  # all at once: about 150 MiB


def test_per_user_elo_over_orders_does_not_keep_every_order():
    """--elo-orders N kept N users x models tables at once before averaging them."""
    from prefduel.ranking.personal import _user_elo

    rng = np.random.default_rng(0)
    n, models = 20_000, [f"m{i:02d}" for i in range(60)]
    a = rng.integers(0, 60, n)
    b = (a + rng.integers(1, 60, n)) % 60
    battles = battles_from_arrays(
        [models[i] for i in a], [models[i] for i in b], ["model_a"] * n,
        [f"u{i}" for i in rng.integers(0, 2_000, n)],
    )
    users = np.arange(battles.n_users)

    def peak(orders: int) -> tuple[int, np.ndarray]:
        tracemalloc.start()
        try:
            elo = _user_elo(battles, users, 32.0, orders, 0)
            return tracemalloc.get_traced_memory()[1], elo
        finally:
            tracemalloc.stop()

    (few, _), (many, elo) = peak(2), peak(30)
    assert many < 2 * few, f"peak {many / 2**20:.1f} MiB for 30 orders, {few / 2**20:.1f} for 2"
    reps = elo_orders(battles, stream(0, "ranking", "elo_orders", "users"), 30, 32.0, users)
    np.testing.assert_allclose(elo, reps.mean(axis=0), rtol=0, atol=1e-9)
