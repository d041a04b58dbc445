"""The taxonomy: shipped as package data, typed and validated, keyword-routable."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest
import yaml

from prefduel.prefdisco import KeywordRouter, TaxonomyError, load_taxonomy
from prefduel.prefdisco.dataset.taxonomy import FAMILIES, taxonomy_from_json

ROOT = Path(__file__).resolve().parents[2]
DATA = ("taxonomy.yaml", "persona_space.yaml", "tasks.yaml")


def test_the_data_files_are_package_data():
    """Installed (non-editable) copies need the YAML declared as package data in pyproject."""
    package = resources.files("prefduel.prefdisco")
    for name in DATA:
        assert package.joinpath(f"data/{name}").is_file(), name
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip("not running from a source checkout")
    package_data = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["package-data"]
    assert "data/*.yaml" in package_data.get("prefduel.prefdisco", []), (
        'add  "prefduel.prefdisco" = ["data/*.yaml"]  to [tool.setuptools.package-data]'
    )


def test_shipped_taxonomy_shape():
    tax = load_taxonomy()
    assert tax.version == "1.0.0"
    assert 30 <= len(tax) <= 40
    assert {a.family for a in tax} == set(FAMILIES)
    assert len(set(tax.ids)) == len(tax)
    for a in tax:
        assert a.id.startswith(a.family + ".")
        assert len(a.values) >= 2 and a.default in a.value_ids
        assert a.kind in ("ordinal", "categorical")
        assert any(a.relevance_for(d) > 0 for d in tax.domains)
    assert tax["explanation.analogies"].distance("none", "frequent") == 1.0
    assert tax["explanation.depth"].distance("minimal", "brief") == 0.25
    assert tax["structure.format"].distance("prose", "table") == 1.0
    assert tax.by_name("use of ANALOGIES").id == "explanation.analogies"
    assert len(tax.digest) == 16 and tax.digest == load_taxonomy().digest


def test_every_natural_question_routes_to_its_attribute():
    tax = load_taxonomy()
    router = KeywordRouter(tax)
    wrong = {a.id: router.route_sync(a.question) for a in tax}
    assert {k: v for k, v in wrong.items() if v.attributes != (k,)} == {}


def _edit(mutate):
    data = yaml.safe_load(
        resources.files("prefduel.prefdisco")
        .joinpath("data/taxonomy.yaml")
        .read_text(encoding="utf-8")
    )
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d["attributes"].append(dict(d["attributes"][0])), "duplicate attribute id"),
        (lambda d: d["attributes"][0].update(default="nope"), "default 'nope'"),
        (lambda d: d["attributes"][0]["levels"][0].update(including="x"), "unknown keys"),
        (lambda d: d["attributes"][0].update(kind="fuzzy"), "kind must be one of"),
        (lambda d: d["attributes"][0].update(relevance={"mars": 1}), "unknown key 'mars'"),
        (lambda d: d["attributes"][0].update(loadings={"charisma": 1}), "unknown key"),
        (lambda d: d.update(version="one"), "version must be"),
        (lambda d: d["attributes"][1].update(id="Bad-Id"), "must look like family.name"),
    ],
)
def test_malformed_taxonomies_name_the_attribute(mutate, fragment):
    with pytest.raises(TaxonomyError) as info:
        taxonomy_from_json(_edit(mutate), source="my.yaml")
    assert fragment in str(info.value) and "my.yaml" in str(info.value)


def test_unknown_ids_and_values(tmp_path):
    tax = load_taxonomy()
    with pytest.raises(TaxonomyError, match=r"unknown attribute 'style\.sparkle'"):
        tax["style.sparkle"]
    with pytest.raises(TaxonomyError, match="expected one of"):
        tax.check_value("style.length", "gigantic")
    with pytest.raises(TaxonomyError, match="does not exist"):
        load_taxonomy(tmp_path / "none.yaml")
    (tmp_path / "bad.yaml").write_text("attributes: [unclosed\n")
    with pytest.raises(TaxonomyError, match="not valid YAML"):
        load_taxonomy(tmp_path / "bad.yaml")
