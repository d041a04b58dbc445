"""One frozen configuration for a client, from YAML, command-line flags, or code.

Commands that call LLMs (``datagen``, ``prefdisco``) share these flags, so they look the same::

    --backend {openai,scripted}  --base-url URL  --api-key-env NAME | --no-api-key
    --timeout S  --max-connections N  --max-attempts N  --cache PATH | --no-cache
    --call-log PATH  --prices FILE  --budget AMOUNT

``--no-api-key`` is for endpoints that need no key (a local vLLM or llama.cpp server): it
overrides ``api_key_env`` of the YAML section with None (the placeholder key ``EMPTY`` is sent).
``--api-key-env`` takes a variable NAME only; an empty or otherwise invalid name is a usage
error that points to ``--no-api-key`` (and a pasted key is not echoed back).

Typical use in a command::

    parser = argparse.ArgumentParser(); add_llm_arguments(parser)
    args = parser.parse_args()
    config = config_from_args(args, LLMConfig.from_mapping(yaml_section, source="run.yaml"))
    client = make_client(config, handlers={"judge": tutorsim_judge})   # handlers: scripted only

A flag given on the command line overrides the same key of the YAML section, which overrides the
defaults below.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field, Strict

from prefduel.core.outputs import output_file
from prefduel.core.schema import Integer, Noun, Number, frozen_dataclass, validate
from prefduel.llm.cache import default_cache_path
from prefduel.llm.calllog import CallLog
from prefduel.llm.client import LLMClient
from prefduel.llm.errors import CacheError, LLMConfigError
from prefduel.llm.prices import load_prices
from prefduel.llm.request import Backend
from prefduel.llm.retry import RetryPolicy
from prefduel.llm.scripted import Handler, ScriptedBackend
from prefduel.llm.urls import check_base_url

#: Largest settings (sizes a user types are bounded before anything is opened or sent).
MAX_TIMEOUT = 3600.0
MAX_CONNECTIONS = 1024
MAX_ATTEMPTS = 100

BackendName = Literal["openai", "scripted"]
BACKENDS: tuple[str, ...] = get_args(BackendName)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def env_var_name(text: str) -> str:
    """The ``--api-key-env`` type: an environment variable NAME (never the key itself).

    Raises:
        argparse.ArgumentTypeError: ``text`` is empty or not a variable name (the message does
            not repeat it: it may be a key pasted by mistake).
    """
    if not text:
        raise argparse.ArgumentTypeError(
            "expected the NAME of an environment variable; for an endpoint that needs no key "
            "use --no-api-key"
        )
    if not _ENV_NAME.match(text):
        raise argparse.ArgumentTypeError(
            "the value is not a variable name (letters, digits and _; e.g. OPENAI_API_KEY): "
            "give the NAME of the variable holding the key, never the key itself; for an "
            "endpoint that needs no key use --no-api-key"
        )
    return text


def check_path(value: str) -> str:
    """A file name as given: not blank, and without a NUL byte (YAML can hold one, no file name
    can; the operating system's calls would raise)."""
    if not value.strip():
        raise ValueError(f"expected a file path, got {value!r}")
    if "\x00" in value:
        raise ValueError(f"a file path cannot contain a NUL byte, got {value!r}")
    return value


#: A file path in a config (checked by `check_path`; whether it can be used is checked before any
#: call: `make_client`).
PathText = Annotated[str, Strict(), AfterValidator(check_path)]


def _base_url(url: str) -> str:
    """A base URL that can reach an endpoint (checked when the backend is configured, so a
    typo is refused at once instead of being retried for half a minute)."""
    try:
        return check_base_url(url, "base URL")
    except ValueError as exc:
        raise ValueError(str(exc).removeprefix("base URL: ")) from None


@frozen_dataclass(error=LLMConfigError, keys="LLM settings")
class LLMConfig:
    """How to reach a model and how to call it. JSON-serializable; holds no secret.

    A frozen pydantic dataclass: construction (and ``dataclasses.replace``) validates and
    raises `LLMConfigError` naming the field.

    Attributes:
        backend: ``"openai"`` (any OpenAI-compatible endpoint) or ``"scripted"`` (offline).
        base_url: Endpoint URL, e.g. ``http://127.0.0.1:8000/v1`` (None: the SDK default);
            ``http://`` or ``https://`` with a host (`check_base_url`).
        api_key_env: NAME of the environment variable holding the key (None: no key;
            ``--no-api-key`` on the command line).
        timeout: Seconds per attempt (at most an hour, `MAX_TIMEOUT`).
        max_connections: Attempts in flight at once (at most `MAX_CONNECTIONS`).
        max_attempts: Attempts per call, the first included (at most `MAX_ATTEMPTS`).
        cache: The cache file (None: `default_cache_path`).
        use_cache: False disables the cache (and resume).
        call_log: JSONL call log file (None: no log).
        prices: A user price file (None: shipped prices, or ``$PREFDUEL_PRICES``).
        budget: Stop sending once this much was spent (None: no cap).
    """

    backend: BackendName = "scripted"
    base_url: Annotated[str, AfterValidator(_base_url)] | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: Annotated[Number, Field(gt=0, le=MAX_TIMEOUT), Noun("seconds")] = 60.0
    max_connections: Annotated[Integer, Field(ge=1, le=MAX_CONNECTIONS)] = 16
    max_attempts: Annotated[Integer, Field(ge=1, le=MAX_ATTEMPTS)] = 6
    cache: PathText | None = None
    use_cache: Annotated[bool, Strict()] = True
    call_log: PathText | None = None
    prices: PathText | None = None
    budget: Annotated[Number, Field(ge=0), Noun("an amount")] | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, *, source: str = "config") -> LLMConfig:
        """A config from a YAML/JSON section (keys as the attributes; missing keys default).

        Raises:
            LLMConfigError: Unknown keys or bad values, naming ``source`` and the key.
        """
        return validate(cls, data if data is not None else {}, error=LLMConfigError, source=source)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` (the API key's variable NAME only, never its value)."""
        return dataclasses.asdict(self)


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the shared LLM flags to ``parser`` (their defaults are None: "not given")."""
    group = parser.add_argument_group("LLM endpoint")
    group.add_argument(
        "--backend",
        choices=BACKENDS,
        default=None,
        help="openai (any OpenAI-compatible endpoint) or scripted (offline, deterministic)",
    )
    group.add_argument(
        "--base-url", default=None, metavar="URL", help="e.g. http://127.0.0.1:8000/v1"
    )
    key = group.add_mutually_exclusive_group()
    key.add_argument(
        "--api-key-env",
        type=env_var_name,
        default=None,
        metavar="NAME",
        help="NAME of the environment variable holding the API key (default OPENAI_API_KEY); "
        "the key itself is never passed on the command line",
    )
    key.add_argument(
        "--no-api-key",
        action="store_true",
        default=None,
        help="the endpoint needs no API key (e.g. a local server); overrides api_key_env of "
        "the config file",
    )
    group.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="seconds per attempt"
    )
    group.add_argument(
        "--max-connections", type=int, default=None, metavar="N", help="calls in flight at once"
    )
    group.add_argument(
        "--max-attempts", type=int, default=None, metavar="N", help="attempts per call"
    )
    group.add_argument("--cache", default=None, metavar="PATH", help="the answer cache file")
    group.add_argument(
        "--no-cache", action="store_true", default=None, help="no cache (nothing to resume)"
    )
    group.add_argument("--call-log", default=None, metavar="PATH", help="JSONL call log")
    group.add_argument("--prices", default=None, metavar="FILE", help="a user price file")
    group.add_argument(
        "--budget", type=float, default=None, metavar="AMOUNT", help="stop sending past this cost"
    )


def config_from_args(args: argparse.Namespace, base: LLMConfig | None = None) -> LLMConfig:
    """``base`` (default: the defaults) with every flag given on the command line applied."""
    base = base or LLMConfig()
    given = {
        name: getattr(args, name)
        for name in (
            "backend",
            "base_url",
            "api_key_env",
            "timeout",
            "max_connections",
            "max_attempts",
            "cache",
            "call_log",
            "prices",
            "budget",
        )
        if getattr(args, name, None) is not None
    }
    if getattr(args, "no_cache", None):
        given["use_cache"] = False
    if getattr(args, "no_api_key", None):
        given["api_key_env"] = None
    return dataclasses.replace(base, **given)


def make_backend(config: LLMConfig, *, handlers: Mapping[str, Handler] | None = None) -> Backend:
    """The backend a config names (``handlers`` are used by the scripted backend only).

    Raises:
        LLMConfigError: E.g. the API-key variable is not set (for ``openai``).
    """
    if config.backend == "scripted":
        return ScriptedBackend(handlers=handlers)
    from prefduel.llm.openai_backend import OpenAIBackend

    return OpenAIBackend(
        config.base_url,
        api_key_env=config.api_key_env,
        timeout=config.timeout,
        pool_size=max(config.max_connections, 16),
    )


def make_client(config: LLMConfig, *, handlers: Mapping[str, Handler] | None = None) -> LLMClient:
    """An `LLMClient` as the config says.

    Everything it reads and writes is checked here, before any call: the price file, the call
    log (a writable file: `prefduel.core.outputs.output_file`) and the cache (a prefduel cache,
    or a new one: `prefduel.llm.cachefile`).

    Raises:
        LLMConfigError: The backend is misconfigured (`make_backend`).
        PriceTableError: The price file is missing or malformed.
        CacheError: The call log cannot be written, or the cache path cannot be used.
    """
    backend = make_backend(config, handlers=handlers)
    prices = load_prices(config.prices)
    if config.call_log:
        output_file(config.call_log, "call log", CacheError)
    cache = (config.cache or default_cache_path()) if config.use_cache else None
    return LLMClient(
        backend,
        cache=cache,
        max_connections=config.max_connections,
        retry=RetryPolicy(max_attempts=config.max_attempts),
        prices=prices,
        call_log=CallLog(config.call_log) if config.call_log else None,
        budget=config.budget,
    )
