"""The Bayesian interviewer: a prior from disjoint personas, information gain, answer-dependent
follow-ups, determinism, reading replies in every user style, and an offline episode the
existing scorer accepts."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import (
    ConfigError,
    DatasetError,
    KeywordRouter,
    RunConfig,
    Transcript,
    build_rubrics,
    builtin_tasks,
    load_taxonomy,
    sample_personas,
    score_transcript,
    scripted_handlers,
)
from prefduel.prefdisco.dataset.folder import pair_instances
from prefduel.prefdisco.dataset.preferences import sample_profiles
from prefduel.prefdisco.episode.episodes import EpisodeContext, EpisodeKey
from prefduel.prefdisco.episode.judging import JudgeContext
from prefduel.prefdisco.interviewer.belief import Belief, Candidate, Evidence
from prefduel.prefdisco.interviewer.prior import (
    DomainPrior,
    PriorConfig,
    check_disjoint,
    learn_prior,
    load_prior,
    persona_fingerprint,
    save_prior,
    valid_states,
)
from prefduel.prefdisco.interviewer.replies import (
    read_reply,
    scripted_phrase_handler,
    template_question,
)
from prefduel.prefdisco.interviewer.strategy import InterviewerConfig, run_interview

TAX = load_taxonomy()
TASKS = builtin_tasks()
SMALL = PriorConfig(seed=1, personas=60)


@pytest.fixture(scope="module")
def prior():
    return learn_prior(TAX, SMALL)


@pytest.fixture(scope="module")
def study():
    """Evaluation personas (seed 0) with 2 instances per built-in task."""
    personas, _ = sample_personas(6, 0)
    pairs = pair_instances(personas, TASKS, 2, 0)
    profiles = {p.key: p for p in sample_profiles(pairs, TAX, seed=0)}
    return personas, profiles


def _context(profiles, handlers=None, **run):
    handlers = handlers or {
        **scripted_handlers(TAX, TASKS),
        "phrase": scripted_phrase_handler(TAX),
    }
    client = LLMClient(ScriptedBackend(handlers, fail_unknown_roles=True))
    tasks = {t.id: t for t in TASKS}
    settings = RunConfig(**run)
    return EpisodeContext(TAX, tasks, profiles, settings, "digest", client, KeywordRouter(TAX))


def _key(instance, model="scripted-interviewer"):
    return EpisodeKey(model, "discovery", *instance, strategy="interviewer")


# -- the prior ---------------------------------------------------------------------------------


def test_prior_comes_from_personas_disjoint_from_the_evaluation_ones(prior, study):
    personas, _ = study
    assert prior.training.seed == 1 and len(prior.training.persona_fingerprints) == 60
    assert check_disjoint(prior, personas) == len(personas)
    same_seed, _ = sample_personas(6, 1)  # the training library's first personas
    with pytest.raises(DatasetError, match="learned from 6 of the evaluation personas"):
        check_disjoint(prior, same_seed)
    # ids restart at p0000 for every seed: the fingerprint, not the id, tells them apart
    assert personas[0].id == same_seed[0].id
    assert persona_fingerprint(personas[0]) != persona_fingerprint(same_seed[0])


def test_prior_is_a_distribution_and_survives_a_round_trip(prior, tmp_path):
    math_prior = prior.domain("math")
    assert math_prior.theta.shape == (4, len(TAX), valid_states(TAX).shape[1])
    assert np.allclose(math_prior.theta.sum(axis=-1), 1.0)
    assert np.isclose(math_prior.mixture.sum(), 1.0) and np.isclose(prior.k_probs.sum(), 1.0)
    assert prior.family_cap == 2 and set(np.nonzero(prior.k_probs)[0]) == {3, 4, 5}
    save_prior(tmp_path / "prior.json", prior)
    again = load_prior(tmp_path / "prior.json", TAX)
    assert again.to_json() == prior.to_json()


def test_prior_learning_is_deterministic(prior):
    assert learn_prior(TAX, SMALL).to_json() == prior.to_json()
    other = learn_prior(TAX, dataclasses.replace(SMALL, seed=2))
    assert other.training.persona_fingerprints != prior.training.persona_fingerprints


def test_bad_settings_name_the_field():
    with pytest.raises(ConfigError, match=r"run\.interviewer\.min_gain"):
        InterviewerConfig(min_gain=-1)
    with pytest.raises(ConfigError, match=r"run\.interviewer\.prior\.classes"):
        PriorConfig(classes=0)


# -- information gain --------------------------------------------------------------------------


def _hand_made(prior):
    """One type; every attribute absent except four with chosen uncertainty and weight."""
    valid = valid_states(TAX)
    theta = np.zeros((1, *valid.shape))
    theta[0, :, 0] = 1.0
    weight = np.full(len(TAX), 0.3)

    def set_(attribute, presence, values, mean_weight=0.3):
        i = TAX.ids.index(attribute)
        theta[0, i, 0] = 1 - presence
        theta[0, i, 1 : 1 + len(values)] = presence * np.asarray(values)
        weight[i] = mean_weight

    set_("explanation.depth", 0.5, [0.2] * 5)  # often present, value unknown
    set_("style.length", 0.5, [0.97, 0.01, 0.01, 0.01])  # often present, value nearly sure
    set_("structure.format", 0.05, [0.25] * 4)  # rarely present
    set_("explanation.analogies", 0.5, [1 / 3] * 3, 0.05)  # uncertain but a small weight
    k_probs = np.zeros(len(TAX) + 1)
    k_probs[1:3] = 0.5
    domain = DomainPrior("math", np.ones(1), theta, weight, 1, 0.0)
    return dataclasses.replace(prior, domains={"math": domain}, k_probs=k_probs)


def test_gain_is_largest_for_the_most_uncertain_rubric_relevant_attribute(prior):
    belief = Belief(_hand_made(prior), "math", TAX)
    gains = dict(belief.gains())
    assert belief.gains()[0][0] == Candidate("explanation.depth")
    assert gains[Candidate("explanation.depth")] > gains[Candidate("style.length")]
    assert gains[Candidate("style.length")] > gains[Candidate("structure.format")]
    assert gains[Candidate("explanation.depth")] > gains[Candidate("explanation.analogies")]
    assert gains[Candidate("explanation.steps")] == pytest.approx(0.0, abs=1e-9)


def test_gain_is_zero_for_an_attribute_already_known(prior):
    belief = Belief(prior, "math", TAX)
    first = belief.gains()[0][0]
    assert belief.gain(first) > 0
    for value in (None, TAX[first.attribute].value_ids[0]):
        known = belief.update(Evidence(first.attribute, "value", value))
        assert known.gain(first) == 0.0
        assert first not in known.candidates(importance=True)
        assert known.uncertainty() < belief.uncertainty() or value is None
    absent = belief.update(Evidence(first.attribute, "value", None))
    assert absent.gain(Candidate(first.attribute, "importance")) == 0.0


def test_importance_questions_are_candidates_only_for_preferences_found(prior):
    belief = Belief(prior, "math", TAX, importance_weight=1.0)
    assert all(c.kind == "value" for c in belief.candidates(importance=True))
    value = TAX["explanation.steps"].value_ids[-1]
    found = belief.update(Evidence("explanation.steps", "value", value))
    question = Candidate("explanation.steps", "importance")
    assert question in found.candidates(importance=True)
    assert found.gain(question) > 0
    heard = found.update(Evidence("explanation.steps", "importance", "major"))
    assert heard.gain(question) == 0.0 and question not in heard.candidates(importance=True)


def test_the_follow_up_question_depends_on_the_answer(prior):
    belief = Belief(prior, "math", TAX)
    first = belief.gains()[0][0]
    follow_ups = {
        belief.update(Evidence(first.attribute, "value", value)).gains()[0][0]
        for value in (None, *TAX[first.attribute].value_ids)
    }
    assert len(follow_ups) > 1


def test_the_follow_up_check_alters_the_first_reply_and_compares_the_next_question(prior, study):
    _, profiles = study
    context = _context(profiles)
    results = [asyncio.run(run_interview(_key(i), context, prior)) for i in profiles]
    checks = [r.follow_up for r in results if r.follow_up is not None]
    assert len(checks) >= len(profiles) // 2
    assert any(c.changed for c in checks) and not all(c.changed for c in checks)
    for r in results:
        check = r.follow_up
        if check is None:
            continue
        first = r.steps[0]
        assert check.attribute == first.candidate.attribute and check.altered_reply != first.reply
        assert TAX[check.attribute].name.lower() in check.altered_reply
        # the real follow-up is the interview's second question
        assert check.original.attributes == (r.steps[1].candidate.attribute,)
        assert r.transcript.follow_up == check.to_json()
        # the altered reply, read as the interviewer reads replies, leads to check.altered
        belief = Belief(prior, context.tasks[r.transcript.key.task_id].domain, TAX)
        belief = belief.mark_asked(first.candidate)
        for evidence in read_reply(check.altered_reply, first.candidate, TAX).evidence:
            belief = belief.update(evidence)
        assert check.altered.attributes == (belief.gains()[0][0].attribute,)


def test_no_follow_up_check_with_a_budget_of_one_question(prior, study):
    _, profiles = study
    config = InterviewerConfig(max_turns=1)
    key = _key(next(iter(profiles)))
    result = asyncio.run(run_interview(key, _context(profiles), prior, config))
    assert len(result.steps) == 1 and result.follow_up is None


# -- replies -----------------------------------------------------------------------------------


def test_replies_are_read_into_evidence_and_malformed_ones_recorded():
    depth = TAX["explanation.depth"]
    asked = Candidate(depth.id)
    templated = f"About {depth.name.lower()}: I prefer brief — the main idea in a few sentences."
    reading = read_reply(templated, asked, TAX)
    assert reading.note == "answered" and not reading.malformed
    assert reading.evidence == (Evidence(depth.id, "value", "brief"),)
    none = read_reply(f"About {depth.name.lower()}: I have no particular preference.", asked, TAX)
    assert none.evidence == (Evidence(depth.id, "value", None),)
    other = TAX["style.length"]
    misrouted = read_reply(f"About {other.name.lower()}: I prefer short — x.", asked, TAX)
    assert misrouted.note == "misrouted" and misrouted.evidence[0].attribute == other.id
    free = read_reply("Honestly, thorough please.", asked, TAX)
    assert free.evidence == (Evidence(depth.id, "value", "thorough", "fallback"),)
    assert read_reply("Whatever, I don't mind.", asked, TAX).evidence[0].value is None
    for text in ("Brief or thorough, both fine.", "Purple."):
        bad = read_reply(text, asked, TAX)
        assert bad.malformed and bad.evidence == () and bad.note == "malformed"
    level = read_reply("It matters a lot to me.", Candidate(depth.id, "importance"), TAX)
    assert level.evidence == (Evidence(depth.id, "importance", "major", "fallback"),)


def test_importance_questions_are_answered_with_a_coarse_level_and_logged(prior, study):
    _, profiles = study
    instance = list(profiles)[3]
    config = InterviewerConfig(importance_questions=True, importance_weight=1.0)
    result = asyncio.run(run_interview(_key(instance), _context(profiles), prior, config))
    profile = profiles[instance]
    levels = [s for s in result.steps if s.candidate.kind == "importance"]
    assert levels, "an importance question is worth asking once a preference is found"
    for step in levels:
        weight = profile.weights[step.candidate.attribute]
        level = "minor" if weight < 0.2 else "moderate" if weight < 0.4 else "major"
        assert step.levels == ((step.candidate.attribute, level),) and step.disclosed == ()
        assert step.reading.evidence == (Evidence(step.candidate.attribute, "importance", level),)
        turn = result.transcript.turns[step.turn]
        assert turn["disclosures"][0]["importance"] == level  # as the passive user logs it


# -- episodes ----------------------------------------------------------------------------------


def test_an_offline_episode_gives_a_transcript_the_existing_scorer_accepts(prior, study):
    _, profiles = study
    instance = next(iter(profiles))
    context = _context(profiles)
    result = asyncio.run(run_interview(_key(instance), context, prior))
    transcript = result.transcript
    assert Transcript.from_json(transcript.to_json()) == transcript
    assert transcript.questions == len(result.steps) == 5 and transcript.stop == "max_turns"
    profile = profiles[instance]
    for step, turn in zip(result.steps, transcript.turns, strict=True):
        assert turn["question"] == step.question and turn["reply"] == step.reply
        assert all(profile.values[a] == v for a, v in step.disclosed)
        assert step.reading.note == "answered" and step.gain > 0
    judge = JudgeContext(
        TAX, context.tasks, profiles, build_rubrics(TAX), RunConfig(), context.model_client
    )
    row = asyncio.run(score_transcript(transcript, judge))
    assert row.condition == "discovery" and row.questions == 5 and row.pref_align is not None
    disclosed = {a for s in result.steps for a, _ in s.disclosed}
    assert set(row.disclosed) == disclosed and row.recall is not None


def test_interviews_are_deterministic(prior, study):
    _, profiles = study
    instance = list(profiles)[3]
    config = InterviewerConfig(importance_questions=True, importance_weight=1.0)
    runs = [
        asyncio.run(run_interview(_key(instance), _context(profiles), prior, config))
        for _ in range(2)
    ]
    assert runs[0].transcript.to_json() == runs[1].transcript.to_json()
    assert runs[0].to_json() == runs[1].to_json()


def test_the_interviewer_stops_when_the_gain_is_below_the_threshold(prior, study):
    _, profiles = study
    config = InterviewerConfig(min_gain=10.0)
    result = asyncio.run(
        run_interview(_key(next(iter(profiles))), _context(profiles), prior, config)
    )
    assert result.steps == () and result.stop_reason == "min_gain"
    assert result.transcript.stop == "min_gain" and result.transcript.response


def test_llm_phrasing_and_its_fallback(prior, study):
    _, profiles = study
    instance = next(iter(profiles))
    config = InterviewerConfig(phrasing="llm", max_turns=2)
    result = asyncio.run(run_interview(_key(instance), _context(profiles), prior, config))
    assert [s.phrasing for s in result.steps] == ["llm", "llm"]
    assert result.steps[0].question == template_question(result.steps[0].candidate, TAX)
    broken = {**scripted_handlers(TAX, TASKS), "phrase": lambda request: "Sure! Here it is."}
    result = asyncio.run(run_interview(_key(instance), _context(profiles, broken), prior, config))
    assert [s.phrasing for s in result.steps] == ["template-fallback"] * 2


def test_only_discovery_episodes_are_interviewed(prior, study):
    _, profiles = study
    key = EpisodeKey("m", "oracle", *next(iter(profiles)))
    with pytest.raises(DatasetError, match="discovery"):
        asyncio.run(run_interview(key, _context(profiles), prior))


# -- less helpful users ------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["terse", "vague"])
def test_every_reply_of_a_terse_or_vague_user_is_read(prior, study, style):
    _, profiles = study
    context = _context(profiles, user_style=style)
    for instance, profile in profiles.items():
        result = asyncio.run(run_interview(_key(instance), context, prior))
        for step in result.steps:
            assert not step.reading.malformed and step.reading.note == "answered", step.reply
            (evidence,) = step.reading.evidence  # these users speak about one attribute
            hidden = profile.values.get(evidence.attribute)
            if evidence.kind == "hint":  # a vague user: the value is among the hinted ones
                assert style == "vague" and hidden in evidence.among and len(evidence.among) > 1
            else:
                assert evidence.value == hidden
        assert result.transcript.stop in ("max_turns", "min_gain", "exhausted")


def test_vague_replies_are_hints_and_terse_replies_values():
    depth, tone = TAX["explanation.depth"], TAX["style.tone"]
    asked = Candidate(depth.id)
    about = "About depth of explanation:"
    rigor = "About rigor of reasoning: more towards intuitive, I guess."
    assert read_reply(rigor, Candidate("explanation.rigor"), TAX).evidence == (
        Evidence("explanation.rigor", "value", "intuitive"),  # one level on that side
    )
    cases = {
        f"{about} more towards minimal, I guess.": ("hint", ("minimal", "brief")),
        f"{about} more towards exhaustive, I guess.": ("hint", ("thorough", "exhaustive")),
        "About depth of explanation: somewhere in the middle, I guess.": ("value", "moderate"),
        "About depth of explanation: I don't really mind, I think.": ("value", None),
        "Depth of explanation: brief.": ("value", "brief"),
        "Depth of explanation: no preference.": ("value", None),
    }
    for reply, (kind, said) in cases.items():
        (evidence,) = read_reply(reply, asked, TAX).evidence
        assert evidence.kind == kind, reply
        assert (evidence.among if kind == "hint" else evidence.value) == said, reply
    reply = "About overall tone: maybe friendly tone or neutral tone, I'm not sure."
    (pair,) = read_reply(reply, Candidate(tone.id), TAX).evidence
    assert pair.kind == "hint" and set(pair.among) == {tone.values[0].value, tone.values[1].value}
    assert read_reply("Depth of explanation: purple.", asked, TAX).malformed


def test_a_hint_narrows_the_value_but_leaves_it_uncertain(prior):
    belief = Belief(prior, "math", TAX)
    depth = TAX["explanation.depth"]
    hinted = belief.update(Evidence(depth.id, "hint", None, among=("minimal", "brief")))
    pred = hinted.predictive()[TAX.ids.index(depth.id)]
    assert pred[0] == pytest.approx(0.0) and pred[1:3].sum() == pytest.approx(1.0)
    assert 0 < pred[1] < 1  # still two candidates
    # present, so worth an importance question; the hint lowers U but less than the value does
    assert Candidate(depth.id, "importance") in hinted.candidates(importance=True)
    known = belief.update(Evidence(depth.id, "value", "brief"))
    assert known.uncertainty() < hinted.uncertainty() < belief.uncertainty()
    # a later exact value replaces the hint; a hint never replaces a value
    assert hinted.update(Evidence(depth.id, "value", "brief")).hints == {}
    assert known.update(Evidence(depth.id, "hint", None, among=("minimal", "brief"))) == known
