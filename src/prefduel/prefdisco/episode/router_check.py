"""How well a router understands natural clarifying questions, and which router a run uses.

The simulated user answers the attributes its router picks, so a misrouted question is answered
as a different question, and discovery recall measures the router as much as the model. The
package ships a labelled set of natural clarifying questions (``data/router_questions.yaml``:
several phrasings per attribute, plus questions about everything or nothing, labelled ``[]``);
`router_accuracy` measures a router on it:

* **accuracy**: the route is exactly the labelled attributes (``[]`` included);
* **misroute rate**: the route names an attribute the question is not about (the user would
  answer something that was not asked);
* **unrouted**: a question about some attribute routed to nothing.

`choose_router` resolves ``run.router``: ``keyword`` and ``llm`` as named; ``auto`` (the
default) keeps the keyword router when the user's group is on the scripted backend, and
otherwise measures both routers and takes the more accurate one (ties: keyword, which costs
nothing). The measurements go into ``run.json`` and every report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from prefduel.core.yamlfile import read_yaml
from prefduel.llm.concurrency import gather_or_cancel
from prefduel.llm.request import Completer
from prefduel.prefdisco.config import RunConfig
from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.episode.routing import KeywordRouter, LLMRouter, Router
from prefduel.prefdisco.errors import DatasetError

QUESTIONS_FORMAT = "prefduel/prefdisco-router-questions/1"
#: Misrouted questions kept as examples in a measurement.
EXAMPLES = 10


@dataclass(frozen=True)
class RouterQuestion:
    """One labelled question: its text and the attribute ids it asks about."""

    question: str
    about: tuple[str, ...]


def load_router_questions(
    path: str | Path | None = None, taxonomy: Taxonomy | None = None
) -> list[RouterQuestion]:
    """The labelled questions (default: the shipped set).

    Args:
        path: A YAML file in the shipped format.
        taxonomy: If given, questions labelled with an id it lacks are skipped.

    Raises:
        DatasetError: The file is missing or malformed (names file and entry).
    """
    source = Path(path) if path is not None else None
    if source is None:
        text = resources.files("prefduel.prefdisco").joinpath("data/router_questions.yaml")
        source = Path(str(text))
    data = read_yaml(source, "router question file", DatasetError)
    if not isinstance(data, Mapping) or data.get("format") != QUESTIONS_FORMAT:
        raise DatasetError(f"{source}: expected format {QUESTIONS_FORMAT!r}")
    questions = []
    for i, entry in enumerate(data.get("questions") or []):
        ok = isinstance(entry, Mapping) and isinstance(entry.get("q"), str)
        about = entry.get("about") if ok else None
        if not ok or not isinstance(about, list) or not all(isinstance(a, str) for a in about):
            raise DatasetError(f"{source}: questions[{i}]: expected {{q: str, about: [ids]}}")
        if taxonomy is None or all(a in taxonomy for a in about):
            questions.append(RouterQuestion(entry["q"], tuple(about)))
    return questions


@dataclass(frozen=True)
class RouterAccuracy:
    """A router measured on labelled questions.

    Attributes:
        router: ``keyword`` or ``llm``.
        model: The LLM router's model (None for keyword).
        n: Questions.
        correct: Routed exactly to their labels.
        misrouted: Routed to an attribute they do not ask about.
        unrouted: About some attribute, routed to nothing.
        examples: The first misrouted or unrouted questions (question, about, routed).
    """

    router: str
    model: str | None
    n: int
    correct: int
    misrouted: int
    unrouted: int
    examples: tuple[Mapping[str, Any], ...] = ()

    @property
    def accuracy(self) -> float | None:
        """Share routed exactly right (None without questions)."""
        return self.correct / self.n if self.n else None

    @property
    def misroute_rate(self) -> float | None:
        """Share routed to an attribute not asked about (None without questions)."""
        return self.misrouted / self.n if self.n else None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (rates rounded to 4 digits)."""
        return {
            "router": self.router,
            "model": self.model,
            "n": self.n,
            "correct": self.correct,
            "misrouted": self.misrouted,
            "unrouted": self.unrouted,
            "accuracy": None if self.accuracy is None else round(self.accuracy, 4),
            "misroute_rate": None if self.misroute_rate is None else round(self.misroute_rate, 4),
            "examples": [dict(e) for e in self.examples],
        }


async def router_accuracy(router: Router, questions: Sequence[RouterQuestion]) -> RouterAccuracy:
    """Route every labelled question and count exact, misrouted and unrouted ones.

    Raises:
        EpisodeError: An LLM router's call failed after the client's retries.
    """
    routes = await gather_or_cancel(*(router.route(q.question) for q in questions))
    correct = misrouted = unrouted = 0
    examples = []
    for q, route in zip(questions, routes, strict=True):
        got = set(route.attributes)
        wrong = bool(got - set(q.about))
        correct += got == set(q.about)
        misrouted += wrong
        unrouted += bool(q.about) and not got
        if (wrong or (q.about and not got)) and len(examples) < EXAMPLES:
            examples.append(
                {"question": q.question, "about": list(q.about), "routed": list(route.attributes)}
            )
    return RouterAccuracy(
        router=router.name,
        model=getattr(router, "model", None),
        n=len(questions),
        correct=correct,
        misrouted=misrouted,
        unrouted=unrouted,
        examples=tuple(examples),
    )


def keyword_router(taxonomy: Taxonomy, settings: RunConfig) -> KeywordRouter:
    """The offline router with the run's settings."""
    return KeywordRouter(
        taxonomy,
        max_attributes=settings.max_attributes_per_question,
        tfidf_threshold=settings.tfidf_threshold or None,
    )


def llm_router(taxonomy: Taxonomy, settings: RunConfig, client: Completer) -> LLMRouter:
    """The LLM router with the run's settings (its fallback: the keyword router)."""
    return LLMRouter(
        taxonomy,
        client,
        settings.router_model_name,
        max_attributes=settings.max_attributes_per_question,
        fallback=keyword_router(taxonomy, settings),
        params=settings.params("router"),
    )


def measures_llm_router(settings: RunConfig, scripted_user: bool) -> bool:
    """Whether resolving ``settings.router`` measures the LLM router (costs its calls)."""
    return settings.router == "llm" or (settings.router == "auto" and not scripted_user)


async def choose_router(
    taxonomy: Taxonomy, settings: RunConfig, client: Completer, *, scripted_user: bool
) -> tuple[Router, dict[str, Any]]:
    """Resolve ``settings.router`` and measure the routers on the labelled questions.

    Args:
        taxonomy: The dataset's taxonomy (questions labelled with ids it lacks are skipped).
        settings: Run settings (``router``: auto, keyword or llm).
        client: The user group's client (the LLM router's calls).
        scripted_user: Whether that client is the scripted backend (``auto`` then keeps the
            keyword router without measuring the LLM one).

    Returns:
        The router, and what ``run.json`` records: the setting, the router chosen and each
        measured router's accuracy.

    Raises:
        EpisodeError: A routing call failed after the client's retries.
    """
    questions = load_router_questions(taxonomy=taxonomy)
    routers: dict[str, Router] = {"keyword": keyword_router(taxonomy, settings)}
    if measures_llm_router(settings, scripted_user):
        routers["llm"] = llm_router(taxonomy, settings, client)
    measured = {name: await router_accuracy(r, questions) for name, r in routers.items()}
    chosen = settings.router
    if chosen == "auto":
        llm = measured.get("llm")
        better = llm is not None and llm.correct > measured["keyword"].correct
        chosen = "llm" if better else "keyword"
    check = {
        "setting": settings.router,
        "chosen": chosen,
        "questions": len(questions),
        "routers": {name: m.to_json() for name, m in measured.items()},
    }
    return routers[chosen], check


__all__ = [
    "QUESTIONS_FORMAT",
    "RouterAccuracy",
    "RouterQuestion",
    "choose_router",
    "keyword_router",
    "llm_router",
    "load_router_questions",
    "measures_llm_router",
    "router_accuracy",
]
