"""Roster files (and the student files they name) with generated damage, fed to ``worlds``,
``run`` and ``play``: a named error or a working roster, never a traceback, a hang or a
runaway allocation."""

from __future__ import annotations

from pathlib import Path

import yaml
from fuzz_harness import (
    Case,
    failures,
    run_cases,
    yaml_field_damage,
    yaml_text_damage,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROSTER = {
    "base": "dev",
    "name": "fuzz",
    "description": "a small roster",
    "arrivals": 8,
    "topics": "heldout",
    "students": "profiles",
    "seeds": 4,
    "profiles": {"file": "students.yaml", "take": 2},
    "template": {"shared_taste": {"brevity": 0.3}},
    "params": {"profile_jitter": 0.25, "judge_samples": 3, "judge_position": -0.2},
}
COMMANDS = {
    "worlds": ["worlds", "r.yaml"],
    "run": ["run", "--worlds", "r.yaml", "--seeds", "0", "--policies", "random", "--jobs", "1",
            "--no-progress", "--out", "o.jsonl"],
    "play": ["play", "--world", "r.yaml", "--seed", "0", "--out", "p.html"],
}


def _no_bad_numbers(result):
    for word in ("nan", "inf"):
        if f" {word}" in result["stdout"].lower():
            return f"exit 0 printing {word!r}:\n{result['stdout'][-800:]}"
    return None


def _is_text(label: str) -> bool:
    """Damage to a free-text field: a number there is kept as its text ("nan" too)."""
    return label.split("=")[0].rsplit(".", 1)[-1] in ("description", "name")


def _damage() -> list[tuple[str, dict[str, bytes]]]:
    students = (EXAMPLES / "my_students.yaml").read_bytes()
    text = yaml.safe_dump(ROSTER, sort_keys=False)
    out = [(label, {"r.yaml": yaml.safe_dump(doc, sort_keys=False).encode()})
           for label, doc in yaml_field_damage(ROSTER)]
    out += [(label, {"r.yaml": data}) for label, data in yaml_text_damage(text)]
    student_doc = yaml.safe_load(students)
    out += [(f"students.{label}", {"students.yaml": yaml.safe_dump(doc).encode()})
            for label, doc in yaml_field_damage(student_doc)
            if label.startswith("profiles.0.")]
    out += [(f"students.{label}", {"students.yaml": data})
            for label, data in yaml_text_damage(students.decode())]
    return out


def test_damaged_roster_files():
    shared = {
        "r.yaml": yaml.safe_dump(ROSTER, sort_keys=False).encode(),
        "students.yaml": (EXAMPLES / "my_students.yaml").read_bytes(),
    }
    reference = [Case(f"ref:{name}", argv, {}, allowed=(0,)) for name, argv in COMMANDS.items()]
    done = run_cases(reference, shared)
    assert not failures(reference, done), failures(reference, done)
    damage = _damage()
    cases = [
        Case(f"{name}:{label}", argv, files, oracle=None if _is_text(label) else _no_bad_numbers)
        for name, argv in COMMANDS.items()
        for label, files in damage
    ]
    results = run_cases(cases, shared)
    problems = failures(cases, results)
    summary = "\n".join(p.splitlines()[0][:160] for p in problems)
    assert not problems, (
        f"{len(problems)} of {len(cases)} cases failed:\n{summary}\n\n" + "\n\n".join(problems[:4])
    )
