"""Import and export of the JSONL interchange format (docs/reference.md, Interchange format).

An import reads and checks every line before it writes anything: a file with any bad line
changes nothing, and the error names every bad line with its number and reason. Export writes
one user's records in a fixed order and form, so ``export`` → ``import`` into an empty store →
``export`` gives the same bytes back.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, TypeVar

from lsp_memory import ids
from lsp_memory.errors import ImportFailed, UserError
from lsp_memory.model import (
    ENTITY_FIELD_TYPES,
    MAX_STATEMENT,
    ORIGINS,
    Claim,
    ClaimStatus,
    Context,
    Entity,
    EntityField,
    EntityType,
    Tag,
)
from lsp_memory.runtime import collector_paused
from lsp_memory.services.kernel.claim_form import claim_record, default_origin, drop_none
from lsp_memory.store.sqlite import Batch, Store, StoredKeys, UserKeys
from lsp_memory.text import blank, first_control

_Tree = TypeVar("_Tree", Context, Tag)

KINDS = ("entity_type", "tag", "context", "entity", "claim")
_CLAIM_UUID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
_STATUSES = ", ".join(status.value for status in ClaimStatus)

_FIELDS: dict[str, frozenset[str]] = {
    "claim": frozenset(
        """kind statement claim_id claim_number friendly_id user claim_type claim_types
        context_domain context_domains status confidence possible_questions contexts tags
        entities pinned created_at updated_at valid_from valid_to superseded_by merged_into
        derived_from evidence_count origin meta""".split()
    ),
    "context": frozenset(
        "kind name context_id friendly_id description parent user created_at updated_at".split()
    ),
    "entity_type": frozenset("kind name fields user".split()),
    "entity": frozenset(
        "kind name type entity_id friendly_id fields trashed user created_at updated_at".split()
    ),
    "tag": frozenset("kind name friendly_id parent user".split()),
}


class _Bad(ValueError):
    """One reason a line is bad."""


@dataclass(slots=True)
class ImportSummary:
    """What an import wrote, by kind."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))

    def describe(self) -> str:
        plural = {
            "entity_type": "entity types",
            "tag": "tags",
            "context": "contexts",
            "entity": "entities",
            "claim": "claims",
        }
        parts = [
            f"{n} {plural[kind] if n != 1 else kind.replace('_', ' ')}"
            for kind, n in self.counts.items()
            if n
        ]
        return "imported " + (", ".join(parts) if parts else "nothing (the file has no records)")


# -- reading one line -------------------------------------------------------------------------


class _Line:
    """One JSON object of the file and typed access to its fields."""

    def __init__(self, number: int, data: dict[str, Any]) -> None:
        self.number = number
        self.data = data

    def text(self, key: str, *, required: bool = False) -> str | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise _Bad(f"missing required field {key!r}")
            return None
        if not isinstance(value, str):
            raise _Bad(f"field {key!r} must be a string, not {_type_name(value)}")
        if required and not value.strip():
            raise _Bad(f"field {key!r} must not be empty")
        if key == "name":
            at = first_control(value)
            if at is not None:
                raise _Bad(
                    f"field 'name' cannot hold the control character U+{ord(value[at]):04X} "
                    f"(character {at + 1})"
                )
        return value

    def texts(self, key: str) -> list[str]:
        value = self.data.get(key)
        if value is None:
            return []
        # set(map(type, …)) checks every item at C speed; this runs six times per claim.
        if type(value) is not list or not set(map(type, value)) <= {str}:
            raise _Bad(f"field {key!r} must be a list of strings")
        return value

    def flag(self, key: str) -> bool:
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            raise _Bad(f"field {key!r} must be true or false, not {_type_name(value)}")
        return value

    def time(self, key: str) -> str | None:
        value = self.text(key)
        if value is None:
            return None
        try:
            return ids.timestamp(value)
        except ids.OutOfRange as error:
            raise _Bad(f"bad date in {key!r}: {error}") from None
        except ValueError:
            raise _Bad(f"bad date in {key!r}: {value!r} is not ISO 8601") from None

    def friendly_id(self, key: str = "friendly_id") -> str | None:
        value = self.text(key)
        if value is not None and not ids.FRIENDLY_ID.fullmatch(value):
            raise _Bad(
                f"{key} {value!r} is not a valid id (a letter, then 2 or more letters, "
                "digits, '_' or '-')"
            )
        return value


def _type_name(value: object) -> str:
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), "a value")


def statement_problem(statement: str) -> str | None:
    """Why ``statement`` cannot be a claim's, or None: blank (white space or zero-width
    characters only), longer than ``MAX_STATEMENT``, or holding a control character."""
    if blank(statement):
        return "a claim needs a statement; the text is empty"
    if len(statement) > MAX_STATEMENT:
        return (
            f"a claim is one fact of at most {MAX_STATEMENT:,} characters; this text has "
            f"{len(statement):,} (keep a longer text in a note)"
        )
    at = first_control(statement)
    if at is not None:
        return (
            f"a claim cannot hold the control character U+{ord(statement[at]):04X} "
            f"(character {at + 1})"
        )
    return None


def _read(data: bytes, problems: list[tuple[int, str]]) -> Iterator[_Line]:
    """The file's records; undecodable or malformed lines go to ``problems``."""
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            problems.append(
                (
                    number,
                    f"not valid UTF-8 (byte {raw[error.start]:#04x} at column {error.start + 1})",
                )
            )
            continue
        if number == 1:
            text = text.removeprefix("\ufeff")  # a byte-order mark, as some editors write
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            problems.append((number, f"not valid JSON: {error.msg} (column {error.colno})"))
            continue
        if not isinstance(value, dict):
            problems.append((number, f"expected a JSON object, found {_type_name(value)}"))
            continue
        kind = value.get("kind")
        if kind not in _FIELDS:
            shown = "missing" if kind is None else repr(kind)
            problems.append((number, f"unknown kind {shown} (expected one of {', '.join(KINDS)})"))
            continue
        unknown = sorted(set(value) - _FIELDS[kind])
        if unknown:
            problems.append(
                (
                    number,
                    f"{kind}: unknown field{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(map(repr, unknown))}",
                )
            )
            continue
        yield _Line(number, value)


# -- the import plan --------------------------------------------------------------------------


@dataclass(slots=True)
class _UserPlan:
    """One user's records from the file, checked against each other and the store."""

    user: str
    keys: UserKeys
    types: dict[str, tuple[int, EntityType]] = field(default_factory=dict)
    tags: dict[str, tuple[int, Tag]] = field(default_factory=dict)
    contexts: dict[str, tuple[int, Context]] = field(default_factory=dict)
    entities: dict[str, tuple[int, Entity]] = field(default_factory=dict)
    claims: list[tuple[int, Claim]] = field(default_factory=list)
    claim_ids: dict[str, int] = field(default_factory=dict)
    # Ids given in the file that another user holds → the new ids they are stored under.
    renamed: dict[str, str] = field(default_factory=dict)
    # Friendly ids taken in the store or earlier in the file, per kind.
    taken: dict[str, set[str] | StoredKeys] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.taken = {  # copies (`| set()`): `take` adds to them
            "tag": self.keys.tag_friendly_ids | set(),
            "context": self.keys.context_friendly_ids | set(),
            "entity": self.keys.entity_friendly_ids | set(),
        }

    def take(self, kind: str, fid: str) -> None:
        """Take ``fid`` for a record of ``kind``, or raise when it is taken."""
        if fid in self.taken[kind]:
            raise _Bad(f"duplicate friendly id {fid!r}")
        self.taken[kind].add(fid)


class _Importer:
    def __init__(self, store: Store, default_user: str, now: str, *, single: bool = False) -> None:
        """``single``: one record (a single write), checked against the store's keys one at a
        time rather than all of them loaded."""
        self.store = store
        self.default_user = default_user
        self.now = now
        self.single = single
        self.problems: list[tuple[int, str]] = []
        self.plans: dict[str, _UserPlan] = {}

    def plan(self, user: str) -> _UserPlan:
        if user not in self.plans:
            keys = self.store.keys(user, probed=self.single)
            self.plans[user] = _UserPlan(user=user, keys=keys)
        return self.plans[user]

    def run(self, lines: list[_Line]) -> Batch:
        lines = sorted(lines, key=lambda ln: KINDS.index(ln.data["kind"]))
        handlers: dict[str, Callable[[_Line, _UserPlan], None]] = {
            "entity_type": self.entity_type,
            "tag": self.tag,
            "context": self.context,
            "entity": self.entity,
            "claim": self.claim,
        }
        for line in lines:
            try:
                user = line.text("user") or self.default_user
                handlers[line.data["kind"]](line, self.plan(user))
            except _Bad as bad:
                self.problems.append((line.number, f"{line.data['kind']}: {bad}"))
        for plan in self.plans.values():
            self.check_links(plan)
        self.check_uuids()
        if self.problems:
            raise ImportFailed(
                "import", [f"line {n}: {why}" for n, why in sorted(self.problems, key=_line_number)]
            )
        return self.batch()

    # -- kinds ------------------------------------------------------------------------------

    def entity_type(self, line: _Line, plan: _UserPlan) -> None:
        name = line.text("name", required=True) or ""
        raw = line.data.get("fields", [])
        if not isinstance(raw, list):
            raise _Bad("field 'fields' must be a list of {name, type} objects")
        fields: list[EntityField] = []
        for item in raw:
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("name"), str)
                or not (isinstance(item.get("type"), str))
            ):
                raise _Bad("each of 'fields' must be an object with string 'name' and 'type'")
            if item["type"] not in ENTITY_FIELD_TYPES:
                raise _Bad(
                    f"field {item['name']!r} has unknown type {item['type']!r} "
                    f"(expected one of {', '.join(sorted(ENTITY_FIELD_TYPES))})"
                )
            if any(f.name == item["name"] for f in fields):
                raise _Bad(f"field {item['name']!r} is declared twice")
            fields.append(EntityField(item["name"], item["type"]))
        if name in plan.types:
            raise _Bad(f"duplicate entity type {name!r} (also on line {plan.types[name][0]})")
        stored = plan.keys.entity_types.get(name)
        if stored is not None:
            # Files that each declare the types they use import one after another.
            if stored != tuple(fields):
                raise _Bad(f"entity type {name!r} is already in the store with other fields")
            return
        plan.types[name] = (line.number, EntityType(plan.user, name, tuple(fields)))

    def tag(self, line: _Line, plan: _UserPlan) -> None:
        name = line.text("name", required=True) or ""
        fid = line.friendly_id() or ids.named_id(name, "tag", plan.taken["tag"])
        plan.take("tag", fid)
        tag = Tag(plan.user, fid, name, line.friendly_id("parent"))
        plan.tags[fid] = (line.number, tag)

    def context(self, line: _Line, plan: _UserPlan) -> None:
        name = line.text("name", required=True) or ""
        fid = line.friendly_id() or ids.friendly_id(name, plan.taken["context"], fallback="context")
        plan.take("context", fid)
        created = line.time("created_at") or self.now
        context = Context(
            context_id=line.text("context_id") or ids.new_uuid(),
            user=plan.user,
            friendly_id=fid,
            name=name,
            description=line.text("description") or "",
            parent=line.friendly_id("parent"),
            created_at=created,
            updated_at=line.time("updated_at") or created,
        )
        plan.contexts[fid] = (line.number, context)

    def entity(self, line: _Line, plan: _UserPlan) -> None:
        name = line.text("name", required=True) or ""
        type_name = line.text("type", required=True) or ""
        fields = line.data.get("fields", {})
        if not isinstance(fields, dict):
            raise _Bad("field 'fields' must be an object of field name → value")
        declared = (
            plan.types[type_name][1].fields
            if type_name in plan.types
            else (plan.keys.entity_types.get(type_name))
        )
        if declared is None:
            raise _Bad(f"unknown entity type {type_name!r}")
        fid = line.friendly_id() or ids.named_id(
            f"{name} {type_name}", "entity", plan.taken["entity"]
        )
        plan.take("entity", fid)
        types = {f.name: f.type for f in declared}
        for key, value in fields.items():
            if key not in types:
                raise _Bad(f"{type_name} has no field {key!r}")
            _check_field_value(key, types[key], value)
        created = line.time("created_at") or self.now
        entity = Entity(
            entity_id=line.text("entity_id") or ids.new_uuid(),
            user=plan.user,
            friendly_id=fid,
            name=name,
            type=type_name,
            fields=dict(fields),
            trashed=line.flag("trashed"),
            created_at=created,
            updated_at=line.time("updated_at") or created,
        )
        plan.entities[fid] = (line.number, entity)

    def claim(self, line: _Line, plan: _UserPlan) -> None:
        statement = line.text("statement", required=True) or ""
        problem = statement_problem(statement)
        if problem:
            raise _Bad(f"statement: {problem}")
        claim_id = line.text("claim_id")
        if claim_id is not None and not _CLAIM_UUID.fullmatch(claim_id):
            raise _Bad(f"claim_id {claim_id!r} must be a UUID (letters, digits and '-')")
        number = line.data.get("claim_number")
        if number is not None and (
            isinstance(number, bool) or not isinstance(number, int) or number < 1
        ):
            raise _Bad(f"claim_number must be a whole number ≥ 1, not {number!r}")
        status_text = line.text("status") or ClaimStatus.ACTIVE.value
        try:
            status = ClaimStatus(status_text)
        except ValueError:
            raise _Bad(f"unknown status {status_text!r} (expected one of {_STATUSES})") from None
        confidence = line.data.get("confidence", 1.0)
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not (0.0 <= confidence <= 1.0)
        ):
            raise _Bad(f"confidence must be a number from 0 to 1, not {confidence!r}")
        meta = line.data.get("meta", {})
        if not isinstance(meta, dict):
            raise _Bad("field 'meta' must be an object")
        # Ids of episodes and merged claims, checked for form only: episodes are not in the
        # store, so an id cannot be looked up, and a merged claim may since have been removed.
        derived_from = line.texts("derived_from")
        if not all(item.strip() for item in derived_from):
            raise _Bad("field 'derived_from' must be a list of non-empty ids")
        evidence = line.data.get("evidence_count", 0)
        if isinstance(evidence, bool) or not isinstance(evidence, int) or not 0 <= evidence < 2**63:
            raise _Bad(f"evidence_count must be a whole number ≥ 0, not {evidence!r}")
        origin = line.text("origin") or default_origin(derived_from)
        if origin not in ORIGINS:
            raise _Bad(f"unknown origin {origin!r} (expected {' or '.join(ORIGINS)})")
        created = line.time("created_at") or self.now
        claim = Claim(
            claim_id=claim_id or "",
            user=plan.user,
            number=number or 0,
            friendly_id=line.friendly_id() or "",
            statement=statement,
            claim_types=tuple(
                _first_then(line.text("claim_type"), line.texts("claim_types"), default="fact")
            ),
            domains=tuple(_first_then(line.text("context_domain"), line.texts("context_domains"))),
            status=status,
            confidence=float(confidence),
            possible_questions=tuple(line.texts("possible_questions")),
            pinned=line.flag("pinned"),
            created_at=created,
            updated_at=line.time("updated_at") or created,
            valid_from=line.time("valid_from"),
            valid_to=line.time("valid_to"),
            superseded_by=line.text("superseded_by"),
            merged_into=line.text("merged_into"),
            derived_from=tuple(derived_from),
            evidence_count=evidence,
            origin=origin,
            meta=meta,
            contexts=tuple(dict.fromkeys(line.texts("contexts"))),
            tags=tuple(dict.fromkeys(line.texts("tags"))),
            entities=tuple(dict.fromkeys(line.texts("entities"))),
        )
        if claim.claim_id:
            if claim.claim_id in plan.claim_ids or any(
                claim.claim_id in other.claim_ids for other in self.plans.values()
            ):
                raise _Bad(f"duplicate claim_id {claim.claim_id!r}")
            plan.claim_ids[claim.claim_id] = line.number
        plan.claims.append((line.number, claim))

    # -- checks across lines ----------------------------------------------------------------

    def check_links(self, plan: _UserPlan) -> None:
        keys = plan.keys
        problems = self.problems
        _check_parents(plan.contexts, keys.context_parents, "context", problems)
        _check_parents(plan.tags, keys.tag_parents, "tag", problems)
        entities = keys.entity_friendly_ids | plan.entities.keys()
        for number, entity in plan.entities.values():
            declared = (
                plan.types[entity.type][1].fields
                if entity.type in plan.types
                else (keys.entity_types.get(entity.type, ()))
            )
            for spec in declared:
                for target in _entity_refs(spec.type, entity.fields.get(spec.name)):
                    if target not in entities:
                        problems.append(
                            (
                                number,
                                f"entity: field {spec.name!r} refers to unknown entity {target!r}",
                            )
                        )
        contexts = keys.context_friendly_ids | plan.contexts.keys()
        tags = keys.tag_friendly_ids | plan.tags.keys()
        fids: dict[str, int] = {}
        numbers: dict[int, int] = {}
        for number, claim in plan.claims:

            def bad(why: str, line: int = number) -> None:
                problems.append((line, f"claim: {why}"))

            fid = claim.friendly_id
            if fid and (fid in keys.claim_friendly_ids or fid in fids):
                bad(
                    f"duplicate friendly id {fid!r}"
                    + (f" (also on line {fids[fid]})" if fid in fids else " (already in the store)")
                )
            if fid:
                fids.setdefault(fid, number)
            if claim.number and (claim.number in keys.claim_numbers or claim.number in numbers):
                bad(f"duplicate claim_number {claim.number}")
            if claim.number:
                numbers.setdefault(claim.number, number)
            for ref, known, what in (
                (claim.contexts or (), contexts, "context"),
                (claim.tags or (), tags, "tag"),
                (claim.entities or (), entities, "entity"),
            ):
                for target in ref:
                    if target not in known:
                        bad(f"refers to unknown {what} {target!r}")
            for link in ("superseded_by", "merged_into"):
                target = getattr(claim, link)
                if (
                    target
                    and target not in plan.claim_ids
                    and (self.store.claim_owner(target) != plan.user)
                ):
                    bad(f"{link} refers to unknown claim {target!r}")

    def check_uuids(self) -> None:
        """Ids given in the file are unique in it and not yet this user's in the store (claim
        ids given twice are caught line by line in ``claim``). An id another user holds is
        stored as an id derived from it and this user (``ids.user_uuid``), so importing the
        same file again is refused the same way and nothing says what another user has."""
        for plan in self.plans.values():
            tables: list[tuple[str, str, list[tuple[int, Any]]]] = [
                ("claims", "claim_id", plan.claims),
                ("contexts", "context_id", list(plan.contexts.values())),
                ("entities", "entity_id", list(plan.entities.values())),
            ]
            for table, key, records in tables:
                given: dict[str, int] = {}
                for number, record in records:
                    value = getattr(record, key)
                    if value in given and table != "claims":
                        self.problems.append((number, f"{table[:-1]}: duplicate {key} {value!r}"))
                    given.setdefault(value, number)
                owners = self.store.uuid_owners(table, [v for v in given if v])
                theirs = {
                    v: ids.user_uuid(plan.user, v) for v, o in owners.items() if o != plan.user
                }
                derived = self.store.uuid_owners(table, theirs.values())
                for value, number in given.items():
                    mine = owners.get(value) == plan.user
                    if mine or (value in theirs and derived.get(theirs[value]) == plan.user):
                        self.problems.append(
                            (number, f"{table[:-1]}: {key} {value!r} is already in the store")
                        )
                    elif value in theirs:
                        plan.renamed[value] = theirs[value]

    # -- the batch --------------------------------------------------------------------------

    def batch(self) -> Batch:
        """Fill in generated ids and numbers, then hand everything over in one batch."""
        batch = Batch()
        for plan in self.plans.values():
            batch.entity_types += [t for _, t in plan.types.values()]
            batch.tags += [t for _, t in plan.tags.values()]
            new = plan.renamed
            batch.contexts += [
                replace(c, context_id=new[c.context_id]) if c.context_id in new else c
                for _, c in plan.contexts.values()
            ]
            batch.entities += [
                replace(e, entity_id=new[e.entity_id]) if e.entity_id in new else e
                for _, e in plan.entities.values()
            ]
            taken = plan.keys.claim_friendly_ids | {c.friendly_id for _, c in plan.claims}
            last = max([plan.keys.last_number, *(c.number for _, c in plan.claims)])
            for _, claim in plan.claims:
                changes: dict[str, Any] = {}
                if not claim.claim_id:
                    changes["claim_id"] = ids.new_uuid()
                for link in ("claim_id", "superseded_by", "merged_into"):
                    if getattr(claim, link) in new:
                        changes[link] = new[getattr(claim, link)]
                if any(source in new for source in claim.derived_from):
                    changes["derived_from"] = tuple(new.get(s, s) for s in claim.derived_from)
                if not claim.number:
                    last += 1
                    changes["number"] = last
                if not claim.friendly_id:
                    changes["friendly_id"] = ids.friendly_id(claim.statement, taken)
                    taken.add(changes["friendly_id"])
                batch.claims.append(replace(claim, **changes) if changes else claim)
        return batch


def _line_number(problem: tuple[int, str]) -> int:
    """Problems sort by line; a line's own problems keep the order they were found in."""
    return problem[0]


def _first_then(first: str | None, rest: list[str], default: str | None = None) -> list[str]:
    """``claim_type`` + ``claim_types`` (or the domain pair) as one list, primary first."""
    values = ([first] if first else []) + rest
    if not values and default:
        values = [default]
    return list(dict.fromkeys(values))


def _entity_refs(field_type: str, value: object) -> list[str]:
    if value is None:
        return []
    if field_type == "entity_ref" and isinstance(value, str):
        return [value] if value.strip() else []
    if field_type == "entity_ref_list":
        items = value.split(",") if isinstance(value, str) else value
        if isinstance(items, list):
            return [item.strip() for item in items if isinstance(item, str) and item.strip()]
    return []


def _check_field_value(name: str, field_type: str, value: object) -> None:
    if value is None or field_type == "computed":
        return
    where = f"field {name!r} ({field_type})"
    if field_type in ("text", "select", "note_ref", "entity_ref"):
        if not isinstance(value, str):
            raise _Bad(f"{where} must be a string")
    elif field_type == "email":
        if not isinstance(value, str) or (value and "@" not in value):
            raise _Bad(f"{where} must be an email address")
    elif field_type == "date":
        if not isinstance(value, str):
            raise _Bad(f"{where} must be an ISO 8601 date")
        try:
            date.fromisoformat(value[:10]) if value else None
        except ValueError:
            raise _Bad(f"bad date in {where}: {value!r}") from None
    elif field_type in ("text_list", "entity_ref_list") and not _strings(value):
        raise _Bad(f"{where} must be a list of strings or a comma-separated string")


def _strings(value: object) -> bool:
    """A comma-separated string or a list of strings."""
    return isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(item, str) for item in value)
    )


def _check_parents(
    records: Mapping[str, tuple[int, Context | Tag]],
    stored: Mapping[str, str | None],
    kind: str,
    problems: list[tuple[int, str]],
) -> None:
    """Every parent exists for the same user, and no chain of parents loops."""
    # Looked up, not copied: ``stored`` may be probed one key at a time (a single write).
    new = {fid: r.parent for fid, (_, r) in records.items()}

    def known(fid: str) -> bool:
        return fid in new or fid in stored

    for fid, (number, record) in records.items():
        if record.parent is None:
            continue
        if not known(record.parent):
            problems.append((number, f"{kind}: parent {record.parent!r} is not a known {kind}"))
            continue
        chain = [fid]
        current: str | None = record.parent
        while current is not None and known(current) and current not in chain:
            chain.append(current)
            current = new[current] if current in new else stored[current]
        if current == fid:
            problems.append((number, f"{kind}: parent cycle {' → '.join([*chain, fid])}"))


def import_records(
    store: Store,
    data: bytes,
    *,
    user: str,
    source: str,
    progress: Callable[[str, int, int], None] | None = None,
) -> ImportSummary:
    """Check every line of ``data`` and write them all, or raise ``ImportFailed`` naming every
    bad line and write nothing. ``progress(stage, done, total)`` hears of its three steps
    (read, checked, written) as ``import``."""
    report = progress or (lambda stage, done, total: None)
    importer = _Importer(store, user, ids.now())
    with collector_paused():
        lines = list(_read(data, importer.problems))
        report("import", 1, 3)
        try:
            batch = importer.run(lines)
        except ImportFailed as failed:
            raise ImportFailed(source, failed.problems) from None
        report("import", 2, 3)
        store.write(batch)
        report("import", 3, 3)
    summary = ImportSummary()
    for kind, records in (
        ("entity_type", batch.entity_types),
        ("tag", batch.tags),
        ("context", batch.contexts),
        ("entity", batch.entities),
        ("claim", batch.claims),
    ):
        summary.counts[kind] = len(records)
    return summary


def add_record(
    store: Store,
    record: dict[str, Any],
    *,
    user: str,
    supersedes: Callable[[Claim], Sequence[str]] | None = None,
) -> Batch:
    """Check and write one record given in interchange form (``claim add``,
    ``context add``); return what was written, generated ids filled in. A problem raises
    ``UserError`` with the reason alone. ``supersedes``: given the new claim, the ids of the
    claims it supersedes, marked so in the same transaction."""
    for attempt in range(_ATTEMPTS):
        importer = _Importer(store, user, ids.now(), single=True)
        try:
            batch = importer.run([_Line(1, record)])
        except ImportFailed:
            reasons = "; ".join(
                why.split(": ", 2)[-1] for _, why in sorted(importer.problems, key=_line_number)
            )
            raise UserError(reasons) from None
        replaced = supersedes(batch.claims[0]) if supersedes and batch.claims else ()
        try:
            store.write(batch, supersedes=replaced, when=importer.now)
        except sqlite3.IntegrityError:
            # Another process wrote the number or id chosen for this record between the
            # check and the write: choose again.
            if attempt == _ATTEMPTS - 1:
                raise UserError(
                    "other processes kept taking the same claim numbers; try again"
                ) from None
            continue
        return batch
    raise AssertionError("unreachable")


_ATTEMPTS = 5
"""How often a single write chooses its number and id again after another process took
them first."""


# -- export -----------------------------------------------------------------------------------


def export_records(store: Store, user: str) -> Iterator[str]:
    """The user's records as JSONL lines, definitions before use, in a fixed order."""

    def line(record: dict[str, Any]) -> str:
        return json.dumps(drop_none(record), ensure_ascii=False)

    for entity_type in store.entity_types(user):
        yield line(
            {
                "kind": "entity_type",
                "user": user,
                "name": entity_type.name,
                "fields": [{"name": f.name, "type": f.type} for f in entity_type.fields],
            }
        )
    for tag in _parents_first(store.tags(user)):
        yield line(
            {
                "kind": "tag",
                "user": user,
                "friendly_id": tag.friendly_id,
                "name": tag.name,
                "parent": tag.parent,
            }
        )
    for context in _parents_first(store.contexts(user)):
        yield line(
            {
                "kind": "context",
                "user": user,
                "context_id": context.context_id,
                "friendly_id": context.friendly_id,
                "name": context.name,
                "description": context.description or None,
                "parent": context.parent,
                "created_at": context.created_at,
                "updated_at": context.updated_at,
            }
        )
    for entity in sorted(store.entities(user), key=lambda e: e.friendly_id):
        yield line(
            {
                "kind": "entity",
                "user": user,
                "entity_id": entity.entity_id,
                "friendly_id": entity.friendly_id,
                "name": entity.name,
                "type": entity.type,
                "fields": entity.fields,
                "trashed": entity.trashed,
                "created_at": entity.created_at,
                "updated_at": entity.updated_at,
            }
        )
    for claim in store.claims(user):
        yield line(claim_record(claim))


def _parents_first(records: list[_Tree]) -> list[_Tree]:
    """Records ordered so every parent comes before its children (then by friendly id);
    records caught in a hand-made cycle come last."""
    children: dict[str | None, list[_Tree]] = {}
    known = {r.friendly_id for r in records}
    for record in sorted(records, key=lambda r: r.friendly_id):
        parent = record.parent if record.parent in known else None
        children.setdefault(parent, []).append(record)
    ordered: list[_Tree] = []
    queue = list(children.get(None, []))
    while queue:
        record = queue.pop(0)
        ordered.append(record)
        queue += children.get(record.friendly_id, [])
    placed = {r.friendly_id for r in ordered}
    return ordered + [
        r for r in sorted(records, key=lambda r: r.friendly_id) if r.friendly_id not in placed
    ]
