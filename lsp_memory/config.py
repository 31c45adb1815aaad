"""Settings: ``lsp-memory.toml`` + environment + command-line overrides → a frozen ``Config``.

Precedence, lowest first: built-in defaults, the config file, the environment
(``LSP_MEMORY_STORE``, ``LSP_MEMORY_USER``, ``LSP_MEMORY_BUSY_TIMEOUT_MS``,
``LSP_MEMORY_MIN_SIMILARITY``), explicit overrides (command-line flags, later the
LSP's initializationOptions). A bad setting never stops the program: it yields a one-line
warning and the default.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from lsp_memory.model import KNOWN_TYPES

CONFIG_NAME = "lsp-memory.toml"
APP_NAME = "lsp-memory"
DEFAULT_BUDGET = 1500
DIAGNOSTIC_SEVERITIES: Mapping[str, str] = MappingProxyType(
    {
        "unresolved": "warning",
        "unknown-mention": "hint",
        "inactive-claim": "warning",
        "broken-link": "warning",
        "ambiguous-link": "information",
        "archived-note": "hint",
    }
)
"""Every diagnostic kind and its default severity; the ``severities`` setting overrides them."""
SEVERITY_LEVELS = ("error", "warning", "information", "hint", "off")
DEFAULT_MIN_SIMILARITY = 0.51
"""The relevance floor (``min_similarity``): raw cosine with the query, all-MiniLM-L6-v2. Chosen
on part of LoCoMo's dev split (docs/benchmarks.md, The relevance floor): a question asked of
another conversation's memory gets nothing 9 times in 10, at under 0.01 nDCG@10 on its own. The
seed's 0.7 on this scale costs 0.23."""
DEFAULT_RELATED_SIMILARITY = 0.67
"""The raw cosine a note or claim needs to be suggested as related to a paragraph
(``related_similarity``; docs/benchmarks.md, Related-note suggestions)."""


@dataclass(frozen=True, slots=True)
class Tier:
    """One source of automatic memories for a context block (docs/reference.md, The context block):
    claims of ``types``
    (any of a claim's types; empty: no type filter), at most ``max`` of them (0 turns the
    tier off), and for the active tier only those updated in the last ``days``."""

    types: tuple[str, ...] = ()
    max: int = 10
    days: float | None = None


@dataclass(frozen=True, slots=True)
class TierSettings:
    """The automatic-memory tiers of docs/reference.md, The context block, with its defaults."""

    core: Tier = Tier(("identity", "preference", "relationship"), 15)
    active: Tier = Tier(("project-active", "goal", "emotional", "constraint"), 15, 14.0)
    semantic: Tier = Tier((), 10)  # the hybrid search on the document's clean text
    recent: Tier = Tier((), 10)  # the newest claims


_TIER_KEYS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "core": ("types", "max"),
        "active": ("types", "max", "days"),
        "semantic": ("max",),
        "recent": ("max",),
    }
)


@dataclass(frozen=True, slots=True)
class DecayRates:
    """Consolidation's decay per day, by where a claim came from (docs/reference.md,
    Consolidation): claims ``inferred`` from conversations fade at 0.01 a day unless evidence
    renews them; what the user ``stated`` is not a guess and does not fade. Each origin maps
    ``default`` and any category to its rate (a feeling may fade faster than a job)."""

    inferred: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"default": 0.01}), hash=False
    )
    stated: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({"default": 0.0}), hash=False
    )

    def rate(self, origin: str, category: str) -> float:
        """The rate per day of a claim of ``origin`` and ``category``."""
        rates = self.inferred if origin == "inferred" else self.stated
        return rates.get(category, rates["default"])


def default_user() -> str:
    """The login name, or ``user`` when there is none (containers without a passwd entry)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "user"


def default_store() -> Path:
    """The user data folder (``~/.local/share/lsp-memory`` on Linux)."""
    from platformdirs import user_data_path

    return user_data_path(APP_NAME)


def default_cache() -> Path:
    """The user cache folder, where derived indexes live."""
    from platformdirs import user_cache_path

    return user_cache_path(APP_NAME)


@dataclass(frozen=True, slots=True)
class Config:
    """Every setting, parsed once."""

    store: Path = field(default_factory=default_store)
    user: str = field(default_factory=default_user)
    vaults: tuple[Path, ...] = ()
    budget: int = DEFAULT_BUDGET
    model: Path | None = None
    excludes: tuple[str, ...] = ()
    cache: Path = field(default_factory=default_cache)
    busy_timeout_ms: int = 5000  # how long a write waits for another writer
    # The largest open document the language server reads for references (bytes).
    max_document_bytes: int = 2_000_000
    # Diagnostic kind → error, warning, information, hint or off (that kind not reported).
    # Left out of the hash (a mapping has none), so a Config stays hashable.
    severities: Mapping[str, str] = field(default_factory=lambda: DIAGNOSTIC_SEVERITIES, hash=False)
    tiers: TierSettings = field(default_factory=TierSettings)  # build-context's automatic memories
    # A program that classifies claims instead of the built-in classifier (a local LLM, say).
    classifier_command: str | None = None
    classifier_timeout_s: float = 10.0  # how long it may take before the built-in answers
    # Claim type → how a new claim of that type supersedes older ones (``SUPERSEDE_RULES``);
    # types left out follow the built-in rule. Left out of the hash, as ``severities``.
    supersede: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    # A program that decides consolidation's review items (a local LLM, say), asked once per
    # run; unset, the items wait for the user.
    review_command: str | None = None
    review_timeout_s: float = 30.0
    # A program that extracts claims from a conversation message (a local LLM, say).
    extractor_command: str | None = None
    extractor_timeout_s: float = 30.0
    # How often the language server consolidates in the background, in seconds (None: never).
    consolidate_every: float | None = None
    decay: DecayRates = field(default_factory=DecayRates)  # consolidation's decay per day
    # The relevance floor of what search and the semantic tier choose by meaning: a query whose
    # best hit's cosine is below it gets nothing (``services.retrieval.search``; None: off).
    min_similarity: float | None = DEFAULT_MIN_SIMILARITY
    # A conversation's shares of its context blocks, in tokens: its last messages (required),
    # the earlier messages and the claims recalled from them, and what ``search_memory`` gave
    # its last turn (``services.block.conversation``).
    recent_tokens: int = 400
    episode_tokens: int = 200
    fact_tokens: int = 200
    tool_tokens: int = 400
    # How long the language server's embedding helper process (``store.embedhelper``) stays
    # up with nothing to embed, in seconds; 0 embeds in the server's own process instead.
    # 90: a start costs ~1 s of waiting and the helper ~250 MiB while up; edits and searches
    # come seconds to a minute apart while someone works, so it stays up through those pauses
    # and gives the memory back a minute and a half after the last.
    embed_idle_seconds: float = 90.0
    # The cosine a note or claim needs to be offered as related to the paragraph under the
    # cursor (``services.editor.related``; None: no suggestions).
    related_similarity: float | None = DEFAULT_RELATED_SIMILARITY
    source: Path | None = None  # the config file read, if any


COMMAND_SETTINGS = ("classifier_command", "review_command", "extractor_command")
"""Settings that run a program. A folder's ``lsp-memory.toml`` (a cloned repository's, say)
sets them only once the user has trusted that folder (``lsp-memory trust``); the user's own
config file and the editor's settings always may."""
TRUST_FILE = "trusted-folders"
"""In the user's config folder: one trusted folder a line (``lsp-memory trust`` writes it)."""


def user_config_file() -> Path:
    from platformdirs import user_config_path

    return user_config_path(APP_NAME) / CONFIG_NAME


def trusted_folders() -> list[Path]:
    """The folders whose ``lsp-memory.toml`` may run programs (and every folder inside
    them); none when the list cannot be read."""
    try:
        text = (user_config_file().parent / TRUST_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    lines = (line.strip() for line in text.splitlines())
    return [Path(line) for line in lines if line and not line.startswith("#")]


def is_trusted(folder: Path) -> bool:
    here = folder.resolve()
    return any(here == trusted or here.is_relative_to(trusted) for trusted in trusted_folders())


def trust(folder: Path) -> Path:
    """Add ``folder`` (resolved) to the trust list; the folder as written there."""
    resolved = folder.resolve()
    if resolved in trusted_folders():
        return resolved
    listing = user_config_file().parent / TRUST_FILE
    listing.parent.mkdir(parents=True, exist_ok=True)
    with listing.open("a", encoding="utf-8") as out:
        out.write(f"{resolved}\n")
    return resolved


def _untrusted_commands(data: dict[str, Any], path: Path) -> tuple[dict[str, Any], list[str]]:
    """``data`` from the config file at ``path`` without the settings that run programs,
    unless it is the user's own file or its folder is trusted; a warning for each left out."""
    if path == user_config_file() or is_trusted(path.parent):
        return data, []
    kept: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in data.items():
        if _CAMEL.sub(r"_\1", key).lower() in COMMAND_SETTINGS:
            warnings.append(
                f"{path}: {key} ignored: this folder is not trusted to run programs "
                f"(`lsp-memory trust {path.parent}` trusts it)"
            )
        else:
            kept[key] = value
    return kept, warnings


def find_config_file(start: Path) -> Path | None:
    """``lsp-memory.toml`` in ``start`` or the nearest folder above it, else the user's."""
    for folder in (start, *start.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    candidate = user_config_file()
    return candidate if candidate.is_file() else None


def _path(value: object, base: Path) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise TypeError("expected a non-empty path string")
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def _text(value: object, _base: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError("expected a non-empty string")
    return value.strip()


def _budget(value: object, _base: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TypeError("expected a positive whole number of tokens")
    return value


def _milliseconds(value: object, _base: Path) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError("expected a whole number of milliseconds")
    return value


def _bytes(value: object, _base: Path) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TypeError("expected a whole number of bytes, 1 or more")
    return value


def _seconds(value: object, _base: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TypeError("expected a positive number of seconds")
    return float(value)


def _idle(value: object, _base: Path) -> float:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e9:
        raise TypeError("expected a number of seconds, 0 or more (0: no helper process)")
    return float(value)


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


def _every(value: object, _base: Path) -> float | None:
    """A period: seconds, or a number with a unit (``90s``, ``30m``, ``24h``, ``7d``);
    ``0`` or ``"off"`` for never."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("off", "never", "0"):
            return None
        number, unit = (text[:-1], text[-1]) if text[-1:] in _UNITS else (text, "s")
        if number.replace(".", "", 1).isdigit():
            value = float(number) * _UNITS[unit]
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise TypeError('expected seconds or a period such as "30m", "24h", "7d" (or "off")')
    if value == 0:
        return None
    if value < 60:
        raise TypeError("expected a period of at least a minute")
    return float(value)


def _similarity(value: object, _base: Path) -> float | None:
    """A cosine from 0 to 1, or ``"off"`` (or ``false``) for no floor."""
    if value is False or (isinstance(value, str) and value.strip().lower() in ("off", "none")):
        return None
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value.strip())
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise TypeError('expected a cosine from 0 to 1, or "off"')
    return float(value)


def _paths(value: object, base: Path) -> tuple[Path, ...]:
    if not isinstance(value, list):
        raise TypeError("expected a list of paths")
    return tuple(_path(item, base) for item in value)


def _globs(value: object, _base: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError("expected a list of glob strings")
    return tuple(value)


def _severities(value: object, _base: Path) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise TypeError("expected a table of diagnostic kind = severity")
    levels = ", ".join(SEVERITY_LEVELS)
    chosen: dict[str, str] = {}
    for kind, level in value.items():
        if kind not in DIAGNOSTIC_SEVERITIES:
            raise TypeError(
                f"unknown diagnostic kind {kind!r} (expected {', '.join(DIAGNOSTIC_SEVERITIES)})"
            )
        if not isinstance(level, str) or level.strip().lower() not in SEVERITY_LEVELS:
            raise TypeError(f"{kind}: expected one of {levels}, not {level!r}")
        chosen[kind] = level.strip().lower()
    # Kinds left out keep their default, so a table may name just the kinds it changes.
    return MappingProxyType({**DIAGNOSTIC_SEVERITIES, **chosen})


def _tier(name: str, value: object, default: Tier) -> Tier:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}: expected a table with {', '.join(_TIER_KEYS[name])}")
    tier = default
    for key, item in value.items():
        if key not in _TIER_KEYS[name]:
            raise TypeError(f"{name}: unknown key {key!r} (expected {', '.join(_TIER_KEYS[name])})")
        if key == "types":
            if (
                not isinstance(item, list)
                or not item
                or not all(isinstance(t, str) and t.strip() for t in item)
            ):
                raise TypeError(f"{name}.types: expected a non-empty list of claim types")
            tier = replace(tier, types=tuple(t.strip() for t in item))
        elif key == "max":
            if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                raise TypeError(f"{name}.max: expected a whole number, 0 or more")
            tier = replace(tier, max=item)
        else:
            if isinstance(item, bool) or not isinstance(item, int | float) or item <= 0:
                raise TypeError(f"{name}.days: expected a positive number of days")
            tier = replace(tier, days=float(item))
    return tier


def _tiers(value: object, _base: Path) -> TierSettings:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected a table of tiers ({', '.join(_TIER_KEYS)})")
    tiers = TierSettings()
    for name, table in value.items():
        if name not in _TIER_KEYS:
            raise TypeError(f"unknown tier {name!r} (expected {', '.join(_TIER_KEYS)})")
        # Tiers and keys left out keep their defaults.
        tiers = replace(tiers, **{name: _tier(name, table, getattr(tiers, name))})
    return tiers


SUPERSEDE_RULES = ("similar", "all", "person", "none")
"""What the ``supersede`` setting may choose for a claim type (see
``services.memory.supersede``)."""


def _supersede(value: object, _base: Path) -> Mapping[str, str]:
    if not isinstance(value, Mapping):
        raise TypeError("expected a table of claim type = rule")
    rules = ", ".join(SUPERSEDE_RULES)
    chosen: dict[str, str] = {}
    for claim_type, rule in value.items():
        if claim_type not in KNOWN_TYPES:
            raise TypeError(
                f"unknown claim type {claim_type!r} (expected one of {', '.join(KNOWN_TYPES)})"
            )
        if not isinstance(rule, str) or rule.strip().lower() not in SUPERSEDE_RULES:
            raise TypeError(f"{claim_type}: expected one of {rules}, not {rule!r}")
        chosen[str(claim_type).strip()] = rule.strip().lower()
    return MappingProxyType(chosen)


def _decay(value: object, _base: Path) -> DecayRates:
    """``inferred`` and ``stated``, each a rate per day for every category or a table of
    ``default`` and categories; what is left out keeps its default."""
    if not isinstance(value, Mapping):
        raise TypeError("expected a table with inferred and stated")
    rates = DecayRates()
    for origin, given in value.items():
        if origin not in ("inferred", "stated"):
            raise TypeError(f"unknown origin {origin!r} (expected inferred or stated)")
        table = given if isinstance(given, Mapping) else {"default": given}
        chosen = dict(getattr(rates, origin))
        for category, rate in table.items():
            if category != "default" and category not in KNOWN_TYPES:
                raise TypeError(
                    f"{origin}: unknown claim type {category!r} (expected default or one of "
                    f"{', '.join(KNOWN_TYPES)})"
                )
            if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
                raise TypeError(f"{origin}.{category}: expected a rate per day from 0 to 1")
            chosen[category] = float(rate)
        rates = replace(rates, **{origin: MappingProxyType(chosen)})
    return rates


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
"""Where a camelCase setting name (``busyTimeoutMs``) takes an underscore."""

_PARSERS = {
    "store": _path,
    "user": _text,
    "vaults": _paths,
    "budget": _budget,
    "model": _path,
    "excludes": _globs,
    "cache": _path,
    "busy_timeout_ms": _milliseconds,
    "max_document_bytes": _bytes,
    "severities": _severities,
    "tiers": _tiers,
    "classifier_command": _text,
    "classifier_timeout_s": _seconds,
    "supersede": _supersede,
    "review_command": _text,
    "review_timeout_s": _seconds,
    "extractor_command": _text,
    "extractor_timeout_s": _seconds,
    "consolidate_every": _every,
    "decay": _decay,
    "min_similarity": _similarity,
    "recent_tokens": _budget,
    "episode_tokens": _budget,
    "fact_tokens": _budget,
    "tool_tokens": _budget,
    "embed_idle_seconds": _idle,
    "related_similarity": _similarity,
}


def apply_settings(
    config: Config, settings: Mapping[str, Any], *, base: Path, origin: str
) -> tuple[Config, list[str]]:
    """Overlay ``settings`` on ``config``; each bad or unknown key gives a warning and is
    skipped, so its earlier value (ultimately the default) stands. A key may be written in
    camelCase, as editors name settings (``busyTimeoutMs`` for ``busy_timeout_ms``)."""
    warnings: list[str] = []
    changes: dict[str, Any] = {}
    for key, value in settings.items():
        name = _CAMEL.sub(r"_\1", key).lower() if key not in _PARSERS else key
        parse = _PARSERS.get(name)
        if parse is None:
            warnings.append(f"{origin}: unknown setting {key!r} ignored")
            continue
        try:
            changes[name] = parse(value, base)
        except TypeError as error:
            warnings.append(f"{origin}: setting {key!r}: {error}; using the default")
    return replace(config, **changes), warnings


def load_config(
    overrides: Mapping[str, Any] | None = None,
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Config, list[str]]:
    """Build the configuration from file, environment and ``overrides``; return it with any
    warnings about bad settings."""
    here = cwd or Path.cwd()
    env = os.environ if environ is None else environ
    config = Config()
    warnings: list[str] = []
    path = find_config_file(here)
    if path is not None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            warnings.append(f"{path}: cannot read config ({error}); using defaults")
        else:
            data, held = _untrusted_commands(data, path)
            warnings += held
            config, found = apply_settings(config, data, base=path.parent, origin=str(path))
            config = replace(config, source=path)
            warnings += found
    from_env = {
        key: env[name]
        for key, name in (
            ("store", "LSP_MEMORY_STORE"),
            ("user", "LSP_MEMORY_USER"),
            ("busy_timeout_ms", "LSP_MEMORY_BUSY_TIMEOUT_MS"),
            ("min_similarity", "LSP_MEMORY_MIN_SIMILARITY"),
        )
        if env.get(name)
    }
    config, found = apply_settings(config, from_env, base=here, origin="environment")
    warnings += found
    if overrides:
        config, found = apply_settings(config, overrides, base=here, origin="command line")
        warnings += found
    return config, warnings
