"""ref:oracle-prior-ask: the population-prior reference that first asks its questions."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from prefduel.core import jit
from prefduel.runner import headroom_ask, headroom_kernels
from prefduel.runner.headroom import NO_OTHER_USERS, play_oracle_prior
from prefduel.runner.headroom_ask import ask_by_information, play_oracle_prior_ask
from prefduel.runner.references import linear_oracle_theta, reference_rows, undefined_references
from prefduel.stats.summary import REFERENCE_LEGEND
from prefduel.worlds import get_roster, parse_world
from prefduel.worlds.tutorsim import generate_world


def test_the_question_that_tells_the_particles_apart_is_asked_first():
    # two equally likely particles; question 0 answers the same under both, question 1
    # (answer 1 under particle 0, answer 0 under particle 1) tells them apart
    loglik = np.log(
        np.array([[[[0.5, 0.5], [0.5, 0.5]], [[0.01, 0.99], [0.99, 0.01]]]])
    )  # (N=1, Q=2, M=2, A=2)
    log_w, asked = ask_by_information(np.zeros((1, 2)), loglik, np.array([[0, 1]]), budget=1)
    assert asked.tolist() == [[1]]
    weights = np.exp(log_w - log_w.max())
    assert weights[0, 0] / weights[0].sum() == pytest.approx(0.99)


def test_questions_are_never_asked_twice():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=(4, 5, 6))  # (N, Q, M, A)
    _, asked = ask_by_information(np.zeros((4, 6)), np.log(probs), np.zeros((4, 5), int), 5)
    assert all(len(set(row)) == 5 for row in asked.tolist())


def test_with_no_question_it_is_the_population_reference():
    world = parse_world("dev+ask2").make(1)
    theta = linear_oracle_theta(world.Phi, world.U)
    plain = play_oracle_prior(world, theta)
    asking, asked = play_oracle_prior_ask(world, theta, 0)
    assert asked.shape == (world.N, 0)
    np.testing.assert_array_equal(asking.first, plain.first)
    np.testing.assert_array_equal(asking.second, plain.second)


def test_the_row_is_on_ask_tracks_only_and_questions_pay():
    plain = {r["policy"]: r["score"] for r in reference_rows(parse_world("dev").make(0))}
    track = {r["policy"]: r["score"] for r in reference_rows(parse_world("dev+ask2").make(0))}
    assert "ref:oracle-prior-ask" not in plain
    assert track["ref:oracle-prior-ask"] > track["ref:oracle-prior"]
    assert "ref:oracle-prior-ask" in REFERENCE_LEGEND


def test_a_track_of_one_student_leaves_the_asking_reference_undefined():
    world = parse_world("dev+ask2").make(0)
    world.student_index[:] = 2  # nobody else to learn from
    undefined = undefined_references(world)
    assert undefined["ref:oracle-prior-ask"] == NO_OTHER_USERS
    plain = parse_world("dev").make(0)
    plain.student_index[:] = 2
    assert "ref:oracle-prior-ask" not in undefined_references(plain)


def test_the_arrivals_valued_together_do_not_change_the_row(monkeypatch):
    """Arrivals are independent given the particles: valued a few at a time (to keep the
    arrays small) the questions, weights and pairs are those of the whole world at once."""
    world = replace(generate_world(replace(get_roster("dev"), arrivals=40), 3), ask_budget=2)
    theta = linear_oracle_theta(world.Phi, world.U)
    monkeypatch.setattr(headroom_ask, "ARRIVAL_CHUNK", 1000)
    whole, asked_whole = play_oracle_prior_ask(world, theta, 2)
    monkeypatch.setattr(headroom_ask, "ARRIVAL_CHUNK", 7)
    chunked, asked_chunked = play_oracle_prior_ask(world, theta, 2)
    np.testing.assert_array_equal(asked_chunked, asked_whole)
    np.testing.assert_array_equal(chunked.log_weights, whole.log_weights)
    np.testing.assert_array_equal(chunked.first, whole.first)
    np.testing.assert_array_equal(chunked.second, whole.second)


def test_the_compiled_particle_utilities_are_numpys_to_the_bit(monkeypatch):
    """The asking reference's utilities of each persona under each particle are those of
    numpy's einsum to the bit, so its questions, pairs and posterior do not depend on numba."""
    world = replace(generate_world(replace(get_roster("dev"), arrivals=40), 2), ask_budget=2)
    theta = linear_oracle_theta(world.Phi, world.U)
    phi = world.Phi[:5]
    plain = np.einsum("nskd,md->nsmk", phi, theta) * 1.7
    np.testing.assert_array_equal(headroom_kernels.particle_utilities(phi, theta, 1.7), plain)
    runs = []
    for enabled in (False, True):
        monkeypatch.setattr(jit, "ENABLED", enabled)
        runs.append(play_oracle_prior_ask(world, theta, 2))
    (plain_run, plain_asked), (run, asked) = runs
    np.testing.assert_array_equal(asked, plain_asked)
    for field in ("first", "second", "log_weights"):
        np.testing.assert_array_equal(getattr(run, field), getattr(plain_run, field))
