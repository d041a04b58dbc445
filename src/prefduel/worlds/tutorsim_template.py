"""TutorSim's template students: one value of each trait of ``template.yaml``, and quirks.

TutorSim's Composite roster draws distinct trait combinations, its Quirky roster draws each
trait's value independently and adds quirks; datagen's ``students: {template: N, quirks: K}``
draws distinct combinations with K quirks each. All render students with
`draw_template_students`; how a student's taste is scaled (and whether the population's
shared taste is added) is the caller's choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from prefduel.worlds.tutorsim_data import Trait, TraitValue


class Described(Protocol):
    """A quirk as template students need it (TutorSim's `Quirk` or a `QuirkEntry`)."""

    @property
    def id(self) -> str: ...

    @property
    def description(self) -> str: ...


@dataclass(frozen=True)
class TemplateStudent:
    """A student rendered from the template: one value of each trait, and quirks.

    Attributes:
        combo: Index of the value of each trait.
        values: The values.
        quirks: The student's quirks.
    """

    combo: tuple[int, ...]
    values: tuple[TraitValue, ...]
    quirks: tuple[Described, ...] = ()

    @property
    def profile(self) -> str:
        """``value/value/...``: the ids of the values."""
        return "/".join(v.id for v in self.values)

    @property
    def description(self) -> str:
        """The values' descriptions, then the quirks' (an LLM judge's role)."""
        text = " ".join(v.description for v in self.values)
        return text + "".join(" " + q.description for q in self.quirks)

    @property
    def taste_sum(self) -> np.ndarray:
        """Sum of the values' tastes ``(m,)`` (without the population's shared taste)."""
        return sum(v.taste for v in self.values)  # type: ignore[return-value]

    @property
    def cue_following(self) -> float:
        """The last value that sets cue following (1.0 if none does)."""
        given = [v.cue_following for v in self.values if v.cue_following is not None]
        return given[-1] if given else 1.0


def draw_template_students(
    traits: Sequence[Trait],
    count: int,
    rng: np.random.Generator,
    *,
    distinct: bool = True,
    quirks: Sequence[Described] = (),
    quirks_each: int = 0,
) -> tuple[TemplateStudent, ...]:
    """Draw ``count`` template students (TutorSim's Composite and Quirky rosters, datagen).

    All trait combinations are drawn first, then each student's quirks in turn.

    Args:
        traits: The template.
        count: Students.
        rng: The stream to draw from.
        distinct: Distinct combinations (drawn without replacement; Composite) or each trait's
            value drawn independently (Quirky).
        quirks: Quirks to draw from.
        quirks_each: Distinct quirks per student (0: none, and nothing is drawn).

    Returns:
        The students, in draw order.
    """
    sizes = [len(t.values) for t in traits]
    if distinct:
        flat = rng.choice(int(np.prod(sizes)), size=count, replace=False)
        combos = np.stack(np.unravel_index(flat, sizes), axis=1)
    else:
        combos = np.stack([rng.integers(s, size=count) for s in sizes], axis=1)
    students = []
    for combo in combos:
        drawn = rng.choice(len(quirks), quirks_each, replace=False) if quirks_each else []
        students.append(
            TemplateStudent(
                combo=tuple(int(i) for i in combo),
                values=tuple(t.values[int(i)] for t, i in zip(traits, combo, strict=True)),
                quirks=tuple(quirks[int(i)] for i in drawn),
            )
        )
    return tuple(students)


__all__ = ["Described", "TemplateStudent", "draw_template_students"]
