"""Building policies from specs: registered ids, user files, modules; errors name the policy."""

from __future__ import annotations

import textwrap

import pytest

from prefduel.core.errors import SpecError, UnknownIdError
from prefduel.policies import POLICIES, canonical_spec, load_policy, resolve_policy
from prefduel.policies.linear import NoTransfer, Pooled
from prefduel.policies.random_pairs import RandomPolicy

USER_POLICY = textwrap.dedent(
    """
    from prefduel.policies import Policy

    class MyPolicy(Policy):
        name = "mine"

        def __init__(self, alpha=1, mode="x"):
            self.alpha = alpha
            self.mode = mode

        def select(self, Phi):
            return 0, 1

    class NoSelect:
        def __init__(self, alpha=1):
            self.alpha = alpha
    """
)


@pytest.fixture
def user_file(tmp_path):
    path = tmp_path / "my_policy.py"
    path.write_text(USER_POLICY)
    return path


def test_registered_ids():
    assert {"random", "notransfer", "pooled"} <= set(POLICIES.ids())
    assert isinstance(load_policy("random"), RandomPolicy)
    assert isinstance(load_policy("pooled"), Pooled)
    policy = load_policy("notransfer:rule=ts,prior_var=2.5")
    assert isinstance(policy, NoTransfer)
    assert (policy.rule, policy.prior_var) == ("ts", 2.5)


def test_canonical_spec_sorts_settings():
    assert canonical_spec("notransfer:rule=ts,prior_var=2") == "notransfer:prior_var=2,rule=ts"
    assert canonical_spec(" random ") == "random"


def test_load_from_file(user_file):
    policy = load_policy(f"{user_file}:MyPolicy")
    assert type(policy).__name__ == "MyPolicy"
    assert (policy.alpha, policy.mode) == (1, "x")
    assert canonical_spec(f"{user_file}:MyPolicy") == f"{user_file}:MyPolicy"


def test_load_from_file_with_settings(user_file):
    policy = load_policy(f"{user_file}:MyPolicy:mode=y,alpha=2")
    assert policy.alpha == 2 and type(policy.alpha) is int
    assert policy.mode == "y"
    assert canonical_spec(f"{user_file}:MyPolicy:mode=y,alpha=2") == (
        f"{user_file}:MyPolicy:alpha=2,mode=y"
    )


def test_two_files_with_the_same_class_name_stay_apart(tmp_path, user_file):
    other = tmp_path / "sub" / "my_policy.py"
    other.parent.mkdir()
    other.write_text(USER_POLICY.replace('name = "mine"', 'name = "other"'))
    assert load_policy(f"{user_file}:MyPolicy").name == "mine"
    assert load_policy(f"{other}:MyPolicy").name == "other"


def test_load_from_module():
    policy = load_policy("prefduel.policies.random_pairs:RandomPolicy")
    assert isinstance(policy, RandomPolicy)
    factory, settings, canonical = resolve_policy(
        "prefduel.policies.linear:NoTransfer:rule=ts"
    )
    assert factory is NoTransfer and settings == {"rule": "ts"}
    assert canonical == "prefduel.policies.linear:NoTransfer:rule=ts"
    assert load_policy("prefduel.policies.linear:NoTransfer:rule=ts").rule == "ts"


@pytest.mark.parametrize("spec", ["notransfr", "notransfr:rule=ts", "randm", "nosuchthing:Cls"])
def test_unknown_id_lists_known_ids(spec):
    with pytest.raises(UnknownIdError) as info:
        load_policy(spec)
    msg = str(info.value)
    for ident in POLICIES.ids():
        assert ident in msg
    assert repr(spec.split(":")[0]) in msg


def test_unknown_id_suggests_the_closest():
    with pytest.raises(UnknownIdError, match="Did you mean 'notransfer'"):
        load_policy("notransfr")


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.py"
    with pytest.raises(SpecError) as info:
        load_policy(f"{missing}:MyPolicy")
    assert str(missing) in str(info.value)
    assert "does not exist" in str(info.value)


def test_missing_class(user_file):
    with pytest.raises(SpecError) as info:
        load_policy(f"{user_file}:Nope")
    assert "'Nope'" in str(info.value)
    assert str(user_file) in str(info.value)


def test_missing_module():
    with pytest.raises(SpecError, match=r"no_such_pkg\.policies"):
        load_policy("no_such_pkg.policies:Cls")


def test_file_that_fails_to_import(tmp_path):
    bad = tmp_path / "broken.py"
    bad.write_text("raise RuntimeError('cannot import me')\n")
    with pytest.raises(SpecError) as info:
        load_policy(f"{bad}:Cls")
    assert "cannot import me" in str(info.value) and str(bad) in str(info.value)


def test_object_without_select(user_file):
    with pytest.raises(SpecError) as info:
        load_policy(f"{user_file}:NoSelect:alpha=3")
    assert "select()" in str(info.value) and "NoSelect" in str(info.value)


def test_empty_spec():
    with pytest.raises(SpecError, match="empty"):
        load_policy("  ")


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        ("notransfer:rule=bogus", ["notransfer:rule=bogus", "'bogus'", "rule"]),
        ("notransfer:prior_var=-1", ["notransfer:prior_var=-1", "prior_var", "-1"]),
        ("notransfer:prior_var=big", ["notransfer:prior_var=big", "prior_var"]),
        ("notransfer:nosuch=1", ["notransfer:nosuch=1", "nosuch"]),
        ("random:alpha=1", ["random:alpha=1", "alpha"]),
        ("pooled:rule", ["pooled:rule", "key=value"]),
    ],
)
def test_bad_settings_name_the_policy(spec, fragments):
    with pytest.raises(SpecError) as info:
        load_policy(spec)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_bad_setting_for_a_file_policy(user_file):
    with pytest.raises(SpecError) as info:
        load_policy(f"{user_file}:MyPolicy:beta=2")
    assert f"{user_file}:MyPolicy:beta=2" in str(info.value)
    assert "beta" in str(info.value)


def test_a_resolved_spec_builds_fresh_policies_and_pickles_by_name(user_file):
    import pickle

    from prefduel.policies import PolicySpec, resolve_spec

    spec = resolve_spec(f" {user_file}:MyPolicy:alpha=2 ")
    assert isinstance(spec, PolicySpec) and resolve_spec(spec) is spec
    first, second = spec.build(), spec.build()
    assert first is not second and first.alpha == second.alpha == 2
    again = pickle.loads(pickle.dumps(spec))  # re-resolved where it is unpickled
    assert again == spec and again.build().alpha == 2
    assert resolve_spec("notransfer:rule=ts").canonical == canonical_spec("notransfer:rule=ts")
