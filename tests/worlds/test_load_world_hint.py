"""``load_world`` reads stored worlds; handed a roster id or roster file, it points to get_world.

The natural first guess from Python, ``load_world("dev", seed=0)``, must not end in a bare
TypeError or a bare "missing file": the error names ``get_world``, which builds roster worlds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from prefduel.core.errors import WorldFormatError
from prefduel.worlds import get_world, load_world
from prefduel.worlds.world import replicate

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("call", [lambda: load_world("dev", seed=0), lambda: load_world("dev")])
def test_a_roster_id_names_get_world(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no folder called dev here
    with pytest.raises(WorldFormatError, match=r"missing file world\.json.*'dev' is a roster id"
                       r".*get_world\('dev', seed\)"):
        call()


def test_a_roster_file_names_get_world():
    roster_file = REPO / "examples" / "my_roster.yaml"
    with pytest.raises(WorldFormatError, match=r"is a roster file.*get_world\("):
        load_world(roster_file, seed=0)


def test_an_unknown_path_says_only_what_is_missing(tmp_path):
    with pytest.raises(WorldFormatError, match=r"missing file world\.json$"):
        load_world(tmp_path / "nowhere")


def test_seed_gives_the_replicate_as_get_world_does(tmp_path):
    path = get_world("dev", 3).save(tmp_path / "w")
    stored = load_world(path)
    assert load_world(path, seed=None).digest() == stored.digest()
    assert load_world(path, seed=3).digest() == stored.digest()  # its own seed: as stored
    assert load_world(path, seed=5).digest() == replicate(stored, 5).digest()
    assert load_world(path, seed=5).digest() == get_world(str(path), 5).digest()
