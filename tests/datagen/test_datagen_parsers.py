"""Answer parsers and template parsing."""

from __future__ import annotations

import pytest

from prefduel.datagen.prompts import (
    DEFAULT_TEMPLATES,
    TemplateParser,
    check_template,
    parse_answer,
    parse_pick,
    parse_question,
    parse_scores,
)


@pytest.mark.parametrize(
    ("text", "pick"),
    [
        ("A", "A"),
        (" b\n", "B"),
        ("**A**", "A"),
        ('"B".', "B"),
        ("(A)", "A"),
        ("Answer B", "B"),
        ("answer: a", "A"),
        ("I prefer B because it is shorter.", "B"),
        ("I would choose answer A.", "A"),
        ("B - it shows the steps", "B"),
        ("", None),
        ("Both are fine.", None),
        ("A and B are equally good.", None),
        ("I can't decide, both are helpful.", None),
        ("C", None),
        ("AB", None),
    ],
)
def test_parse_pick(text, pick):
    assert parse_pick(text) == pick


IDS = ["concise_coach", "storyteller", "socratic_guide"]


@pytest.mark.parametrize(
    ("text", "scores"),
    [
        ('{"concise_coach": 7, "storyteller": 3, "socratic_guide": 10}', [7, 3, 10]),
        (
            'Here you go:\n```json\n{"Concise_Coach": "8", "storyteller": 2.5, '
            '"socratic_guide": "6/10"}\n```',
            [8, 2.5, 6],
        ),
        ("- concise_coach: 4\n- storyteller = 5\n- socratic_guide: 9/10", [4, 5, 9]),
        ('{"concise_coach": 7, "storyteller": 3}', None),  # one missing
        ('{"concise_coach": 7, "storyteller": 3, "socratic_guide": 11}', None),  # out of range
        ('{"concise_coach": true, "storyteller": 3, "socratic_guide": 1}', None),
        ("They all seem reasonable to me.", None),
        ('```json\n{ "scores": ', None),
    ],
)
def test_parse_scores(text, scores):
    parsed = parse_scores(text, IDS, (1.0, 10.0))
    if scores is None:
        assert parsed is None
    else:
        assert parsed == dict(zip(IDS, [float(s) for s in scores], strict=True))


def test_parse_question_and_answer():
    cue = "Keep it short, I have two minutes."
    assert parse_question('  "What is a derivative?"  ', cue) == f"What is a derivative? {cue}"
    assert parse_question(f"Question: What is a limit? {cue}", cue) == f"What is a limit? {cue}"
    assert parse_question("**Q:** Why?\n\nKeep it short,  I have two minutes.", cue) == (
        f"Why? {cue}"
    )
    assert parse_question("   ", cue) is None
    assert parse_question("x" * 5000, cue) is None
    assert parse_answer("  Fine.  ") == "Fine."
    assert parse_answer(" \n ") is None


def test_template_parser_inverts_rendering():
    template = DEFAULT_TEMPLATES["judge_user"]
    values = {
        "question": "Why is the sky blue? A real-world example would help.",
        "label_1": "B",
        "answer_1": "[storyteller] Picture a sunset...",
        "label_2": "A",
        "answer_2": "[concise_coach] Rayleigh scattering.\nShort waves scatter more.",
    }
    assert TemplateParser(template).parse(template.format_map(values)) == values
    assert TemplateParser(template).parse("something else") is None
    repeated = TemplateParser("{x} and {{literal}} then {x} again {y}")
    assert repeated.parse("1 and {literal} then 1 again 2") == {"x": "1", "y": "2"}
    assert repeated.parse("1 and {literal} then 3 again 2") is None


def test_default_templates_pass_their_own_checks():
    for name, template in DEFAULT_TEMPLATES.items():
        check_template(name, template)
    with pytest.raises(ValueError, match="format spec"):
        check_template("answer_user", "{question:>10}")


def test_an_answer_longer_than_its_token_limit_allows_is_malformed():
    """An endpoint that ignores max_tokens: its answers would go, two by two, into thousands of
    judge prompts at once."""
    assert parse_answer("x" * 3200, max_tokens=400) == "x" * 3200  # 8 characters a token
    assert parse_answer("x" * 3201, max_tokens=400) is None
    assert parse_answer("x" * 100_000) == "x" * 100_000  # no limit set: 8 x 16,384 characters
    assert parse_answer("x" * 131_073) is None


def test_a_run_whose_answers_overrun_max_tokens_writes_no_world(tmp_path):
    from pb_datagen_helpers import tiny_config

    from prefduel.datagen import DatagenError, ScriptedWorld, generate
    from prefduel.llm import LLMClient, ScriptedBackend

    config = tiny_config(tmp_path)
    handlers = dict(ScriptedWorld(config).handlers())
    handlers["answer"] = lambda request: "an answer that never ends " * 2000
    client = LLMClient(ScriptedBackend(handlers=handlers), cache=config.llm.cache)
    with client, pytest.raises(DatagenError, match="only 0 usable questions"):
        generate(config, client=client, progress=False)
    summary = (tmp_path / "world" / "datagen" / "summary.json").read_text()
    assert '"answers": ' in summary and "only 0 usable questions" in summary
