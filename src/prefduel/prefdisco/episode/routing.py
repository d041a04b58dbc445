"""Routing a clarifying question to the taxonomy attributes it asks about.

A router maps a question to at most ``max_attributes`` attribute ids of the taxonomy; it sees the
question and the taxonomy, never the user's preferences, so it cannot leak them.

* `KeywordRouter` (offline) matches each attribute's keyword phrases on lightly stemmed tokens
  (longer phrases first, matches may not overlap) and routes to the attributes with the most
  covered words; if no phrase matches, a TF-IDF cosine between the question and each
  attribute's text (name, description, keywords, values, question) picks the best one above
  ``tfidf_threshold``.
* `LLMRouter` asks a model (role ``router``) for a JSON list of ids, falling back to the keyword
  router after unusable replies.

How often each one sends a natural question to the right attribute is measured on a labelled
set (`prefduel.prefdisco.episode.router_check`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prefduel.llm.request import Completer, LLMRequest
from prefduel.llm.stages import MALFORMED, Stage, ask
from prefduel.prefdisco.dataset.prompts import retry_turn
from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.episode import prompts
from prefduel.prefdisco.errors import EpisodeError

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if
    in into is it its me more most much my no not of on or our should so some such than that
    the their them then there these they this those to too us very was we were what when where
    which while who why will with would you your yours like prefer preference preferences want
    answer response responses explain explanation things thing something anything everything
    please let ok okay tell know about also just any one""".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    """A light stemmer: plurals, -ing/-ed/-ly and a final -e (so keywords match variants)."""
    w = word
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 4 and w.endswith(("sses", "ches", "shes", "xes", "zes")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed", "ly"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: -len(suffix)]
            break
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def tokens(text: str) -> list[str]:
    """Lower-cased, lightly stemmed word tokens."""
    return [_stem(w) for w in _WORD.findall(text.lower())]


@dataclass(frozen=True)
class Route:
    """Where a question was routed.

    Attributes:
        attributes: Attribute ids the question asks about (at most the router's cap).
        method: ``"keyword"``, ``"tfidf"``, ``"llm"``, ``"keyword-fallback"`` (the LLM
            router's replies were unusable) or ``"none"`` (nothing matched).
        detail: Notes (ids the LLM named that are not in the taxonomy, parse failures).
    """

    attributes: tuple[str, ...]
    method: str
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict``."""
        return {"attributes": list(self.attributes), "method": self.method, "detail": self.detail}


class Router(Protocol):
    """Maps a clarifying question to attribute ids (never sees preferences)."""

    name: str

    async def route(self, question: str) -> Route:
        """Route one question."""
        ...


class KeywordRouter:
    """Offline router: keyword phrases first, TF-IDF similarity as the fallback.

    Args:
        taxonomy: The taxonomy.
        max_attributes: Most attributes one question may route to.
        tfidf_threshold: Smallest cosine similarity for a TF-IDF route (0 < t <= 1); None
            disables the TF-IDF fallback.
    """

    name = "keyword"

    def __init__(
        self, taxonomy: Taxonomy, *, max_attributes: int = 2, tfidf_threshold: float | None = 0.15
    ) -> None:
        if isinstance(max_attributes, bool) or not isinstance(max_attributes, int):
            raise ValueError(f"max_attributes: expected an int >= 1, got {max_attributes!r}")
        if max_attributes < 1:
            raise ValueError(f"max_attributes: expected an int >= 1, got {max_attributes!r}")
        if tfidf_threshold is not None and not 0 < tfidf_threshold <= 1:
            raise ValueError(f"tfidf_threshold: expected in (0, 1], got {tfidf_threshold!r}")
        self.taxonomy = taxonomy
        self.max_attributes = max_attributes
        self.tfidf_threshold = tfidf_threshold
        self._phrases = {
            a.id: sorted({tuple(tokens(k)) for k in a.keywords if tokens(k)}) for a in taxonomy
        }
        self._order = {a: i for i, a in enumerate(taxonomy.ids)}
        self._idf, self._vectors = self._index()

    def _index(self) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        docs = {}
        for a in self.taxonomy:
            text = " ".join(
                [a.name, a.description, " ".join(a.keywords), a.question]
                + [f"{v.label} {v.description}" for v in a.values]
            )
            docs[a.id] = [t for t in tokens(text) if t not in STOPWORDS]
        df: Counter[str] = Counter()
        for words in docs.values():
            df.update(set(words))
        n = len(docs)
        idf = {w: math.log((1 + n) / (1 + c)) + 1 for w, c in df.items()}
        return idf, {k: self._vector(v, idf) for k, v in docs.items()}

    @staticmethod
    def _vector(words: Sequence[str], idf: dict[str, float]) -> dict[str, float]:
        counts = Counter(w for w in words if w in idf)
        vec = {w: c * idf[w] for w, c in counts.items()}
        norm = math.sqrt(sum(x * x for x in vec.values()))
        return {w: x / norm for w, x in vec.items()} if norm else {}

    def keyword_scores(self, question: str) -> dict[str, int]:
        """Attribute id -> words of ``question`` covered by its keyword phrases.

        Matches are taken longest first and may not overlap, so "alternative approaches"
        counts for *alternatives* and not also, through "approach", for *strategy*.
        """
        words = tokens(question)
        matches = []
        for attr_id, phrases in self._phrases.items():
            for phrase in phrases:
                n = len(phrase)
                for start in range(len(words) - n + 1):
                    if tuple(words[start : start + n]) == phrase:
                        matches.append((n, start, attr_id))
        matches.sort(key=lambda m: (-m[0], m[1], self._order[m[2]]))
        covered: set[int] = set()
        scores: dict[str, int] = {}
        for n, start, attr_id in matches:
            span = set(range(start, start + n))
            if span & covered:
                continue
            covered |= span
            scores[attr_id] = scores.get(attr_id, 0) + n
        return scores

    def similarities(self, question: str) -> dict[str, float]:
        """Attribute id -> TF-IDF cosine similarity with ``question``."""
        q = self._vector([t for t in tokens(question) if t not in STOPWORDS], self._idf)
        return {
            attr_id: sum(q[w] * vec.get(w, 0.0) for w in q)
            for attr_id, vec in self._vectors.items()
        }

    def route_sync(self, question: str) -> Route:
        """Route one question (synchronous)."""
        if not isinstance(question, str):
            raise TypeError(f"question: expected str, got {type(question).__name__}")
        scores = self.keyword_scores(question)
        if scores:
            order = sorted(scores, key=lambda a: (-scores[a], self._order[a]))
            return Route(tuple(order[: self.max_attributes]), "keyword")
        if self.tfidf_threshold is not None:
            sims = self.similarities(question)
            if sims:
                attr_id = max(self.taxonomy.ids, key=lambda a: sims[a])
                if sims[attr_id] >= self.tfidf_threshold:
                    return Route((attr_id,), "tfidf", f"cosine {sims[attr_id]:.3f}")
        return Route((), "none")

    async def route(self, question: str) -> Route:
        """Route one question."""
        return self.route_sync(question)


class LLMRouter:
    """Router that asks a model (role ``"router"``) which attribute ids a question is about.

    The reply must be a JSON list of ids; ids not in the taxonomy are dropped (and noted), the
    list is capped at ``max_attributes``. After ``attempts`` unusable replies the question is
    routed by ``fallback`` (method ``"keyword-fallback"``), so one bad reply never stalls an
    episode.

    Args:
        taxonomy: The taxonomy.
        client: Answers requests.
        model: The router model.
        max_attributes: Most attributes per question.
        attempts: Requests per question before falling back.
        fallback: The offline router used after unusable replies (default a
            `KeywordRouter` with the same cap).
        params: Sampling parameters of the routing requests (default temperature 0 and
            ``max_tokens`` 64).
    """

    name = "llm"

    def __init__(
        self,
        taxonomy: Taxonomy,
        client: Completer,
        model: str,
        *,
        max_attributes: int = 2,
        attempts: int = 2,
        fallback: KeywordRouter | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts: expected >= 1, got {attempts!r}")
        self.taxonomy = taxonomy
        self.client = client
        self.model = model
        self.max_attributes = max_attributes
        self.attempts = attempts
        self.fallback = fallback or KeywordRouter(taxonomy, max_attributes=max_attributes)
        self.params = dict(params if params is not None else {"temperature": 0, "max_tokens": 64})

    def request(self, question: str, previous: Sequence[str] = ()) -> LLMRequest:
        """The routing request for ``question`` (``previous``: earlier unusable replies)."""
        messages = prompts.router_messages(question, self.taxonomy, self.max_attributes)
        for text in previous:
            messages = (*messages, *retry_turn(text, prompts.ROUTE_FORMAT))
        return LLMRequest(
            self.model,
            messages,
            self.params,
            sample=len(previous),
            role="router",
        )

    def stage(self) -> Stage[str]:
        """Routing one question: a JSON list of ids, or asked again with the unusable reply
        shown back, up to ``attempts`` requests."""
        return Stage(
            "router",
            request=self.request,
            parse=lambda question, text: prompts.parse_route(text),
            describe=lambda question: {"item": question},
            tries=self.attempts,
        )

    async def route(self, question: str) -> Route:
        """Route one question.

        Raises:
            EpisodeError: A routing call failed after the client's retries.
        """
        outcome = await ask(self.stage(), question, self.client)
        if outcome.failed:
            raise EpisodeError(f"router call failed: {outcome.error}")
        if outcome.value is not MALFORMED:
            ids = outcome.value
            known = list(dict.fromkeys(i for i in ids if i in self.taxonomy))
            unknown = [i for i in ids if i not in self.taxonomy]
            detail = f"unknown ids dropped: {unknown}" if unknown else None
            return Route(tuple(known[: self.max_attributes]), "llm", detail)
        route = self.fallback.route_sync(question)
        return Route(
            route.attributes,
            "keyword-fallback",
            f"no JSON list in {self.attempts} router repl{'y' if self.attempts == 1 else 'ies'}",
        )


__all__ = ["STOPWORDS", "KeywordRouter", "LLMRouter", "Route", "Router", "tokens"]
