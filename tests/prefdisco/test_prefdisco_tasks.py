"""Task loaders for the five benchmark shapes (and generic), with errors naming file and line."""

from __future__ import annotations

import json

import pytest

from prefduel.prefdisco import TaskFormatError, builtin_tasks, load_tasks

ROWS = {
    "math500": {
        "problem": "What is $1+1$?",
        "solution": "...",
        "answer": "2",
        "subject": "Algebra",
        "level": 1,
        "unique_id": "test/algebra/1.json",
    },
    "medqa": {
        "question": "A 30-year-old ...?",
        "answer": "Aspirin",
        "options": {"A": "Aspirin", "B": "Heparin", "C": "Warfarin", "D": "None"},
        "meta_info": "step1",
        "answer_idx": "A",
    },
    "commonsenseqa": {
        "answerKey": "B",
        "id": "075e483d21c29a511267ef62bedc0461",
        "question": {
            "question_concept": "milk",
            "choices": [{"label": x, "text": f"place {x}"} for x in "ABCDE"],
            "stem": "Where is milk kept?",
        },
    },
    "logiqa": {
        "id": 7,
        "answer": 2,
        "text": "All cats are mammals.",
        "question": "Which follows?",
        "options": ["w", "x", "y", "z"],
    },
    "socialiqa": {
        "context": "Tracy helped a friend.",
        "question": "Why?",
        "answerA": "to be kind",
        "answerB": "to be rude",
        "answerC": "no reason",
        "label": "1",
    },
    "generic": {"question": "Capital of France?", "answer": "Paris", "domain": "commonsense"},
}
EXPECTED = {
    "math500": ("test/algebra/1.json", "math", "2", "numeric", 0),
    "medqa": ("medqa-0", "medicine", "A", "choice", 4),
    "commonsenseqa": ("075e483d21c29a511267ef62bedc0461", "commonsense", "B", "choice", 5),
    "logiqa": ("logiqa-7", "logic", "C", "choice", 4),
    "socialiqa": ("socialiqa-0", "social", "A", "choice", 3),
    "generic": ("items-0", "commonsense", "Paris", "exact", 0),
}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", list(ROWS))
def test_each_shape_loads(tmp_path, fmt):
    path = _write(tmp_path / "items.jsonl", [ROWS[fmt], ROWS[fmt] | {"id": "second"}])
    tasks = load_tasks(path, fmt, limit=1)
    assert len(tasks) == 1
    task = tasks[0]
    assert (task.id, task.domain, task.answer, task.answer_type, len(task.options)) == EXPECTED[fmt]
    assert task.source == (fmt if fmt != "generic" else "items")


def test_logiqa_context_and_socialiqa_labels_file(tmp_path):
    task = load_tasks(_write(tmp_path / "l.jsonl", [ROWS["logiqa"]]), "logiqa")[0]
    assert task.question.startswith("All cats are mammals.\nWhich follows?")
    row = dict(ROWS["socialiqa"])
    del row["label"]
    path = _write(tmp_path / "dev.jsonl", [row, row | {"context": "Other."}])
    with pytest.raises(TaskFormatError, match="separate"):
        load_tasks(path, "socialiqa")
    (tmp_path / "dev-labels.lst").write_text("2\n3\n")
    tasks = load_tasks(path, "socialiqa", labels=tmp_path / "dev-labels.lst", source="siqa")
    assert [t.answer for t in tasks] == ["B", "C"] and tasks[1].id == "siqa-1"


@pytest.mark.parametrize(
    ("fmt", "row", "fragment"),
    [
        ("math500", {"answer": "2"}, "missing field 'problem'"),
        ("medqa", ROWS["medqa"] | {"answer_idx": "F"}, "not an option label"),
        ("medqa", ROWS["medqa"] | {"options": ["a", "b"]}, "field 'options' must be"),
        ("commonsenseqa", ROWS["commonsenseqa"] | {"question": "text"}, "'question' must be"),
        ("logiqa", ROWS["logiqa"] | {"answer": 9}, "not an option index"),
        ("socialiqa", ROWS["socialiqa"] | {"label": "4"}, "must be 1, 2 or 3"),
        ("generic", {"question": "q?", "answer": "a"}, "no domain"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, fmt, row, fragment):
    path = _write(tmp_path / "bad.jsonl", [ROWS[fmt], row])
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path, fmt)
    assert "bad.jsonl, line 2" in str(info.value) and fragment in str(info.value)


def test_file_level_errors(tmp_path):
    with pytest.raises(TaskFormatError, match="does not exist"):
        load_tasks(tmp_path / "none.jsonl", "medqa")
    with pytest.raises(TaskFormatError, match="must be one of"):
        load_tasks(tmp_path / "none.jsonl", "gsm8k")
    (tmp_path / "x.jsonl").write_text('{"problem": "a", "answer": "1"}\nnot json\n')
    with pytest.raises(TaskFormatError, match=r"x\.jsonl, line 2: not valid JSON"):
        load_tasks(tmp_path / "x.jsonl", "math500")
    other = ROWS["generic"] | {"id": "a", "question": "Another question?"}
    dup = _write(tmp_path / "d.jsonl", [ROWS["generic"] | {"id": "a"}, other])
    with pytest.raises(TaskFormatError, match=r"d\.jsonl, line 2: .*'a'.* line 1"):
        load_tasks(dup, "generic")


@pytest.mark.parametrize("fmt", ["generic", "math500", "medqa"])
def test_a_line_repeated_exactly_is_one_task_with_a_warning(tmp_path, fmt):
    path = _write(tmp_path / "d.jsonl", [ROWS[fmt], ROWS[fmt]])
    with pytest.warns(UserWarning, match=r"d\.jsonl, line 2: .*line 1.*counted once"):
        tasks = load_tasks(path, fmt)
    assert len(tasks) == 1


def test_a_task_file_is_read_as_a_stream_up_to_its_limit(tmp_path):
    path = tmp_path / "big.jsonl"
    with path.open("w") as handle:
        handle.write(json.dumps(ROWS["generic"]) + "\n")
        handle.write("x" * (65 * 2**20) + "\n")  # past the limit: never read
    assert len(load_tasks(path, "generic", limit=1)) == 1
    with pytest.raises(TaskFormatError, match=r"big\.jsonl, line 2: longer than"):
        load_tasks(path, "generic")


def test_builtin_set():
    tasks = builtin_tasks()
    assert len(tasks) >= 15 and len({t.id for t in tasks}) == len(tasks)
    assert {t.domain for t in tasks} == {
        "math",
        "medicine",
        "commonsense",
        "logic",
        "social",
        "science",
    }


def test_a_labels_file_that_is_not_text_or_too_large_is_a_named_error(tmp_path):
    path = _write(tmp_path / "s.jsonl", [ROWS["socialiqa"]])
    labels = tmp_path / "labels.lst"
    labels.write_bytes(b"\xff\xfe1\n")
    with pytest.raises(TaskFormatError, match=r"labels\.lst"):
        load_tasks(path, "socialiqa", labels=labels)
    with pytest.raises(TaskFormatError, match="not a regular file"):
        load_tasks(path, "socialiqa", labels="/dev/zero")
