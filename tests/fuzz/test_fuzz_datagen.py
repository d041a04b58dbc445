"""Datagen configs with generated damage, fed to ``datagen --dry-run`` (every case) and to a
full offline ``datagen`` (a seeded sample, and every huge value): a named error or a world that
loads, never a traceback, a hang, a runaway allocation or exit 0 with a number that cannot be
right.

The base is ``examples/small.yaml`` shrunk so that a full scripted run takes a fraction of a
second: one topic (6 questions), 3 personas, 1 judge sample, 8 arrivals of 6 rounds, with the
settings it leaves at their defaults written out. It references no input files (its collections
are the packaged ones), so a variant that reads its students from ``examples/my_students.yaml``
carries the damage to a collection file.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import yaml
from fuzz_harness import Case, failures, run_cases, yaml_field_damage, yaml_text_damage

from prefduel.datagen.prompts import DEFAULT_TEMPLATES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: Cases of the full run: a seeded sample of the damage (and every huge value).
FULL_RUNS = 30
DRY = ["datagen", "c.yaml", "--dry-run"]
FULL = ["datagen", "c.yaml", "--no-progress"]


def _base() -> dict:
    """``examples/small.yaml``, shrunk (see the module docstring), with the settings it leaves
    at their defaults written out, so that they are damaged too."""
    doc = yaml.safe_load((EXAMPLES / "small.yaml").read_text(encoding="utf-8"))
    doc["personas"] = {"builtin": "builtin", "take": 3}
    doc["topics"] = {"builtin": "dev", "take": ["derivatives"]}
    doc["samples"] = 1
    doc["world"] = {"arrivals": 8, "rounds": 6}
    doc["llm"].update(timeout=60, max_attempts=6)
    doc.update(
        cache="cache.sqlite",
        call_log="calls.jsonl",
        judge={"mode": "samples", "top_logprobs": 5, "min_valid": 0.5},
        rater={"scale": [1, 10]},
        bt={"ridge": 0.01, "scale": 8.0},
        scripted={"judge_beta": 0.8, "judge_malformed": 0.0, "latency": 0.0},
        prompts={"judge_system": DEFAULT_TEMPLATES["judge_system"]},
    )
    doc["models"]["judge"]["params"] = {"top_p": 0.9}
    return doc


#: Where the output names the world (a name such as ``nan`` is text, not a number).
NAMES = re.compile(r"dry run: \S+ \(|--worlds \S+|^world \S+:|^datagen \S+:", re.MULTILINE)


def _no_bad_numbers(result: dict) -> str | None:
    numbers = NAMES.sub("", result["stdout"]).lower()
    for word in ("nan", "inf"):
        if re.search(rf"(?<![a-z]){word}(?![a-z])", numbers):
            return f"exit 0 printing {word!r}:\n{result['stdout'][-800:]}"
    return None


def _world_loads(result: dict) -> str | None:
    """The world the summary names loads (digests, shapes, probabilities checked)."""
    from prefduel.worlds import load_world

    complaint = _no_bad_numbers(result)
    if complaint:
        return complaint
    found = re.search(r"^world (.+?): N=", result["stdout"], re.MULTILINE)
    if found is None:
        return f"exit 0 without naming the world written:\n{result['stdout'][-800:]}"
    path = Path(result["folder"]) / found.group(1)
    try:
        world = load_world(str(path))
    except Exception as exc:  # any failure to load is the complaint
        return f"the world written does not load: {type(exc).__name__}: {exc}"
    for name in ("P", "U", "Phi"):
        if not np.isfinite(getattr(world, name)).all():
            return f"the world written has non-finite {name}"
    return None


def _damage(base: dict) -> list[tuple[str, dict[str, bytes]]]:
    """Damage to the config, and to a students file that a variant of it reads."""
    text = yaml.safe_dump(base, sort_keys=False)
    out = [(label, {"c.yaml": yaml.safe_dump(doc, sort_keys=False).encode()})
           for label, doc in yaml_field_damage(base)]
    out += [(label, {"c.yaml": data}) for label, data in yaml_text_damage(text)]
    variant = yaml.safe_dump({**base, "students": {"file": "s.yaml", "take": 2}}).encode()
    students = (EXAMPLES / "my_students.yaml").read_text(encoding="utf-8")
    out += [(f"students.{label}", {"c.yaml": variant, "s.yaml": yaml.safe_dump(doc).encode()})
            for label, doc in yaml_field_damage(yaml.safe_load(students))
            if label.startswith(("profiles.0.", "profiles.1.taste."))]
    out += [(f"students.{label}", {"c.yaml": variant, "s.yaml": data})
            for label, data in yaml_text_damage(students)]
    return out


def test_damaged_datagen_configs():
    base = _base()
    shared = {
        "c.yaml": yaml.safe_dump(base, sort_keys=False).encode(),
        "s.yaml": (EXAMPLES / "my_students.yaml").read_bytes(),
    }
    reference = [
        Case("ref:dry-run", DRY, {}, allowed=(0,), oracle=_no_bad_numbers),
        Case("ref:full", FULL, {}, allowed=(0,), oracle=_world_loads, keep=True),
    ]
    done = run_cases(reference, shared)
    assert not failures(reference, done), failures(reference, done)
    damage = _damage(base)
    rng = np.random.default_rng(0)
    sample = set(rng.choice(len(damage), size=min(FULL_RUNS, len(damage)), replace=False).tolist())
    # and every huge size: what a full run allocates, sleeps or waits for
    sample |= {i for i, (label, _) in enumerate(damage) if label.endswith(("=huge", "=huger"))}
    cases = [Case(f"dry:{label}", DRY, files, oracle=_no_bad_numbers)
             for label, files in damage]
    cases += [Case(f"full:{label}", FULL, files, oracle=_world_loads, keep=True)
              for i, (label, files) in enumerate(damage) if i in sample]
    results = run_cases(cases, shared)
    problems = failures(cases, results)
    summary = "\n".join(p.splitlines()[0][:160] for p in problems)
    assert not problems, (
        f"{len(problems)} of {len(cases)} cases failed:\n{summary}\n\n" + "\n\n".join(problems[:5])
    )
