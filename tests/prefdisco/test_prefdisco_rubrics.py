"""Rubrics: templated anchors for every level of every value; LLM refinement, validated."""

from __future__ import annotations

import asyncio
import json

import pytest

from prefduel.llm import LLMClient, ScriptedBackend
from prefduel.prefdisco import build_rubrics, load_taxonomy, refine_rubrics, template_rubric
from prefduel.prefdisco.dataset.rubrics import load_rubrics, save_rubrics, validate_anchors

TAX = load_taxonomy()


def test_every_value_has_a_valid_templated_rubric():
    rubrics = build_rubrics(TAX)
    assert len(rubrics) == sum(len(a.values) for a in TAX)
    for (attr, value), rubric in rubrics.items():
        label = TAX[attr].value(value).label
        assert validate_anchors(rubric.anchors, label) == [], (attr, value)
        assert rubric.source == "template"
    depth = template_rubric(TAX["explanation.depth"], "minimal")
    assert "'exhaustive'" in depth.anchor(1) and "'minimal'" in depth.anchor(5)
    assert "'brief'" in depth.anchor(4)  # the neighbour it drifts toward
    with pytest.raises(ValueError):
        depth.anchor(0)


def test_rubric_file_round_trip(tmp_path):
    rubrics = build_rubrics(TAX, [("style.length", "short"), ("structure.format", "table")])
    save_rubrics(tmp_path / "r.jsonl", rubrics)
    assert load_rubrics(tmp_path / "r.jsonl", TAX) == rubrics


def _client(tmp_path, reply):
    return LLMClient(ScriptedBackend({"rubric": reply}), cache=tmp_path / "c.sqlite")


def test_refinement_kept_when_valid(tmp_path):
    def reply(request):
        return json.dumps(
            {
                str(s): f"Score {s}: the response is clearly 'short' or not, level {s}."
                for s in range(1, 6)
            }
        )

    rubrics = build_rubrics(TAX, [("style.length", "short")])
    with _client(tmp_path, reply) as client:
        refined = asyncio.run(refine_rubrics(rubrics, TAX, client, "writer"))
    rubric = refined[("style.length", "short")]
    assert rubric.source == "llm" and rubric.model == "writer" and rubric.error is None
    assert rubric.anchor(3).startswith("Score 3")


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        ("Here is a better rubric: be good.", "not a JSON object"),
        (json.dumps({"1": "x", "2": "y", "3": "z", "4": "w", "5": "v"}), "characters"),
        (json.dumps({str(s): "The very same anchor text." for s in range(1, 6)}), "differ"),
        (
            json.dumps({str(s): f"Anchor number {s} without the label." for s in range(1, 6)}),
            "must name the target value",
        ),
    ],
)
def test_invalid_refinements_keep_the_template(tmp_path, reply, fragment):
    rubrics = build_rubrics(TAX, [("style.length", "short")])
    with _client(tmp_path, lambda request: reply) as client:
        refined = asyncio.run(refine_rubrics(rubrics, TAX, client, "writer", attempts=2))
    rubric = refined[("style.length", "short")]
    assert rubric.source == "template" and rubric.anchors == rubrics[rubric.key].anchors
    assert fragment in rubric.error
