"""Token prices and cost accounting.

The price table is YAML: a currency and, per model, the price of a MILLION input (prompt) and
output (completion) tokens::

    currency: USD
    models:
      gpt-4o-mini: {input: 0.15, output: 0.60}
      "gpt-4o-mini-*": {input: 0.15, output: 0.60}   # glob patterns are allowed
    batch_discount: 0.5        # share of the price a provider's Batch API takes off

prefduel ships example prices (``prefduel/llm/data/prices.yaml``); a user file in
the same format (``load_prices(path)``, or the ``PREFDUEL_PRICES`` environment variable)
replaces or extends them (``replace: true`` ignores the shipped table). An exact model name wins
over patterns, then the longest matching pattern. A model the table does not know costs 0, with
one `UnknownModelPriceWarning` per table and model.
"""

from __future__ import annotations

import fnmatch
import math
import os
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from prefduel.core.yamlfile import parse_yaml, read_yaml
from prefduel.llm.errors import PriceTableError

#: Environment variable naming a user price file (used when no path is given).
PRICES_ENV = "PREFDUEL_PRICES"
#: Highest price per million tokens a price file may give (no model costs a million per million
#: tokens; larger numbers are typos, and their costs summed over a run could overflow).
MAX_PRICE = 1_000_000.0
#: The share of the online price a provider's Batch API takes off when no price file says
#: otherwise (OpenAI's batches cost half).
DEFAULT_BATCH_DISCOUNT = 0.5
_PACKAGE_FILE = "data/prices.yaml"
_PATTERN_CHARS = frozenset("*?[")


class UnknownModelPriceWarning(UserWarning):
    """A model has no price in the table; its calls are counted at 0."""


@dataclass(frozen=True)
class ModelPrice:
    """Price of one model per million tokens.

    Attributes:
        input: Price of a million prompt tokens.
        output: Price of a million completion tokens.
    """

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """Cost of one call with these token counts."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


class PriceTable:
    """Model prices; ``cost(model, prompt_tokens, completion_tokens)``.

    Args:
        prices: Model name or glob pattern -> price.
        currency: Currency of the prices (display only).
        source: Where the table came from (named in warnings).
        batch_discount: The share of the price a provider's Batch API takes off (0.5: batch
            calls cost half).
    """

    def __init__(
        self,
        prices: Mapping[str, ModelPrice],
        *,
        currency: str = "USD",
        source: str = "",
        batch_discount: float = DEFAULT_BATCH_DISCOUNT,
    ) -> None:
        self.prices = dict(prices)
        self.currency = currency
        self.batch_discount = batch_discount
        self.source = source
        self._patterns = sorted(
            (k for k in self.prices if _PATTERN_CHARS & set(k)), key=lambda k: (-len(k), k)
        )
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PriceTable({len(self.prices)} models, {self.currency}, source={self.source!r})"

    def lookup(self, model: str) -> ModelPrice | None:
        """The price of ``model``: exact name first, then the longest matching pattern."""
        price = self.prices.get(model)
        if price is not None:
            return price
        for pattern in self._patterns:
            if fnmatch.fnmatchcase(model, pattern):
                return self.prices[pattern]
        return None

    def known(self, model: str) -> bool:
        """Whether ``model`` has a price."""
        return self.lookup(model) is not None

    def cost(
        self, model: str, prompt_tokens: int, completion_tokens: int, *, warn: bool = True
    ) -> float:
        """Cost of one call.

        Args:
            model: Model name (the request's).
            prompt_tokens: Prompt tokens.
            completion_tokens: Completion tokens.
            warn: Warn (once per model) when the model is unknown.

        Returns:
            The cost in `currency`; 0 for an unknown model.
        """
        price = self.lookup(model)
        if price is None:
            if warn:
                self._warn_unknown(model)
            return 0.0
        return price.cost(prompt_tokens, completion_tokens)

    def batch_cost(
        self, model: str, prompt_tokens: int, completion_tokens: int, *, warn: bool = True
    ) -> float:
        """Cost of one call sent in a provider batch: `cost` less the `batch_discount`."""
        return self.cost(model, prompt_tokens, completion_tokens, warn=warn) * (
            1.0 - self.batch_discount
        )

    def _warn_unknown(self, model: str) -> None:
        with self._lock:
            if model in self._warned:
                return
            self._warned.add(model)
        where = f" ({self.source})" if self.source else ""
        warnings.warn(
            f"no price for model {model!r} in the price table{where}; its calls are counted "
            f"at 0 {self.currency}. Add it to a price file (--prices FILE or {PRICES_ENV})",
            UnknownModelPriceWarning,
            stacklevel=3,
        )

    def merged(self, other: PriceTable, *, discount: bool = True) -> PriceTable:
        """This table with ``other``'s entries added or replacing (``other``'s currency, and
        its batch discount when ``discount``, else this one's)."""
        source = " + ".join(s for s in (self.source, other.source) if s)
        return PriceTable(
            {**self.prices, **other.prices},
            currency=other.currency,
            source=source,
            batch_discount=other.batch_discount if discount else self.batch_discount,
        )


def _discount(data: Mapping[str, Any], source: str) -> float:
    """The ``batch_discount`` of a price file (the default when it gives none)."""
    value = data.get("batch_discount", DEFAULT_BATCH_DISCOUNT)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise PriceTableError(
            f"{source}: batch_discount must be a number in [0, 1) (the share of the price a "
            f"Batch API takes off; 0.5 is half price), got {value!r}"
        )
    return float(value)


def _parse_table(data: Any, source: str) -> tuple[PriceTable, bool]:
    """Validate a parsed YAML price table; return it and its ``replace`` flag."""
    if not isinstance(data, Mapping):
        raise PriceTableError(
            f"{source}: expected a mapping with 'currency' and 'models', got {type(data).__name__}"
        )
    unknown = set(data) - {"currency", "models", "replace", "batch_discount"}
    if unknown:
        raise PriceTableError(
            f"{source}: unknown top-level keys {sorted(unknown)}; expected currency, models, "
            "replace, batch_discount"
        )
    currency = data.get("currency", "USD")
    if not isinstance(currency, str) or not currency:
        raise PriceTableError(f"{source}: currency must be a non-empty string, got {currency!r}")
    models = data.get("models") or {}
    if not isinstance(models, Mapping):
        raise PriceTableError(
            f"{source}: 'models' must map model names to {{input: X, output: Y}}, "
            f"got {type(models).__name__}"
        )
    prices = {}
    for name, entry in models.items():
        if not isinstance(entry, Mapping) or set(entry) != {"input", "output"}:
            raise PriceTableError(
                f"{source}: model {name!r}: expected {{input: X, output: Y}} (per million "
                f"tokens), got {entry!r}"
            )
        values = []
        for side in ("input", "output"):
            value = entry[side]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise PriceTableError(
                    f"{source}: model {name!r}: {side} must be a number, got {value!r}"
                )
            if not math.isfinite(value) or value < 0:
                raise PriceTableError(
                    f"{source}: model {name!r}: {side} must be finite and >= 0, got {value!r}"
                )
            if value > MAX_PRICE:  # costs summed over millions of calls must stay finite
                raise PriceTableError(
                    f"{source}: model {name!r}: {side} must be at most {MAX_PRICE:,.0f} per "
                    f"million tokens, got {value!r}"
                )
            values.append(float(value))
        prices[str(name)] = ModelPrice(*values)
    replace = data.get("replace", False)
    if not isinstance(replace, bool):
        raise PriceTableError(f"{source}: replace must be true or false, got {replace!r}")
    table = PriceTable(
        prices, currency=currency, source=source, batch_discount=_discount(data, source)
    )
    return table, replace


def default_prices() -> PriceTable:
    """The example price table shipped with prefduel (a fresh object on every call).

    Raises:
        PriceTableError: The packaged file is missing (a broken installation).
    """
    try:
        text = resources.files("prefduel.llm").joinpath(_PACKAGE_FILE).read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise PriceTableError(
            f"the packaged price table prefduel/llm/{_PACKAGE_FILE} is missing ({exc}); "
            "reinstall prefduel"
        ) from None
    source = f"prefduel/llm/{_PACKAGE_FILE}"
    table, _ = _parse_table(parse_yaml(text, source, PriceTableError), source)
    return table


def load_prices(path: str | os.PathLike[str] | None = None) -> PriceTable:
    """The price table: the shipped one, with a user file's entries on top.

    Args:
        path: A user price file; None uses ``$PREFDUEL_PRICES`` if set, else only the
            shipped table.

    Returns:
        The merged table (only the user's when the file says ``replace: true``).

    Raises:
        PriceTableError: The user file is missing, not YAML, or not in the documented format.
    """
    if path is None:
        path = os.environ.get(PRICES_ENV) or None
    base = default_prices()
    if path is None:
        return base
    data = read_yaml(path, "price file", PriceTableError)
    user, replace = _parse_table(data, str(path))
    given = isinstance(data, Mapping) and "batch_discount" in data
    return user if replace else base.merged(user, discount=given)


def estimate_tokens(text: str) -> int:
    """A rough token count for planning (about 4 characters per token, at least 1).

    Used for dry-run estimates and by the offline backends; real counts come from the endpoint.
    """
    return max(1, math.ceil(len(text) / 4))
