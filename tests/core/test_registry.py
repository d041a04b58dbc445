"""Spec strings and registries: typed settings, canonical form, errors naming the culprit."""

from __future__ import annotations

import re

import pytest

from prefduel.core.errors import SpecError, UnknownIdError
from prefduel.core.registry import Registry, Spec, parse_settings, parse_spec, split_specs


def test_parse_spec_types_values():
    spec = parse_spec("coduel:gate=off,bank=16")
    assert spec == Spec("coduel", {"gate": "off", "bank": 16})
    assert type(spec.settings["bank"]) is int
    assert type(spec.settings["gate"]) is str


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ("c=1.0", 1.0, float),
        ("c=-2", -2, int),
        ("c=1e-3", 1e-3, float),
        ("c=true", True, bool),
        ("c=False", False, bool),
        ("c=ts", "ts", str),
        ("c=a:b", "a:b", str),
    ],
)
def test_setting_values_are_typed(text, value, kind):
    got = parse_spec(f"p:{text}").settings["c"]
    assert got == value
    assert type(got) is kind


def test_spec_without_settings():
    assert parse_spec("random") == Spec("random", {})
    assert str(parse_spec("  random ")) == "random"


def test_canonical_form_sorts_settings():
    a = parse_spec("coduel:gate=off,bank=16")
    b = parse_spec("coduel:bank=16,gate=off")
    assert a == b
    assert str(a) == str(b) == "coduel:bank=16,gate=off"


@pytest.mark.parametrize(
    "text", ["coduel:gate=off,bank=16", "colstim:c=1.0", "x:flag=true,n=-3,r=ts", "random"]
)
def test_canonical_form_round_trips(text):
    spec = parse_spec(text)
    assert parse_spec(str(spec)) == spec
    assert str(parse_spec(str(spec))) == str(spec)


@pytest.mark.parametrize(
    ("text", "culprits"),
    [
        ("coduel:=3", ["''", "coduel:=3"]),  # empty key
        ("coduel:gate", ["'gate'", "key=value"]),  # missing '='
        ("coduel:gate=off,bank=1,gate=on", ["'gate'", "twice"]),  # duplicate key
        ("1coduel", ["'1coduel'", "not a valid id"]),  # bad id
        ("co duel:gate=off", ["'co duel'", "not a valid id"]),
        ("", ["''", "not a valid id"]),
        ("coduel:", ["empty settings", "coduel:"]),
        ("coduel:gate=", ["'gate'", "no value"]),
        ("coduel:bank-size=3", ["'bank-size'", "not a valid name"]),
        ("coduel:gate=off,", ["''", "key=value"]),  # trailing comma
    ],
)
def test_malformed_specs_raise_spec_error_naming_the_culprit(text, culprits):
    with pytest.raises(SpecError) as info:
        parse_spec(text)
    for culprit in culprits:
        assert culprit in str(info.value)


def test_spec_error_is_a_value_error():
    with pytest.raises(ValueError):
        parse_spec("coduel:gate")


def test_parse_settings_names_where():
    with pytest.raises(SpecError, match=re.escape("'my.py:Cls:alpha'")):
        parse_settings("alpha", where="my.py:Cls:alpha")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "random,coduel:gate=off,bank=16,notransfer",
            ["random", "coduel:gate=off,bank=16", "notransfer"],
        ),
        ("random", ["random"]),
        (" random , notransfer ,", ["random", "notransfer"]),
        (
            "my.py:Cls:alpha=2,beta=3,random,pooled:rule=ts",
            ["my.py:Cls:alpha=2,beta=3", "random", "pooled:rule=ts"],
        ),
        ("", []),
    ],
)
def test_split_specs(text, expected):
    assert split_specs(text) == expected


def _registry() -> Registry:
    reg: Registry = Registry("policy")

    @reg.register("alpha")
    def alpha(x: int = 1, mode: str = "a"):
        return ("alpha", x, mode)

    reg.register("beta", lambda: "beta")
    reg.register("gamma-2", lambda: "gamma")
    return reg


def test_registry_lists_and_builds():
    reg = _registry()
    assert reg.ids() == ["alpha", "beta", "gamma-2"]
    assert list(reg) == reg.ids()
    assert "beta" in reg and "delta" not in reg
    assert reg.make("alpha:x=5,mode=b") == ("alpha", 5, "b")
    assert reg.make(Spec("alpha", {"x": 2})) == ("alpha", 2, "a")
    assert reg.make("beta") == "beta"


def test_registry_unknown_id_lists_the_known_ids():
    reg = _registry()
    with pytest.raises(UnknownIdError) as info:
        reg.get("alpah")
    msg = str(info.value)
    assert "'alpah'" in msg
    for ident in reg.ids():
        assert ident in msg
    assert "Did you mean 'alpha'" in msg
    # it is also a KeyError, but str() is the plain message, not a quoted repr
    assert isinstance(info.value, KeyError)
    assert not msg.startswith('"')
    with pytest.raises(UnknownIdError, match="alpha, beta, gamma-2"):
        reg.make("zzz:x=1")


def test_registry_bad_setting_names_the_spec():
    reg = _registry()
    with pytest.raises(SpecError, match=r"alpha:nosuch=1"):
        reg.make("alpha:nosuch=1")


def test_registry_rejects_conflicting_or_invalid_ids():
    reg = _registry()
    with pytest.raises(SpecError, match="already registered"):
        reg.register("beta", lambda: "other")
    with pytest.raises(SpecError, match="not a valid policy id"):
        reg.register("bad id", lambda: None)
    # registering the very same object twice is harmless (module reloads)
    factory = reg.get("beta")
    reg.register("beta", factory)
    assert reg.get("beta") is factory
