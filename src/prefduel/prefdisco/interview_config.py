"""Settings of the Bayesian interviewer (``run.interviewer`` of a study config).

They live apart from the interviewer itself so that the run config (`prefduel.prefdisco.config`)
can hold them without importing the episode code::

    run:
      strategies: [ask, interviewer]
      interviewer:
        min_gain: 0.02
        phrasing: template          # or llm: the model under test words each question
        prior: {seed: 1, personas: 300, classes: 4}
"""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Literal

from pydantic import Field, Strict

from prefduel.core.schema import Integer, Number, frozen_dataclass
from prefduel.prefdisco.errors import ConfigError


@frozen_dataclass(error=ConfigError, path="run.interviewer.prior")
class PriorConfig:
    """How the interviewer's prior is learned (`prefduel.prefdisco.interviewer.prior`).

    Attributes:
        seed: Root seed of the training personas and profiles (use one the evaluation dataset
            does not: `check_disjoint` verifies the personas differ).
        personas: Training personas.
        tasks_per_domain: Synthetic training tasks per domain (a profile depends on the task
            only through its domain and id).
        classes: Persona types of the mixture (1: independent attributes).
        iterations: Most EM iterations.
        smoothing: Pseudo-count added to every state of every attribute and type.
        min_distance: Big Five diversity of the training library (as in generation).
    """

    seed: Annotated[Integer, Field(ge=0, le=2**32 - 1)] = 1
    personas: Annotated[Integer, Field(ge=1, le=10_000)] = 300
    tasks_per_domain: Annotated[Integer, Field(ge=1, le=100)] = 2
    classes: Annotated[Integer, Field(ge=1, le=100)] = 4
    iterations: Annotated[Integer, Field(ge=1, le=10_000)] = 100
    smoothing: Annotated[Number, Field(gt=0)] = 0.5
    min_distance: Annotated[Number, Field(ge=0)] = 0.35


@frozen_dataclass(error=ConfigError, path="run.interviewer")
class InterviewerConfig:
    """Settings of the Bayesian interviewer.

    Attributes:
        max_turns: Question budget (None: the run's ``max_turns``).
        min_gain: Stop when the best expected gain (nats, rubric-weighted) is below this.
        importance_questions: Also ask how much a found preference matters (coarse level).
        importance_weight: λ, weight of importance uncertainty relative to value uncertainty.
        presence_weight: Weight of the uncertainty about *whether* an attribute is in the
            profile, relative to the uncertainty about its value (0: only the values the
            rubric will test count).
        phrasing: ``template`` (the taxonomy's questions, no LLM call) or ``llm`` (role
            ``phrase``, by ``phrase_model``).
        phrase_model: Model that words the questions (None: the model under test).
        phrase_attempts: Phrasing requests per question before the template is used.
        prior: How the prior is learned (`PriorConfig`).
    """

    max_turns: Annotated[Integer, Field(ge=1, le=100)] | None = None
    min_gain: Annotated[Number, Field(ge=0)] = 0.02
    importance_questions: Annotated[bool, Strict()] = False
    importance_weight: Annotated[Number, Field(ge=0)] = 0.5
    presence_weight: Annotated[Number, Field(ge=0)] = 1.0
    phrasing: Literal["template", "llm"] = "template"
    phrase_model: str | None = None
    phrase_attempts: Annotated[Integer, Field(ge=1, le=20)] = 2
    prior: PriorConfig = field(default_factory=PriorConfig)


__all__ = ["InterviewerConfig", "PriorConfig"]
