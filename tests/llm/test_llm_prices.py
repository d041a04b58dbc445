"""Price tables: the shipped example, user overrides, glob patterns, validation, warnings."""

from __future__ import annotations

import tomllib
import warnings
from importlib import resources
from pathlib import Path

import pytest

from prefduel.llm import (
    PriceTable,
    PriceTableError,
    UnknownModelPriceWarning,
    default_prices,
    estimate_tokens,
    load_prices,
)
from prefduel.llm.prices import PRICES_ENV, ModelPrice

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_table_is_package_data():
    """Installed (non-editable) copies need the YAML declared as package data in pyproject."""
    assert resources.files("prefduel.llm").joinpath("data/prices.yaml").is_file()
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("not running from a source checkout")
    package_data = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]
    assert "data/*.yaml" in package_data.get("prefduel.llm", []), (
        'add  "prefduel.llm" = ["data/*.yaml"]  to [tool.setuptools.package-data]'
    )


def test_shipped_examples():
    table = default_prices()
    assert table.currency == "USD"
    assert table.cost("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.15 + 0.60)
    assert table.lookup("gpt-4o-mini-2024-07-18") == table.lookup("gpt-4o-mini")  # pattern
    assert table.cost("SmolLM2-135M-Instruct-Q8_0.gguf", 10**6, 10**6) == 0.0
    assert table.known("gpt-4.1-nano")


def test_exact_name_beats_patterns_and_longest_pattern_wins():
    table = PriceTable(
        {"gpt-*": ModelPrice(1, 1), "gpt-4o-*": ModelPrice(2, 2), "gpt-4o-x": ModelPrice(3, 3)}
    )
    assert table.lookup("gpt-4o-x").input == 3
    assert table.lookup("gpt-4o-y").input == 2
    assert table.lookup("gpt-3").input == 1
    assert table.lookup("claude") is None


def test_user_file_extends_or_replaces(tmp_path, monkeypatch):
    user = tmp_path / "prices.yaml"
    user.write_text(
        "currency: EUR\nmodels:\n  gpt-4o-mini: {input: 1, output: 2}\n"
        "  mine: {input: 0.5, output: 0.5}\n"
    )
    table = load_prices(user)
    assert table.currency == "EUR"
    assert table.lookup("gpt-4o-mini") == ModelPrice(1.0, 2.0)
    assert table.known("mine") and table.known("gpt-4o")  # shipped entries kept
    user.write_text("replace: true\nmodels:\n  mine: {input: 0.5, output: 0.5}\n")
    assert not load_prices(user).known("gpt-4o")
    monkeypatch.setenv(PRICES_ENV, str(user))
    assert load_prices().known("mine")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("- a\n- b\n", "expected a mapping"),
        ("models: [1, 2]\n", "'models' must map"),
        ("models:\n  m: {input: 1}\n", "model 'm': expected {input: X, output: Y}"),
        ("models:\n  m: {input: one, output: 1}\n", "model 'm': input must be a number"),
        ("models:\n  m: {input: -1, output: 1}\n", "model 'm': input must be finite and >= 0"),
        (
            "models:\n  m: {input: 1, output: 1.0e+300}\n",
            "model 'm': output must be at most 1,000,000 per million tokens",
        ),
        ("colour: red\n", "unknown top-level keys ['colour']"),
        ("replace: maybe\n", "replace must be true or false"),
        ("models: {m: [unclosed\n", "not valid YAML"),
    ],
)
def test_malformed_files_name_file_and_model(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(PriceTableError) as info:
        load_prices(path)
    assert fragment in str(info.value) and "bad.yaml" in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(PriceTableError, match="does not exist"):
        load_prices(tmp_path / "nope.yaml")


def test_unknown_model_costs_zero_and_warns_once_per_table():
    table = PriceTable({}, source="mine.yaml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert table.cost("x", 100, 100) == 0.0
        assert table.cost("x", 100, 100) == 0.0
        assert table.cost("y", 1, 1, warn=False) == 0.0
    assert len(caught) == 1 and issubclass(caught[0].category, UnknownModelPriceWarning)
    assert "'x'" in str(caught[0].message) and "mine.yaml" in str(caught[0].message)


def test_estimate_tokens():
    assert estimate_tokens("") == 1
    assert estimate_tokens("abcd" * 10) == 10
