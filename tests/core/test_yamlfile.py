"""read_yaml: parsed documents, and errors that name the file and what it was for."""

from __future__ import annotations

import pytest

from prefduel.core.errors import SpecError
from prefduel.core.yamlfile import read_yaml


def test_reads_a_document_and_an_empty_file(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("a: [1, 2]\nb: text\n", encoding="utf-8")
    assert read_yaml(good, "config file", SpecError) == {"a": [1, 2], "b": "text"}
    empty = tmp_path / "empty.yaml"
    empty.write_text("", encoding="utf-8")
    assert read_yaml(empty, "config file", SpecError) is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "price file {path} does not exist"),
        (b"a: [unclosed\n", "price file {path} is not valid YAML"),
        (b"a: \xff\xfe\n", "price file {path} is not UTF-8 text"),
    ],
)
def test_errors_name_the_file(tmp_path, content, expected):
    path = tmp_path / "prices.yaml"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SpecError) as info:
        read_yaml(path, "price file", SpecError)
    assert str(info.value).startswith(expected.format(path=path))


def test_a_directory_cannot_be_read(tmp_path):
    with pytest.raises(SpecError, match=f"config file {tmp_path} is a directory"):
        read_yaml(tmp_path, "config file", SpecError)


def _bomb(levels: int = 12) -> str:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_at_once(tmp_path):
    import time

    path = tmp_path / "roster.yaml"
    path.write_text(_bomb(), encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(SpecError, match=r"roster file .* expands to more than 1,000,000 values"):
        read_yaml(path, "roster file", SpecError)
    assert time.perf_counter() - started < 2.0


def test_aliases_used_within_bounds_still_work(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {x: 1}\nother: *b\nmore: [*b, *b]\n", encoding="utf-8")
    assert read_yaml(path, "config file", SpecError)["more"] == [{"x": 1}, {"x": 1}]


def test_a_recursive_alias_is_refused(tmp_path):
    path = tmp_path / "loop.yaml"
    path.write_text("a: &a [1, *a]\n", encoding="utf-8")
    with pytest.raises(SpecError, match="is not valid YAML"):
        read_yaml(path, "config file", SpecError)


def test_devices_directories_and_huge_files_are_refused(tmp_path):
    with pytest.raises(SpecError, match="config file /dev/zero is not a regular file"):
        read_yaml("/dev/zero", "config file", SpecError)
    with pytest.raises(SpecError, match="is a directory"):
        read_yaml(tmp_path, "config file", SpecError)
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(17 * 2**20)
    with pytest.raises(SpecError, match="is 17 MiB; a YAML file prefduel reads is at most 16 MiB"):
        read_yaml(big, "config file", SpecError)


def test_several_documents_are_refused(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text("a: 1\n---\nb: 2\n", encoding="utf-8")
    with pytest.raises(SpecError, match="is not valid YAML"):
        read_yaml(path, "config file", SpecError)


def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("generate:\n  personas: 6\nrun: {}\ngenerate:\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"key 'generate' is given twice \(lines 1 and 4\)"):
        read_yaml(path, "config file", SpecError)


def test_merge_keys_may_be_overridden(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("base: &b {x: 1, y: 2}\nmine:\n  <<: *b\n  y: 3\n", encoding="utf-8")
    assert read_yaml(path, "config file", SpecError)["mine"] == {"x": 1, "y": 3}


def test_a_path_with_a_nul_byte_is_a_named_error():
    with pytest.raises(SpecError, match="is not a valid path"):
        read_yaml("a\0b.yaml", "config file", SpecError)
