"""Every built-in policy declares each of its settings once (``SETTINGS``), and the schema
layer checks them: no constructor validates by hand."""

from __future__ import annotations

import inspect

import pytest

from prefduel.core.errors import SpecError
from prefduel.policies import POLICIES
from prefduel.policies.base import declared_settings


@pytest.mark.parametrize("ident", POLICIES.ids())
def test_every_constructor_setting_is_declared(ident):
    cls = POLICIES.get(ident)
    params = {
        name
        for name, param in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
    }
    undeclared = params - set(declared_settings(cls))
    assert not undeclared, f"{ident}: settings not declared in SETTINGS: {undeclared}"


@pytest.mark.parametrize("ident", POLICIES.ids())
def test_defaults_pass_the_declared_checks(ident):
    POLICIES.make(ident)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("notransfer:prior_var=nan", "notransfer: prior_var: expected a number, got 'nan'"),
        ("coduel:ridge=inf", "coduel: ridge: expected a number, got 'inf'"),
        ("coldb:refit=1.5", "coldb: refit: expected an integer, got 1.5"),
        ("hier-ts:meta_var=0", "hier-ts: meta_var: expected a number > 0"),
    ],
)
def test_a_bad_setting_names_the_policy_and_the_setting(spec, message):
    from prefduel.policies.loading import resolve_spec

    with pytest.raises(SpecError, match=message):
        resolve_spec(spec).build()
