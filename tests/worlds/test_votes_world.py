"""A world built from a vote log, as the world registry sees it: the folder is parsed into the
``votes`` generator, its stored seed gives the world back, and every other seed re-orders the
arrivals and redraws each arrival's utilities from its voter's posterior."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from pb_votes import write_log
from prefduel.core.errors import WorldFormatError
from prefduel.voteworlds import BuildSettings, build_votes_world
from prefduel.worlds import get_world, load_world, parse_world
from prefduel.worlds.votes import (
    VotesPosterior,
    draw_arrivals,
    load_posterior,
    posterior_path,
)


@pytest.fixture(scope="module")
def votes_world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("votes")
    log, _ = write_log(folder / "votes.csv", voters=40, categories=3, seed=11)
    build_votes_world(log, folder / "world", BuildSettings(replicates=1, folds=2))
    return folder / "world"


def test_the_folder_is_a_stored_world_of_the_votes_generator(votes_world, toy_world):
    spec = parse_world(str(votes_world))
    assert (spec.kind, spec.generator, spec.label) == ("stored", "votes", str(votes_world))
    assert parse_world(toy_world).generator == "stored"  # an ordinary stored world is not


def test_the_stored_seed_gives_the_world_as_stored(votes_world):
    stored = load_world(votes_world)
    assert get_world(str(votes_world), stored.seed).digest() == stored.digest()


def test_each_seed_reorders_the_arrivals_and_redraws_their_utilities(votes_world):
    stored = load_world(votes_world)
    one, two = get_world(str(votes_world), 1), get_world(str(votes_world), 2)
    for world in (one, two):
        world.validate()
        assert sorted(world.student_index) == sorted(stored.student_index)
        assert world.info["replicate_of_seed"] == stored.seed
    assert get_world(str(votes_world), 1).digest() == one.digest()  # reproducible
    # the same arrival (its student): same questions and features, other utilities
    student = int(stored.student_index[0])
    a = int(np.flatnonzero(one.student_index == student)[0])
    b = int(np.flatnonzero(two.student_index == student)[0])
    assert np.array_equal(one.Phi[a], two.Phi[b])
    assert np.array_equal(one.question_index[a], two.question_index[b])
    assert np.abs(one.U[a] - two.U[b]).max() > 1e-3
    assert not np.array_equal(one.u, two.u)


def test_utilities_and_clicks_follow_bradley_terry_on_the_drawn_strengths(votes_world):
    world = get_world(str(votes_world), 3)
    logits = np.log(world.P / np.swapaxes(world.P, -1, -2))
    theta = logits[..., 0]  # theta_a - theta_0
    utility = 0.5 + (theta - theta.mean(axis=-1, keepdims=True)) / 8
    assert np.allclose(world.U, np.clip(utility, 0, 1), atol=1e-9)
    assert np.abs(world.P + np.swapaxes(world.P, -1, -2) - 1).max() <= 1e-12


def test_arrivals_draw_from_their_voters_posterior():
    rng = np.random.default_rng(0)
    chol = np.tril(rng.normal(size=(1, 3, 3)))
    chol[0, np.arange(3), np.arange(3)] = [0.5, 0.8, 0.3]
    posterior = VotesPosterior(
        base=np.array([[0.0, 0.5, -0.5]]), mean=np.array([[1.0, -1.0, 0.2]]), chol=chol,
        student_voter=np.zeros(1, dtype=np.int64), question_category=np.zeros(1, dtype=np.int64),
    )
    n = 20000
    _, prob, _ = draw_arrivals(
        posterior, np.zeros(n, dtype=np.int64), np.zeros((n, 1), dtype=np.int64), seed=5
    )
    diff = np.log(prob[:, 0, 1:, 0] / prob[:, 0, 0, 1:])  # theta_b - theta_0, b = 1, 2
    covariance = chol[0] @ chol[0].T
    contrast = np.array([[-1.0, 1.0, 0.0], [-1.0, 0.0, 1.0]])
    expect_mean = contrast @ (posterior.base[0] + posterior.mean[0])
    assert np.allclose(diff.mean(axis=0), expect_mean, atol=0.03)
    assert np.allclose(np.cov(diff.T), contrast @ covariance @ contrast.T, atol=0.03)


def test_a_votes_world_without_its_posterior_is_refused(votes_world, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(votes_world, copy)
    posterior_path(copy).unlink()
    assert parse_world(str(copy)).generator == "stored"
    with pytest.raises(WorldFormatError, match=r"built from a vote log, but votes/posterior"):
        get_world(str(copy), 1)


def test_a_posterior_that_does_not_match_its_digest_is_refused(votes_world, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(votes_world, copy)
    world = load_world(copy)
    posterior = load_posterior(world, copy)
    VotesPosterior(
        posterior.base + 0.1, posterior.mean, posterior.chol, posterior.student_voter,
        posterior.question_category,
    ).save(copy)
    with pytest.raises(WorldFormatError, match="does not match the sha256"):
        get_world(str(copy), 1)


def test_the_posterior_must_fit_the_world(votes_world, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(votes_world, copy)
    world = load_world(copy)
    posterior = load_posterior(world, copy)
    short = VotesPosterior(
        posterior.base, posterior.mean, posterior.chol, posterior.student_voter[1:],
        posterior.question_category,
    )
    short.save(copy)
    meta = json.loads((copy / "world.json").read_text())
    meta["info"]["votes"]["posterior_sha256"] = short.digest()
    (copy / "world.json").write_text(json.dumps(meta))
    with pytest.raises(WorldFormatError, match="posterior student_voter must have shape"):
        get_world(str(copy), 1)


def test_load_world_points_to_get_world_for_the_replicates(votes_world):
    stored = load_world(votes_world)
    assert load_world(votes_world, seed=stored.seed).digest() == stored.digest()
    with pytest.raises(WorldFormatError, match=r"built from a vote log: get_world\("):
        load_world(votes_world, seed=stored.seed + 1)
