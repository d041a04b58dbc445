"""Accuracy matchers: multiple choice, numeric, exact; undecided cases go to the grader."""

from __future__ import annotations

import pytest

from prefduel.prefdisco import Task, builtin_tasks, match_answer
from prefduel.prefdisco.episode.matching import extract_final_answer, parse_number

MC = Task(
    "mc",
    "t",
    "medicine",
    "Which artery?",
    "C",
    "choice",
    (("A", "Left anterior descending"), ("B", "Left circumflex"), ("C", "Right coronary artery")),
)
NUM = Task("n", "t", "math", "Width?", "7", "numeric")
FRAC = Task("f", "t", "math", "Ratio?", "\\frac{14}{3}", "numeric")
EXACT = Task("e", "t", "math", "Point?", "(3, \\frac{\\pi}{2})", "exact")
FREE = Task("x", "t", "social", "Explain.", "Because she cared.", "free")


@pytest.mark.parametrize(
    ("task", "response", "correct", "method"),
    [
        (MC, "Reasoning...\nFinal answer: C", True, "choice"),
        (MC, "Final answer: (C) Right coronary artery", True, "choice"),
        (MC, "Final answer: **C.**", True, "choice"),
        (MC, "Final answer: Right coronary artery", True, "choice"),
        (MC, "so the answer is (B)", False, "choice"),
        (MC, "Final answer: option A", False, "choice"),
        (MC, "Final answer: B\n...\nFinal answer: C", True, "choice"),  # the last one counts
        (MC, "I think the right coronary artery.", None, "none"),
        (NUM, "Final answer: 7", True, "numeric"),
        (NUM, "Final answer: 7 meters", True, "numeric"),
        (NUM, "Final answer: 7.0", True, "numeric"),
        (NUM, "Final answer: $x = 7$", True, "numeric"),
        (NUM, "the width is \\boxed{7}", True, "numeric"),
        (NUM, "Final answer: 8", False, "numeric"),
        (NUM, "Final answer: seven", None, "none"),
        (NUM, "no final line here", None, "none"),
        (FRAC, "Final answer: 14/3", True, "numeric"),
        (FRAC, "Final answer: \\dfrac{14}{3}", True, "numeric"),
        (FRAC, "Final answer: 4.6666667", True, "numeric"),
        (FRAC, "Final answer: 4.67", False, "numeric"),
        (EXACT, "Final answer: $(3, \\frac{\\pi}{2})$", True, "exact"),
        (EXACT, "Final answer: \\left(3, \\dfrac{\\pi}{2}\\right)", True, "exact"),
        (EXACT, "Final answer: (3, pi/2)", None, "none"),  # maybe equivalent: ask the grader
        (FREE, "Final answer: Because she cared.", None, "none"),
    ],
)
def test_match_answer(task, response, correct, method):
    match = match_answer(task, response)
    assert (match.correct, match.method) == (correct, method)


def test_number_parsing():
    assert parse_number("1,234") == 1234
    assert parse_number("50%") == 50
    assert parse_number("4 m/s^2") == 4
    assert parse_number("-2.5") == -2.5
    assert parse_number("(3, 4)") is None
    assert parse_number("\\sqrt{2}") is None
    assert parse_number("1/0") is None
    assert extract_final_answer("Final Answer is: 12.") == "12"


def test_builtin_answers_match_themselves():
    for task in builtin_tasks():
        reference = f"({task.answer}) {task.answer_text}" if task.options else task.answer
        assert match_answer(task, f"Final answer: {reference}").correct is True, task.id
