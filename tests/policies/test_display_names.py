"""Display names: a user policy is labelled by its class's ``name``, never confused with another.

The spec stays the identity of a policy in result rows and filters; these labels are what the
report and the pages print.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prefduel.policies.loading import display_name, display_names

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_policy.py"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_the_example_policy_has_a_short_name():
    assert display_name(f"{EXAMPLE}:RaterWithWins") == "rater-with-wins"
    assert display_name(f"{EXAMPLE}:RaterWithWins:weight=3") == "rater-with-wins:weight=3"


def test_settings_are_appended_in_canonical_order(tmp_path):
    path = _write(tmp_path / "p.py", 'class P:\n    name = "mine"\n')
    assert display_name(f"{path}:P:b=2,a=x") == "mine:a=x,b=2"


def test_builtin_and_reference_names_are_their_specs():
    for spec in ("notransfer", "notransfer:prior_var=2,rule=ts", "ref:floor", "coduel"):
        assert display_name(spec) == spec


def test_class_without_a_name_is_labelled_by_its_class(tmp_path):
    text = "class Plain:\n    pass\nclass Computed:\n    name = 'a' + 'b'\n"
    path = _write(tmp_path / "p.py", text)
    assert display_name(f"{path}:Plain:k=1") == "Plain:k=1"
    assert display_name(f"{path}:Computed") == "Computed"


def test_a_missing_or_broken_file_falls_back_to_the_class_name(tmp_path):
    assert display_name(f"{tmp_path / 'gone.py'}:Gone:k=1") == "Gone:k=1"
    broken = _write(tmp_path / "broken.py", "class X(:\n")
    assert display_name(f"{broken}:X") == "X"


def test_the_user_file_is_read_not_run(tmp_path):
    marker = tmp_path / "ran"
    path = _write(
        tmp_path / "p.py",
        f"""
        open({str(marker)!r}, "w").close()
        class P:
            name = "quiet"
        """,
    )
    assert display_name(f"{path}:P") == "quiet"
    assert not marker.exists()


def test_a_policy_in_a_module(tmp_path, monkeypatch):
    _write(tmp_path / "pkg_names_test" / "__init__.py", "")
    _write(tmp_path / "pkg_names_test" / "pol.py", 'class M:\n    name = "from-module"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert display_name("pkg_names_test.pol:M:w=1") == "from-module:w=1"
    assert display_name("pkg_names_test.nothere:M") == "M"


def test_two_specs_never_share_a_label(tmp_path):
    a = _write(tmp_path / "a" / "pol.py", 'class P:\n    name = "same"\n')
    b = _write(tmp_path / "b.py", 'class P:\n    name = "same"\n')
    c = _write(tmp_path / "c" / "pol.py", 'class P:\n    name = "same"\n')
    fake = _write(tmp_path / "d.py", 'class P:\n    name = "notransfer"\n')
    specs = [f"{a}:P", f"{b}:P", f"{c}:P", f"{fake}:P", "notransfer", f"{a}:P:k=1"]
    labels = display_names(specs)
    assert set(labels) == set(specs)
    assert len(set(labels.values())) == len(specs)
    assert labels["notransfer"] == "notransfer"  # the built-in keeps its id
    assert labels[f"{a}:P:k=1"] == "same:k=1"  # no clash: stays short
    assert labels[f"{b}:P"] == "same (b.py)"
    assert labels[f"{fake}:P"] == "notransfer (d.py)"
    # same file name in two folders: the label names the file in full
    assert {labels[f"{a}:P"], labels[f"{c}:P"]} == {f"same ({a})", f"same ({c})"}


def test_a_label_equal_to_another_spec_is_qualified(tmp_path):
    path = _write(tmp_path / "p.py", 'class P:\n    name = "random"\n')
    labels = display_names(["random", f"{path}:P"])
    assert labels == {"random": "random", f"{path}:P": "random (p.py)"}


@pytest.mark.parametrize("name", ["", "   ", "two\nlines"])
def test_unusable_names_fall_back_or_are_flattened(tmp_path, name):
    path = _write(tmp_path / "p.py", f"class P:\n    name = {name!r}\n")
    label = display_name(f"{path}:P")
    assert label == ("P" if not name.strip() else "two lines")
