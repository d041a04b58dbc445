"""The attribute taxonomy Θ: a versioned, typed set of preference attributes.

Each `Attribute` has a stable id (``family.name``), a description and a value space:
ordinal levels (ordered, with labels) or unordered categories. The shipped taxonomy
(``data/taxonomy.yaml``, 38 attributes across explanation, style, structure, affect and domain
expertise) is loaded with `load_taxonomy`; a user file in the same format replaces it::

    tax = load_taxonomy()                 # the shipped one
    tax.version                           # '1.0.0'
    a = tax["explanation.analogies"]
    [v.value for v in a.values]           # ['none', 'occasional', 'frequent']
    a.distance("none", "frequent")        # 1.0 (ordinal distance scaled to [0, 1])

Besides the value space, an attribute carries what the generators need: its relevance per task
domain (for choosing the sparse subset F(i)), trait loadings (for values consistent with the
persona's traits), router keywords and a natural clarifying question.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from prefduel.core.yamlfile import parse_yaml
from prefduel.prefdisco.errors import TaxonomyError

TAXONOMY_FORMAT = "prefduel/prefdisco-taxonomy"
KINDS = ("ordinal", "categorical")
FAMILIES = ("explanation", "style", "structure", "affect", "expertise")
#: Trait names a loading or salience may refer to (see ``personas.trait_vector``).
TRAITS = (
    "openness",
    "conscientiousness",
    "extraversion",
    "agreeableness",
    "neuroticism",
    "expertise",
    "education",
    "need_for_cognition",
    "pace",
    "age",
    "modality:visual",
    "modality:verbal",
    "modality:examples",
    "modality:steps",
    "goal:understand",
    "goal:answer",
    "goal:teach",
    "goal:decide",
)
_ATTRIBUTE_KEYS = {
    "id",
    "family",
    "name",
    "description",
    "kind",
    "levels",
    "categories",
    "default",
    "relevance",
    "salience",
    "loadings",
    "keywords",
    "question",
}
_VALUE_KEYS = {"value", "label", "description", "prior", "loadings"}
_ID = re.compile(r"^[a-z]+\.[a-z][a-z0-9_]*$")
_VALUE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Value:
    """One point of an attribute's value space.

    Attributes:
        value: Stable id, e.g. ``"frequent"``.
        label: Short human label, unique within the attribute (shown to models and judges).
        description: What a response with this value looks like.
        prior: Base rate of a categorical value (ordinal levels: 1).
        loadings: Trait -> logit slope of a categorical value (ordinal levels: empty).
    """

    value: str
    label: str
    description: str
    prior: float = 1.0
    loadings: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Attribute:
    """One preference attribute θ of the taxonomy.

    Attributes:
        id: Stable id ``family.name``.
        family: One of `FAMILIES`.
        name: Human name, unique in the taxonomy.
        description: What the attribute is about.
        kind: ``"ordinal"`` (values ordered low -> high) or ``"categorical"``.
        values: The value space, in order for ordinal attributes.
        default: The value a generic, non-personalized answer typically has.
        relevance: Domain -> relevance in [0, 1]; key ``"*"`` is the fallback.
        salience: Trait -> slope; relevance is multiplied by ``exp(sum slope * z)``.
        loadings: Ordinal only: trait -> slope of the latent that picks the level.
        keywords: Router phrases.
        question: A natural clarifying question about the attribute.
    """

    id: str
    family: str
    name: str
    description: str
    kind: str
    values: tuple[Value, ...]
    default: str
    relevance: Mapping[str, float]
    salience: Mapping[str, float]
    loadings: Mapping[str, float]
    keywords: tuple[str, ...]
    question: str

    @property
    def ordinal(self) -> bool:
        """Whether the values are ordered."""
        return self.kind == "ordinal"

    @property
    def value_ids(self) -> tuple[str, ...]:
        """The value ids, in order."""
        return tuple(v.value for v in self.values)

    def value(self, value: str) -> Value:
        """The `Value` with id ``value``.

        Raises:
            TaxonomyError: ``value`` is not in this attribute's value space.
        """
        for v in self.values:
            if v.value == value:
                return v
        raise TaxonomyError(
            f"attribute {self.id}: unknown value {value!r}; expected one of {list(self.value_ids)}"
        )

    def index(self, value: str) -> int:
        """Position of ``value`` in the value space."""
        return self.value_ids.index(self.value(value).value)

    def distance(self, a: str, b: str) -> float:
        """Distance of two values in [0, 1]: ordinal |i - j| / (n - 1); categorical 0 or 1."""
        if self.ordinal:
            return abs(self.index(a) - self.index(b)) / (len(self.values) - 1)
        return 0.0 if self.value(a).value == self.value(b).value else 1.0

    def relevance_for(self, domain: str) -> float:
        """Relevance of the attribute to a task of ``domain``."""
        return float(self.relevance.get(domain, self.relevance.get("*", 0.0)))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` in the YAML file's shape."""
        key = "levels" if self.ordinal else "categories"
        values = []
        for v in self.values:
            item: dict[str, Any] = {
                "value": v.value,
                "label": v.label,
                "description": v.description,
            }
            if not self.ordinal:
                item["prior"] = v.prior
                if v.loadings:
                    item["loadings"] = dict(v.loadings)
            values.append(item)
        data: dict[str, Any] = {
            "id": self.id,
            "family": self.family,
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            key: values,
            "default": self.default,
            "relevance": dict(self.relevance),
        }
        if self.salience:
            data["salience"] = dict(self.salience)
        if self.ordinal:
            data["loadings"] = dict(self.loadings)
        data["keywords"] = list(self.keywords)
        data["question"] = self.question
        return data


@dataclass(frozen=True)
class Taxonomy:
    """A versioned set of attributes, indexed by id.

    Attributes:
        version: The taxonomy version (semantic versioning).
        domains: Task domains the relevance tables speak about.
        families: Family -> description.
        attributes: The attributes, in file order.
        source: Where it was loaded from (for messages).
    """

    version: str
    domains: tuple[str, ...]
    families: Mapping[str, str]
    attributes: tuple[Attribute, ...]
    source: str = "<memory>"
    _by_id: dict[str, Attribute] = field(init=False, repr=False, compare=False)
    _by_name: dict[str, Attribute] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {a.id: a for a in self.attributes})
        object.__setattr__(self, "_by_name", {a.name.lower(): a for a in self.attributes})

    def __len__(self) -> int:
        return len(self.attributes)

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self.attributes)

    def __contains__(self, attribute_id: object) -> bool:
        return attribute_id in self._by_id

    def __getitem__(self, attribute_id: str) -> Attribute:
        try:
            return self._by_id[attribute_id]
        except KeyError:
            raise TaxonomyError(
                f"taxonomy {self.version} ({self.source}): unknown attribute {attribute_id!r}"
            ) from None

    @property
    def ids(self) -> tuple[str, ...]:
        """Attribute ids in file order."""
        return tuple(a.id for a in self.attributes)

    def by_name(self, name: str) -> Attribute | None:
        """The attribute with this human name (case-insensitive), or None."""
        return self._by_name.get(name.strip().lower())

    def check_value(self, attribute_id: str, value: str) -> None:
        """Raise `TaxonomyError` unless ``value`` is in the attribute's value space."""
        self[attribute_id].value(value)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready ``dict`` in the YAML file's shape."""
        return {
            "format": TAXONOMY_FORMAT,
            "version": self.version,
            "domains": list(self.domains),
            "families": dict(self.families),
            "attributes": [a.to_json() for a in self.attributes],
        }

    @property
    def digest(self) -> str:
        """SHA-256 (first 16 hex digits) of the canonical JSON form: identifies the content."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# -- loading ---------------------------------------------------------------------------------


def default_taxonomy_path() -> Any:
    """The shipped taxonomy file (an importlib resource)."""
    return resources.files("prefduel.prefdisco").joinpath("data/taxonomy.yaml")


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load and validate a taxonomy file (default: the shipped one).

    Args:
        path: A YAML file in the documented format, or None for the shipped taxonomy.

    Returns:
        The validated taxonomy.

    Raises:
        TaxonomyError: The file is missing, not YAML, or breaks a rule (the message names the
            file, the attribute id and the field).
    """
    if path is None:
        resource = default_taxonomy_path()
        source = "shipped taxonomy.yaml"
        try:
            text = resource.read_text(encoding="utf-8")
        except (FileNotFoundError, OSError) as exc:
            raise TaxonomyError(
                "the shipped taxonomy prefduel/prefdisco/data/taxonomy.yaml is missing "
                "(a non-editable install needs it declared as package data)"
            ) from exc
    else:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise TaxonomyError(f"taxonomy file {path} does not exist") from None
        except OSError as exc:
            raise TaxonomyError(f"cannot read taxonomy file {path}: {exc}") from None
    data = parse_yaml(text, source, TaxonomyError)
    return taxonomy_from_json(data, source=source)


def taxonomy_from_json(data: Any, *, source: str = "<memory>") -> Taxonomy:
    """Build and validate a taxonomy from its JSON/YAML form.

    Raises:
        TaxonomyError: Naming ``source``, the attribute and the field at fault.
    """
    if not isinstance(data, Mapping):
        raise TaxonomyError(f"{source}: expected a mapping at the top, got {type(data).__name__}")
    if data.get("format") != TAXONOMY_FORMAT:
        raise TaxonomyError(
            f"{source}: format must be {TAXONOMY_FORMAT!r}, got {data.get('format')!r}"
        )
    version = data.get("version")
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise TaxonomyError(f"{source}: version must be a string like '1.0.0', got {version!r}")
    domains = data.get("domains")
    if not isinstance(domains, list) or not all(isinstance(d, str) for d in domains):
        raise TaxonomyError(f"{source}: domains must be a list of names, got {domains!r}")
    families = data.get("families")
    if not isinstance(families, Mapping) or set(families) != set(FAMILIES):
        raise TaxonomyError(
            f"{source}: families must describe exactly {list(FAMILIES)}, "
            f"got {sorted(families) if isinstance(families, Mapping) else families!r}"
        )
    raw = data.get("attributes")
    if not isinstance(raw, list) or not raw:
        raise TaxonomyError(f"{source}: attributes must be a non-empty list")
    attributes = [_attribute(item, i, tuple(domains), source) for i, item in enumerate(raw)]
    for what, key in (("id", lambda a: a.id), ("name", lambda a: a.name.lower())):
        seen: set[str] = set()
        for a in attributes:
            if key(a) in seen:
                raise TaxonomyError(f"{source}: duplicate attribute {what} {key(a)!r}")
            seen.add(key(a))
    return Taxonomy(
        version=version,
        domains=tuple(domains),
        families={k: str(families[k]) for k in FAMILIES},
        attributes=tuple(attributes),
        source=source,
    )


def _text(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise TaxonomyError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value.strip()


def _numbers(value: Any, where: str, allowed: tuple[str, ...] | None) -> dict[str, float]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TaxonomyError(f"{where}: expected a mapping of numbers, got {value!r}")
    out = {}
    for key, number in value.items():
        if allowed is not None and key not in allowed:
            raise TaxonomyError(f"{where}: unknown key {key!r}; expected one of {list(allowed)}")
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise TaxonomyError(f"{where}.{key}: expected a number, got {number!r}")
        if not math.isfinite(number):
            raise TaxonomyError(f"{where}.{key}: expected a finite number, got {number!r}")
        out[str(key)] = float(number)
    return out


def _attribute(item: Any, index: int, domains: tuple[str, ...], source: str) -> Attribute:
    """One attribute of the taxonomy file (checks run in a fixed order: the first is reported)."""
    attr_id, where, family, kind = _attribute_head(item, index, source)
    values = _values(item, kind, where)
    default = _text(item, "default", where)
    if default not in {v.value for v in values}:
        raise TaxonomyError(
            f"{where}: default {default!r} is not one of {[v.value for v in values]}"
        )
    relevance, loadings = _weights(item, kind, domains, where)
    keywords = _keywords(item, where)
    return Attribute(
        id=attr_id,
        family=family,
        name=_text(item, "name", where),
        description=_text(item, "description", where),
        kind=kind,
        values=values,
        default=default,
        relevance=relevance,
        salience=_numbers(item.get("salience"), f"{where}.salience", TRAITS),
        loadings=loadings,
        keywords=keywords,
        question=_text(item, "question", where),
    )


def _attribute_head(item: Any, index: int, source: str) -> tuple[str, str, str, str]:
    """Id, message prefix (``SOURCE: attribute ID``), family and kind of an attribute."""
    where = f"{source}: attributes[{index}]"
    if not isinstance(item, Mapping):
        raise TaxonomyError(f"{where}: expected a mapping, got {type(item).__name__}")
    attr_id = _text(item, "id", where)
    if not _ID.match(attr_id):
        raise TaxonomyError(f"{where}: id {attr_id!r} must look like family.name (lower case)")
    where = f"{source}: attribute {attr_id}"
    unknown = sorted(set(item) - _ATTRIBUTE_KEYS)
    if unknown:
        raise TaxonomyError(f"{where}: unknown keys {unknown}; expected {sorted(_ATTRIBUTE_KEYS)}")
    family = _text(item, "family", where)
    if family not in FAMILIES or not attr_id.startswith(family + "."):
        raise TaxonomyError(
            f"{where}: family {family!r} must be one of {list(FAMILIES)} and prefix the id"
        )
    kind = _text(item, "kind", where)
    if kind not in KINDS:
        raise TaxonomyError(f"{where}: kind must be one of {list(KINDS)}, got {kind!r}")
    return attr_id, where, family, kind


def _values(item: Mapping[str, Any], kind: str, where: str) -> tuple[Value, ...]:
    """The levels of an ordinal attribute or the categories of a categorical one."""
    key, other = ("levels", "categories") if kind == "ordinal" else ("categories", "levels")
    if other in item:
        raise TaxonomyError(f"{where}: a {kind} attribute has {key}, not {other}")
    raw_values = item.get(key)
    if not isinstance(raw_values, list) or len(raw_values) < 2:
        raise TaxonomyError(f"{where}: {key} must list at least 2 values")
    values = tuple(_value(v, kind, f"{where}: {key}[{j}]") for j, v in enumerate(raw_values))
    for what in ("value", "label"):
        names = [getattr(v, what).lower() for v in values]
        if len(set(names)) != len(names):
            raise TaxonomyError(f"{where}: duplicate {what}s in {names}")
    return values


def _value(v: Any, kind: str, where: str) -> Value:
    if not isinstance(v, Mapping):
        raise TaxonomyError(f"{where}: expected a mapping, got {v!r}")
    unknown = sorted(set(v) - _VALUE_KEYS)
    if unknown:
        raise TaxonomyError(
            f"{where}: unknown keys {unknown} (a comma in an unquoted description?); "
            f"expected {sorted(_VALUE_KEYS)}"
        )
    value_id = _text(v, "value", where)
    if not _VALUE.match(value_id):
        raise TaxonomyError(f"{where}: value {value_id!r} must be a lower-case identifier")
    prior = v.get("prior", 1.0)
    if isinstance(prior, bool) or not isinstance(prior, int | float) or not prior > 0:
        raise TaxonomyError(f"{where}: prior must be a positive number, got {prior!r}")
    if kind == "ordinal" and ("prior" in v or "loadings" in v):
        raise TaxonomyError(f"{where}: ordinal levels take no prior or loadings")
    return Value(
        value=value_id,
        label=_text(v, "label", where),
        description=_text(v, "description", where),
        prior=float(prior),
        loadings=_numbers(v.get("loadings"), f"{where}.loadings", TRAITS),
    )


def _weights(
    item: Mapping[str, Any], kind: str, domains: tuple[str, ...], where: str
) -> tuple[dict[str, float], dict[str, float]]:
    """Relevance per domain (or ``*``) and the trait loadings of an ordinal attribute."""
    relevance = _numbers(item.get("relevance"), f"{where}.relevance", (*domains, "*"))
    if not relevance or any(not 0 <= r <= 1 for r in relevance.values()):
        raise TaxonomyError(f"{where}: relevance must map domains (or '*') to numbers in [0, 1]")
    loadings = _numbers(item.get("loadings"), f"{where}.loadings", TRAITS)
    if kind == "ordinal" and not loadings:
        raise TaxonomyError(f"{where}: an ordinal attribute needs trait loadings")
    if kind == "categorical" and "loadings" in item:
        raise TaxonomyError(f"{where}: categorical attributes put loadings on categories")
    return relevance, loadings


def _keywords(item: Mapping[str, Any], where: str) -> tuple[str, ...]:
    keywords = item.get("keywords")
    if (
        not isinstance(keywords, list)
        or not keywords
        or not all(isinstance(k, str) and k.strip() for k in keywords)
    ):
        raise TaxonomyError(f"{where}: keywords must be a non-empty list of phrases")
    return tuple(k.strip().lower() for k in keywords)
