"""Settings of ``prefdisco generate``: the ``generate`` section of a study config."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from prefduel.core.schema import Integer, Number, frozen_dataclass
from prefduel.prefdisco.config_fields import (
    MAX_PERSONAS,
    MAX_TASK_ITEMS,
    Attributes,
    Flag,
    NonNegative,
    Seed,
)
from prefduel.prefdisco.errors import ConfigError

#: Task file formats (`prefduel.prefdisco.dataset.tasks` has a reader for each).
FORMATS = ("math500", "medqa", "commonsenseqa", "logiqa", "socialiqa", "generic")


@dataclasses.dataclass(frozen=True)
class SparsityConfig:
    """How profiles are sampled.

    Attributes:
        k_min: Fewest attributes per profile.
        k_max: Most attributes per profile.
        dirichlet_alpha: Concentration of the Dirichlet weights (1 = uniform on the simplex;
            large = nearly equal weights).
        max_per_family: Most attributes from one family in a profile.
        value_noise: S.d. of the idiosyncratic part of an ordinal value's latent.
        relevance_power: Exponent γ on relevance: the draw weight is ``relevance^γ`` times
            the salience factor, so F(i) concentrates on the attributes most relevant to the
            task's domain (γ = 0: any attribute with relevance > 0 is equally likely).
    """

    k_min: int = 3
    k_max: int = 5
    dirichlet_alpha: float = 1.0
    max_per_family: int = 2
    value_noise: float = 0.6
    relevance_power: float = 3.0

    def __post_init__(self) -> None:
        for name in ("k_min", "k_max", "max_per_family"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")
        if self.k_max < self.k_min:
            raise ValueError(f"k_max ({self.k_max}) must be >= k_min ({self.k_min})")
        if not (isinstance(self.dirichlet_alpha, int | float) and self.dirichlet_alpha > 0):
            raise ValueError(f"dirichlet_alpha: expected > 0, got {self.dirichlet_alpha!r}")
        if not (isinstance(self.value_noise, int | float) and self.value_noise >= 0):
            raise ValueError(f"value_noise: expected >= 0, got {self.value_noise!r}")
        if not (isinstance(self.relevance_power, int | float) and self.relevance_power >= 0):
            raise ValueError(f"relevance_power: expected >= 0, got {self.relevance_power!r}")


@frozen_dataclass(error=ConfigError)
class TaskSource:
    """Where tasks come from.

    Attributes:
        format: ``builtin`` or one of ``math500``, ``medqa``, ``commonsenseqa``, ``logiqa``,
            ``socialiqa``, ``generic`` (see `prefduel.prefdisco.dataset.tasks`).
        path: The JSONL file (not for ``builtin``); relative paths are relative to the config
            file.
        name: Source name for grouping results (default: the format).
        domain: Task domain override.
        limit: Keep the first ``limit`` items.
        labels: Social IQa labels file (one label per line).
    """

    format: str = "builtin"
    path: str | None = None
    name: str | None = None
    domain: str | None = None
    limit: Annotated[Integer, Field(ge=1, le=MAX_TASK_ITEMS)] | None = None
    labels: str | None = None

    @model_validator(mode="after")
    def _format_and_path(self) -> TaskSource:
        if self.format != "builtin" and self.format not in FORMATS:
            raise ValueError(
                f"tasks.format: expected builtin or one of {list(FORMATS)}, got {self.format!r}"
            )
        if self.format != "builtin" and not self.path:
            raise ValueError(f"tasks: a {self.format} source needs a path")
        if self.format == "builtin" and self.path:
            raise ValueError("tasks: the builtin source takes no path")
        return self


@frozen_dataclass(error=ConfigError, path="generate")
class GenerateConfig:
    """Settings of ``prefdisco generate`` (see the module docstring for each key)."""

    seed: Seed = 0
    personas: Annotated[Integer, Field(ge=1, le=MAX_PERSONAS)] = 6
    personas_per_task: Annotated[Integer, Field(ge=1, le=MAX_PERSONAS)] | None = 2
    tasks: Annotated[tuple[TaskSource, ...], Field(min_length=1)] = (TaskSource(),)
    taxonomy: str | None = None
    persona_space: str | None = None
    k_min: Attributes = 3
    k_max: Attributes = 5
    dirichlet_alpha: Number = 1.0
    max_per_family: Attributes = 2
    value_noise: Number = 0.6
    relevance_power: Annotated[Number, Field(ge=0, le=100)] = 3.0
    min_distance: NonNegative = 0.35
    enrich: Flag = False
    refine_rubrics: Flag = False
    model: str = "scripted-writer"
    temperature: NonNegative = 0.7

    @model_validator(mode="after")
    def _sparsity_is_valid(self) -> GenerateConfig:
        _ = self.sparsity  # SparsityConfig checks its own ranges (ValueError names the key)
        return self

    @property
    def sparsity(self) -> SparsityConfig:
        """The preference-sampling settings."""
        names = [f.name for f in dataclasses.fields(SparsityConfig)]
        return SparsityConfig(**{name: getattr(self, name) for name in names})


def resolve_paths(generate: GenerateConfig, base: Path) -> GenerateConfig:
    """``generate`` with its relative file paths (tasks, labels, taxonomy, persona space)
    resolved against ``base``."""
    return dataclasses.replace(
        generate,
        tasks=tuple(_resolve(t, base) for t in generate.tasks),
        taxonomy=_path(generate.taxonomy, base),
        persona_space=_path(generate.persona_space, base),
    )


def _path(value: str | None, base: Path) -> str | None:
    if value is None or Path(value).is_absolute():
        return value
    return str(base / value)


def _resolve(source: TaskSource, base: Path) -> TaskSource:
    return dataclasses.replace(
        source, path=_path(source.path, base), labels=_path(source.labels, base)
    )
