"""The LLM clients of a study: one `Completer` per role group, built from the config.

Role groups (``ROLE_GROUPS``): ``model`` (the model under test: ask, answer), ``user`` (the
simulated user's LLM router), ``judge`` (judge and grader) and ``generate`` (persona
enrichment, rubric refinement). `clients_from_config` builds them from the config's ``llm`` and
``llm_roles`` sections; groups with equal settings share one client (one cache, one call log).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefduel.llm.client import LLMClient
from prefduel.llm.config import LLMConfig, make_client
from prefduel.llm.request import Completer
from prefduel.llm.scripted import Handler
from prefduel.prefdisco.config import ROLE_GROUPS, PrefDiscoConfig
from prefduel.prefdisco.dataset.tasks import Task
from prefduel.prefdisco.dataset.taxonomy import Taxonomy
from prefduel.prefdisco.errors import ConfigError, EpisodeError
from prefduel.prefdisco.study.scripted import scripted_handlers

CACHE_FILE = "llm-cache.sqlite"
CALL_LOG_FILE = "llm-calls.jsonl"


class NoClient:
    """A placeholder completer for building requests without sending them."""

    async def complete(self, request: Any) -> Any:
        raise EpisodeError("no client: requests are only built here, not sent")


@dataclass
class RoleClients:
    """One `Completer` per role group.

    Attributes:
        model: Model under test (roles ask, answer).
        user: Simulated user's LLM router (role router).
        judge: Judge and grader.
        generate: Persona enrichment and rubric refinement.
    """

    model: Completer
    user: Completer
    judge: Completer
    generate: Completer

    @classmethod
    def single(cls, client: Completer) -> RoleClients:
        """The same client for every group."""
        return cls(client, client, client, client)

    def distinct(self) -> list[Completer]:
        """The distinct clients, in group order."""
        out: list[Completer] = []
        for client in (self.model, self.user, self.judge, self.generate):
            if all(client is not c for c in out):
                out.append(client)
        return out

    async def release(self) -> None:
        """Release loop-bound backend resources (call at the end of each event loop)."""
        for client in self.distinct():
            backend = getattr(client, "backend", None)
            if backend is not None:
                await backend.aclose()

    def close(self) -> None:
        """Close call logs and owned caches of the `LLMClient` s."""
        for client in self.distinct():
            if isinstance(client, LLMClient):
                client.close()

    def stats(self) -> dict[str, Any]:
        """Calls, hits, failures, tokens and cost summed over the distinct clients."""
        total: dict[str, Any] = {
            "requests": 0,
            "hits": 0,
            "answered": 0,
            "failed": 0,
            "retries": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost": 0.0,
            "currency": "USD",
        }
        for client in self.distinct():
            if isinstance(client, LLMClient):
                s = client.stats()
                for key in (
                    "requests",
                    "hits",
                    "answered",
                    "failed",
                    "retries",
                    "prompt_tokens",
                    "completion_tokens",
                ):
                    total[key] += getattr(s, key)
                total["cost"] += s.cost
                total["currency"] = client.prices.currency
        return total


def _models_by_group(config: PrefDiscoConfig) -> dict[str, list[str]]:
    run = config.run
    return {
        "model": list(run.models),
        "user": [run.router_model_name] if run.router != "keyword" else [],  # auto may use it
        "judge": [run.judge_model, run.grader_model_name],
        "generate": (
            [config.generate.model]
            if config.generate.enrich or config.generate.refine_rubrics
            else []
        ),
    }


def clients_from_config(
    config: PrefDiscoConfig,
    folder: str | Path,
    *,
    handlers: Mapping[str, Handler] | None = None,
    groups: Sequence[str] = tuple(ROLE_GROUPS),
) -> RoleClients:
    """Build the clients of the role groups a command needs from the config's LLM sections.

    The cache defaults to ``folder/llm-cache.sqlite`` and the call log to
    ``folder/llm-calls.jsonl`` (unless the config names others). Groups with equal settings
    share one client; groups not in ``groups`` get the first built client (and are unused).

    Args:
        config: The study config.
        folder: The output folder.
        handlers: Scripted handlers (used by groups on the scripted backend).
        groups: The groups to build (``run`` needs model, judge and, unless the keyword
            router is named, user; ``generate`` needs generate).

    Raises:
        ConfigError: A group on a real endpoint names a ``scripted-*`` model, or an unknown
            group.
        LLMConfigError: An endpoint is misconfigured (e.g. its API-key variable is unset).
    """
    folder = Path(folder)
    unknown = [g for g in groups if g not in ROLE_GROUPS]
    if unknown or not groups:
        raise ConfigError(f"groups: expected some of {sorted(ROLE_GROUPS)}, got {list(groups)}")
    models = _models_by_group(config)
    made: dict[Any, LLMClient] = {}
    chosen: dict[str, LLMClient] = {}
    for group in groups:
        cfg = config.llm_for(group)
        scripted = [m for m in models[group] if m.startswith("scripted-")]
        if cfg.backend != "scripted" and scripted:
            raise ConfigError(
                f"the {group} group uses the {cfg.backend} backend but names scripted "
                f"models {scripted}; set the model names for a real endpoint (run.models, "
                "run.judge_model, ...) in the config or on the command line"
            )
        cfg = _with_files(cfg, folder)
        if cfg not in made:
            made[cfg] = make_client(cfg, handlers=handlers)
        chosen[group] = made[cfg]
    first = chosen[groups[0]]
    return RoleClients(*(chosen.get(g, first) for g in ("model", "user", "judge", "generate")))


def _with_files(cfg: LLMConfig, folder: Path) -> LLMConfig:
    """The group's settings with the cache and call log defaulting to files in ``folder``."""
    if cfg.use_cache and cfg.cache is None:
        cfg = dataclasses.replace(cfg, cache=str(folder / CACHE_FILE))
    if cfg.call_log is None:
        cfg = dataclasses.replace(cfg, call_log=str(folder / CALL_LOG_FILE))
    return cfg


def output_files(
    config: PrefDiscoConfig, folder: str | Path, groups: Sequence[str]
) -> list[tuple[Path, str]]:
    """``(path, what)`` of the files the clients of ``groups`` will write: each answer cache
    and call log (`clients_from_config` puts them in ``folder`` unless the config names
    others), so a command can check them before it works or pays for anything."""
    files: dict[Path, str] = {}
    for group in groups:
        cfg = _with_files(config.llm_for(group), Path(folder))
        if cfg.use_cache and cfg.cache is not None:
            files.setdefault(Path(cfg.cache), "answer cache")
        if cfg.call_log is not None:
            files.setdefault(Path(cfg.call_log), "call log")
    return list(files.items())


def default_handlers(taxonomy: Taxonomy, tasks: Sequence[Task]) -> dict[str, Handler]:
    """The scripted handlers of every PrefDisco role for this taxonomy and task set."""
    return scripted_handlers(taxonomy, tasks)


__all__ = [
    "CACHE_FILE",
    "CALL_LOG_FILE",
    "NoClient",
    "RoleClients",
    "clients_from_config",
    "default_handlers",
    "output_files",
]
