"""The roster table: which students, topics and arrivals each TutorDuel roster uses.

Only the table and the names it answers to live here; turning a name into a world is
`prefduel.worlds.spec`'s job (roster files, stored worlds, the generator registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from prefduel.core.errors import UnknownIdError
from prefduel.worlds.tutorsim_data import (
    CURRENT_VERSION,
    DEFAULT_PARAMS,
    GENERATOR_VERSIONS,
    TutorSimData,
    TutorSimParams,
    load_tutorsim_data,
)

#: Separates a roster id from a generator version: ``test-profiles@1``.
VERSION_SEP = "@"
#: A world name ending so is a roster file.
ROSTER_FILE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Roster:
    """One row of the roster table (docs/design.md, section 9).

    Attributes:
        id: Roster id, e.g. ``"dev"``.
        arrivals: Number of arrivals N.
        students: How students are drawn: ``"dev-profiles"``, ``"heldout-profiles"``,
            ``"composite"``, ``"quirky"``, ``"scrambled"`` or ``"isotropic"``.
        topics: Topic pool, ``"dev"`` or ``"heldout"``.
        seeds: Number of seeds reported in the paper's protocol.
        locked: Held-out roster; loading it needs ``allow_test=True``.
        description: One line for ``prefduel worlds``.
        version: TutorSim generator version (data files); the random streams depend only on
            ``id`` and the seed, so versions differ only where their data differ.
        data: A roster file's TutorSim data (None: the packaged data of ``version``).
        params: A roster file's TutorSim knobs (None: ``DEFAULT_PARAMS``).
        source: The roster file's path, which worlds and rows then carry as their name.
    """

    id: str
    arrivals: int
    students: str
    topics: str
    seeds: int
    locked: bool
    description: str
    version: int = CURRENT_VERSION
    data: TutorSimData | None = field(default=None, compare=False, repr=False)
    params: TutorSimParams | None = field(default=None, compare=False, repr=False)
    source: str | None = None

    @property
    def label(self) -> str:
        """The name worlds and result rows carry: a roster file's path, ``id``, or
        ``id@version`` for an older generator version."""
        if self.source is not None:
            return self.source
        if self.version == CURRENT_VERSION:
            return self.id
        return f"{self.id}{VERSION_SEP}{self.version}"

    def tutorsim_data(self) -> TutorSimData:
        """The data TutorSim generates this roster from."""
        return self.data if self.data is not None else load_tutorsim_data(self.version)

    def tutorsim_params(self) -> TutorSimParams:
        """The knobs TutorSim generates this roster with."""
        return self.params if self.params is not None else DEFAULT_PARAMS


ROSTERS: dict[str, Roster] = {
    r.id: r
    for r in [
        Roster(
            "dev",
            300,
            "dev-profiles",
            "dev",
            32,
            False,
            "8 hand-written development profiles; every design choice is made here",
        ),
        Roster(
            "test-topics",
            350,
            "dev-profiles",
            "heldout",
            64,
            True,
            "the same 8 profiles on new topics",
        ),
        Roster(
            "test-profiles",
            350,
            "heldout-profiles",
            "heldout",
            64,
            True,
            "8 held-out hand-written profiles on new topics",
        ),
        Roster(
            "test-composite",
            350,
            "composite",
            "heldout",
            32,
            True,
            "350 distinct students from the 7-trait template (3,072 combinations)",
        ),
        Roster(
            "test-quirky",
            350,
            "quirky",
            "heldout",
            32,
            True,
            "350 template students with 2 of 10 quirks each",
        ),
        Roster(
            "control-scrambled",
            350,
            "scrambled",
            "heldout",
            32,
            False,
            "negative control: held-out profiles, persona labels permuted per student",
        ),
        Roster(
            "control-unstructured",
            350,
            "isotropic",
            "heldout",
            32,
            False,
            "negative control: preferences drawn i.i.d. from an isotropic population",
        ),
    ]
}


def is_roster_file(name: str) -> bool:
    """True when ``name`` is the path of a roster file (``.yaml`` or ``.yml``)."""
    return name.strip().lower().endswith(ROSTER_FILE_SUFFIXES)


def builtin_roster(roster_id: str) -> Roster:
    """A built-in roster by id, optionally with a generator version (``test-profiles@1``).

    Raises:
        UnknownIdError: listing the known rosters, or the known generator versions.
    """
    base, sep, version_text = roster_id.partition(VERSION_SEP)
    try:
        roster = ROSTERS[base]
    except KeyError:
        raise UnknownIdError(
            f"unknown roster {base!r}. Known rosters: {', '.join(ROSTERS)}; "
            "or give the path of a stored world directory"
        ) from None
    if not sep:
        return roster
    versions = ", ".join(str(v) for v in GENERATOR_VERSIONS)
    if not version_text.isdigit() or int(version_text) not in GENERATOR_VERSIONS:
        raise UnknownIdError(
            f"roster {roster_id!r}: unknown generator version {version_text!r}; "
            f"known versions: {versions} (e.g. {base}{VERSION_SEP}1)"
        )
    return replace(roster, version=int(version_text))


def is_roster(name: str) -> bool:
    """True when ``name`` is a roster id (with or without a generator version) or a roster
    file."""
    if is_roster_file(name):
        return True
    base, sep, version_text = name.partition(VERSION_SEP)
    return base in ROSTERS and (not sep or version_text.isdigit())
