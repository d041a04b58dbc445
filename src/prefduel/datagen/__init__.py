"""Data generation: build TutorDuel worlds from LLM calls (``prefduel datagen``).

The paper's data came from LLM calls: generated questions, six persona answers per question, a
rater that scores all six personas in one call, and a role-playing judge that picks A or B for
every persona pair in both display orders and both label assignments, several samples each.
This package runs that pipeline for your own personas, topics, cues and students, against any
OpenAI-compatible endpoint or offline with the scripted backend, and writes a stored World that
the runner loads by path::

    from prefduel.datagen import estimate, generate, load_config

    config = load_config("examples/small.yaml")
    print(estimate(config).format())          # dry run: calls, tokens, cost per stage
    result = generate(config)                 # cached, resumable; progress bars on stderr
    print(result.summary())                   # then: prefduel run --worlds worlds/small

Modules:

* `config`: `DatagenConfig`, `load_config` (errors name the file and the field);
  `config_file`: the models of the YAML sections; `collections`: collections read through
  TutorSim's catalogue and template students; `sizes`: bounds of the run's products;
  `errors`: the error classes.
* `settings`: `split_config`, the boundary that cuts a config into each stage's settings
  (`StageSettings`); the pipeline's stages see only their own part.
* `prompts`: prompt templates, placeholders, answer parsers.
* `calls`: each LLM stage's settings (`QuestionSettings`, `AnswerSettings`, `RaterSettings`,
  `JudgeSettings`), the question bank and the requests they build.
* `scripted`: `ScriptedWorld`, the offline backend's roles
  (its judge follows TutorSim's latent preferences).
* `aggregate`: picks -> P -> U (TutorSim's shared functions),
  rater scores -> g, arrivals layout, World assembly.
* `pipeline`: the four stages as descriptions run by the LLM stage engine, `estimate`
  (dry run), `generate`; `results`: `DatagenPlan`, `DatagenResult`; `output`: the stored
  world and the run's files.
"""

from __future__ import annotations

from prefduel.datagen.aggregate import (
    assemble_world,
    layout,
    pick_diagnostics,
    probabilities_and_utilities,
    rater_features,
    tally,
)
from prefduel.datagen.calls import (
    AnswerSettings,
    JudgeSettings,
    QuestionSettings,
    QuestionSpec,
    RaterSettings,
    RoleCalls,
)
from prefduel.datagen.config import (
    DatagenConfig,
    DatagenConfigError,
    DatagenError,
    config_from_mapping,
    load_config,
)
from prefduel.datagen.errors import WorldRefusedError
from prefduel.datagen.pipeline import (
    ASK_STAGES,
    STAGES,
    DatagenPlan,
    DatagenResult,
    StageEstimate,
    StageReport,
    estimate,
    generate,
    make_datagen_client,
)
from prefduel.datagen.prompts import (
    TemplateParser,
    Templates,
    parse_answer,
    parse_pick,
    parse_question,
    parse_scores,
)
from prefduel.datagen.scripted import ScriptedWorld, scripted_handlers
from prefduel.datagen.settings import (
    RunInfo,
    StageSettings,
    WorldSettings,
    scripted_model_name,
    split_config,
)

__all__ = [
    "ASK_STAGES",
    "STAGES",
    "AnswerSettings",
    "DatagenConfig",
    "DatagenConfigError",
    "DatagenError",
    "DatagenPlan",
    "DatagenResult",
    "JudgeSettings",
    "QuestionSettings",
    "QuestionSpec",
    "RaterSettings",
    "RoleCalls",
    "RunInfo",
    "ScriptedWorld",
    "StageEstimate",
    "StageReport",
    "StageSettings",
    "TemplateParser",
    "Templates",
    "WorldRefusedError",
    "WorldSettings",
    "assemble_world",
    "config_from_mapping",
    "estimate",
    "generate",
    "layout",
    "load_config",
    "make_datagen_client",
    "parse_answer",
    "parse_pick",
    "parse_question",
    "parse_scores",
    "pick_diagnostics",
    "probabilities_and_utilities",
    "rater_features",
    "scripted_handlers",
    "scripted_model_name",
    "split_config",
    "tally",
]
