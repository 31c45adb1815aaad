"""Identifiers: friendly ids (docs/reference.md, Interchange format), slugs and timestamps. Pure
functions."""

from __future__ import annotations

import math
import re
import secrets
import unicodedata
import uuid
from collections.abc import Callable, Container
from datetime import UTC, date, datetime, timedelta

MAX_FRIENDLY_ID = 60
MAX_WORDS = 3
_MAX_WORD = 20

FRIENDLY_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{2,}")
"""What an ``@<id>`` can name (docs/reference.md, Reference grammar); every stored friendly id must
match it."""

# English stop words, plus "user": claims are about the user, so the word names nothing.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before
    being below between both but by can cannot could couldn did didn do does doesn doing don
    down during each few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how i if in into is isn it its itself just let ll me more most
    mustn my myself no nor not now of off on once only or other ought our ours ourselves out
    over own re s same shan she should shouldn so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was wasn
    we were weren what when where which while who whom why will with won would wouldn y you
    your yours yourself yourselves also get got really like always usually currently user users
    """.split()
)

_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-case ASCII words of ``text``, accents folded (``café`` → ``cafe``)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _WORD.findall(folded.lower())


def slug(text: str, *, max_words: int | None = None) -> str:
    """``My Health Goals`` → ``my_health_goals``: the key contexts are found by name with."""
    parts = words(text)
    if max_words is not None:
        parts = parts[:max_words]
    return "_".join(parts)


def name_key(name: str) -> str:
    """A context name compared as docs/reference.md, Resolution step 4 says: lower-cased, spaces as
    underscores."""
    return "_".join(name.lower().split())


def meaningful_words(text: str) -> list[str]:
    """Up to three words that carry meaning: stop words, single letters and numbers skipped
    at the start (an id must start with a letter)."""
    chosen: list[str] = []
    for word in words(text):
        if word in STOP_WORDS or len(word) < 2 or (not chosen and not word[0].isalpha()):
            continue
        chosen.append(word[:_MAX_WORD])
        if len(chosen) == MAX_WORDS:
            break
    return chosen


_CLAIM_NUMBER_ID = re.compile(r"claim_[0-9]+")


def friendly_id(
    text: str,
    taken: Container[str] = (),
    *,
    fallback: str = "claim",
    suffix: Callable[[], str] = lambda: secrets.token_hex(2),
) -> str:
    """A friendly id for ``text``: 1–3 meaningful words, ``_``-joined, a 4-hex suffix.

    ``prefer_morning_a3f2`` for "I prefer morning meetings". Never one in ``taken``, never
    longer than 60 characters, never ``claim_<digits>`` (``@claim_1234`` names claim 1234).
    """
    base = "_".join(meaningful_words(text)) or fallback
    base = base[: MAX_FRIENDLY_ID - 5].rstrip("_")
    while True:
        candidate = f"{base}_{suffix()}"
        if candidate not in taken and not _CLAIM_NUMBER_ID.fullmatch(candidate):
            return candidate


def named_id(name: str, kind: str, taken: Container[str] = ()) -> str:
    """A readable id for a named record: ``alice_person_entity``, ``sleep_tag``.

    Falls back to a 4-hex suffix when the plain one is taken.
    """
    base = slug(name, max_words=4)
    if not base or not base[0].isalpha():
        base = f"{kind}_{base}".rstrip("_")
    base = base[: MAX_FRIENDLY_ID - len(kind) - 7]
    candidate = f"{base}_{kind}"
    while candidate in taken:
        candidate = f"{base}_{secrets.token_hex(2)}_{kind}"
    return candidate


def new_uuid() -> str:
    """A random UUID as text, for claim, context and entity ids."""
    return str(uuid.uuid4())


_IMPORTED = uuid.UUID("5b1f3c4e-8f7a-4d2b-9c61-0e4a7d9b2f10")


def user_uuid(user: str, given: str) -> str:
    """The id ``user`` stores a record under when another user of the store already holds
    the id ``given`` in an imported file: derived from both, so the same file imported again
    meets the same id."""
    return str(uuid.uuid5(_IMPORTED, f"{user}\0{given}"))


_SECONDS_Z = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
_STORED = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


class OutOfRange(ValueError):
    """A valid ISO 8601 time that falls outside the years 1 to 9999 once in UTC
    (``9999-12-31T23:00:00-05:00``)."""


def stored(moment: datetime) -> str:
    """The stored form of a moment: UTC, microseconds, ``Z`` (isoformat is C; strftime was
    a tenth of an import's time). A naive moment is taken as UTC."""
    utc = moment.astimezone(UTC) if moment.tzinfo is not None else moment
    return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def moment_of(stamp: str) -> datetime:
    """A stored (or any ISO 8601) timestamp as an aware UTC-based datetime; a naive one is
    taken as UTC. Raises ``ValueError``."""
    text = stamp.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def seconds(stamp: str | None) -> float:
    """A timestamp as seconds since the epoch (0 when absent)."""
    return moment_of(stamp).timestamp() if stamp else 0.0


def stamp_at(epoch_seconds: float) -> str:
    """Seconds since the epoch (whole seconds) as a stored timestamp."""
    when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=math.floor(epoch_seconds))
    return stored(when)


def now() -> str:
    """The current time as a stored timestamp."""
    return stored(datetime.now(UTC))


def timestamp(value: str) -> str:
    """Parse an ISO 8601 date or date-time; return it in the stored form (UTC, fixed width,
    so text order is time order). Naive times are taken as UTC. Raises ``ValueError``
    (``OutOfRange`` for a time beyond the years 1 to 9999 in UTC)."""
    try:
        moment = moment_of(value)
    except ValueError:
        day = date.fromisoformat(value.strip())  # raises ValueError with its own message
        moment = datetime(day.year, day.month, day.day)
    # Fast paths for the two common shapes; fromisoformat above has already checked the date.
    if _STORED.fullmatch(value):
        return value
    if _SECONDS_Z.fullmatch(value):
        return value[:19] + ".000000Z"
    try:
        return stored(moment)
    except OverflowError:
        raise OutOfRange(f"{value!r} falls outside the years 1 to 9999 in UTC") from None


_AGO = re.compile(r"\s*(\d{1,6})\s*(m|min|h|d|w)\s*", re.IGNORECASE)
_AGO_UNITS = {"m": 60, "min": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def since(value: str, moment: str | None = None) -> str:
    """The start of a timeframe as a stored timestamp: ``30m``, ``24h``, ``7d``, ``2w``
    before ``moment`` (now when None), or an ISO 8601 date or date-time. Raises
    ``ValueError`` naming both forms."""
    ago = _AGO.fullmatch(value)
    if ago:
        end = moment_of(moment) if moment else datetime.now(UTC)
        try:
            return stored(end - timedelta(seconds=int(ago[1]) * _AGO_UNITS[ago[2].lower()]))
        except OverflowError:
            raise OutOfRange(f"{value!r} reaches back before the year 1") from None
    try:
        return timestamp(value)
    except ValueError:
        raise ValueError(
            f"{value!r} is neither a timeframe (30m, 24h, 7d, 2w) nor an ISO 8601 date or time"
        ) from None
