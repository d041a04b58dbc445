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
    with pytest.raises(SpecError, match=f"cannot read config file {tmp_path}"):
        read_yaml(tmp_path, "config file", SpecError)
