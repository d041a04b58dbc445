"""Helpers shared by the datagen tests (imported by name: ``tests/datagen`` is on ``sys.path``)."""

from __future__ import annotations

import dataclasses
import secrets
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from prefduel.datagen import DatagenConfig, config_from_mapping
from prefduel.llm import read_call_log

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "examples" / "small.yaml"
#: A unique fake API key for this test session: it must never appear in a file.
FAKE_KEY = "sk-pbdatagen-" + secrets.token_hex(16)
KEY_ENV = "PREFDUEL_DATAGEN_TEST_KEY"


def tiny_mapping(**overrides: Any) -> dict[str, Any]:
    """A config of 2 students x 6 questions x 6 personas, 1 judge sample (768 calls)."""
    data: dict[str, Any] = {
        "name": "tiny",
        "seed": 3,
        "topics": {"builtin": "dev", "take": ["derivatives"]},
        "students": {"builtin": "dev", "take": ["math_major", "anxious_high_schooler"]},
        "samples": 1,
        "world": {"arrivals": 8, "rounds": 6},
    }
    data.update(overrides)
    return data


def tiny_config(tmp_path: Path, **overrides: Any) -> DatagenConfig:
    """:func:`tiny_mapping` as a config whose cache, call log and output are under tmp_path."""
    config = config_from_mapping(tiny_mapping(**overrides), source="tiny.yaml")
    llm = dataclasses.replace(
        config.llm, cache=str(tmp_path / "cache.sqlite"), call_log=str(tmp_path / "calls.jsonl")
    )
    return dataclasses.replace(config, llm=llm, output=str(tmp_path / "world"))


def expected_calls(config: DatagenConfig) -> dict[str, int]:
    """Calls per stage of a run without malformed answers (with the ask stages when the
    students are asked: a level question per style dimension, a pair question per persona
    pair, a least question per kind)."""
    q, k, i = config.n_questions, config.K, len(config.students)
    calls = {
        "questions": q,
        "answers": q * k,
        "rater": q,
        "judge": i * q * (k * (k - 1) // 2) * 4 * config.samples,
    }
    if config.asks:
        m = len(config.style)
        calls["loadings"] = m
        calls["asks"] = i * (m + k * (k - 1) // 2 + len(config.kinds))
    return calls


def cache_rows(path: Path | str) -> int:
    """Answers in a cache file (0 while it is being created)."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:  # no file or no table yet
        return 0


def ok_per_key(log: Path | str) -> Counter[str]:
    """Call-log ``ok`` lines (calls answered by the backend) per request key."""
    return Counter(r["key"] for r in read_call_log(log) if r["status"] == "ok")


def files_containing(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    data = needle.encode("utf-8")
    return [p for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


class InterruptOnCall:
    """Backend mixin: Ctrl-C (KeyboardInterrupt) on the ``k``-th ``complete`` call."""

    k = 0
    calls = 0

    async def complete(self, request):
        self.calls += 1
        if self.calls == self.k:
            raise KeyboardInterrupt
        return await super().complete(request)


def write_server_config(path: Path, name: str) -> Path:
    """A small datagen config for the OpenAI-compatible test server (key from ``KEY_ENV``)."""
    path.write_text(
        yaml.safe_dump(
            {
                "name": name,
                "personas": {"builtin": True, "take": 3},
                "topics": [{"id": "limits", "chains": ["limits"]}],
                "students": {"builtin": "dev", "take": ["math_major", "anxious_high_schooler"]},
                "samples": 1,
                "world": {"arrivals": 4, "rounds": 3},
                "llm": {"backend": "openai", "api_key_env": KEY_ENV, "timeout": 5},
            }
        )
    )
    return path
