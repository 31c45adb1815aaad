"""The entity walk of a context block: Entity context, breadth-first from the entities the
document references through their ``entity_ref`` and ``entity_ref_list`` fields, and the
notes their ``note_ref`` fields name (Notes linked via entity fields)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from lsp_memory.model import Entity, EntityType, Note
from lsp_memory.services.block.notes import note_handle, note_piece
from lsp_memory.services.block.pieces import (
    ENTITIES,
    ENTITY_NOTES,
    P_DEEP_ENTITY,
    P_ENTITY,
    P_ENTITY_NOTE,
    Build,
    Piece,
    fold,
)
from lsp_memory.services.kernel.resolver import Resolution, Resolver
from lsp_memory.store.sqlite import Store

NOT_EXPANDED = "(further references not expanded)"

MAX_ENTITY_NOTES = 3
ENTITY_NOTE_CHARS = 2000
MAX_ENTITY_DEPTH = 2


def add_entities(
    build: Build,
    resolutions: Sequence[Resolution],
    pinned: set[str],
    *,
    store: Store,
    user: str,
    resolver: Resolver,
    read: Callable[[Note], str],
) -> None:
    """The referenced entities and those their fields reach, to depth 2, each once; then
    the first 3 notes their fields name that are not in ``pinned`` (keys of pinned notes),
    their text given by ``read``."""
    types: dict[str, EntityType] = {t.name: t for t in store.entity_types(user)}
    cache: dict[str, Entity | None] = {}

    def entity(friendly_id: str) -> Entity | None:
        if friendly_id not in cache:
            cache[friendly_id] = store.entity_by_friendly_id(user, friendly_id)
        return cache[friendly_id]

    queue: deque[tuple[Entity, int, str | None]] = deque()
    visited: set[str] = set()
    for resolution in resolutions:
        found = resolution.entity
        if resolution.error is None and found is not None and found.friendly_id not in visited:
            visited.add(found.friendly_id)
            cache[found.friendly_id] = found
            queue.append((found, 0, None))
    linked: list[tuple[Note, str]] = []  # entity-linked notes and their entity's key
    linked_keys: set[str] = set()
    # Every field that reaches an entity, in the order found (headings are written once the
    # walk is over, so a referrer found after the entity was shown is named too).
    referrers: dict[str, list[str]] = {}
    shown_entities: list[tuple[Entity, int, str | None, list[str], dict[str, str]]] = []
    while queue:
        current, depth, via = queue.popleft()
        kind = types.get(current.type)
        declared = {f.name: f.type for f in kind.fields} if kind is not None else {}
        names = list(dict.fromkeys([*declared, *current.fields]))
        expand = depth < MAX_ENTITY_DEPTH and not current.trashed
        lines: list[str] = []
        shown: dict[str, str] = {}
        for name in names if expand else ():
            value = current.fields.get(name)
            field_type = declared.get(name, "text")
            if field_type == "computed" or _empty(value):
                continue
            if field_type in ("entity_ref", "entity_ref_list"):
                parts = []
                for target_id in _entity_ids(value):
                    target = entity(target_id)
                    parts.append(_entity_handle(target, target_id))
                    if target is None:
                        continue
                    referrer = f"@{current.name}.{name}"
                    found_by = referrers.setdefault(target_id, [])
                    if referrer not in found_by:
                        found_by.append(referrer)
                    if target_id not in visited:
                        visited.add(target_id)
                        queue.append((target, depth + 1, referrer))
                rendered = ", ".join(parts)
            elif field_type == "note_ref":
                parts = []
                for target_text in _note_targets(value):
                    note = _find_note(resolver, target_text)
                    if note is None:
                        parts.append(f"[[{target_text}]] (not found)")
                        continue
                    parts.append(note_handle(note))
                    if note.key not in pinned and note.key not in linked_keys:
                        linked_keys.add(note.key)
                        linked.append((note, f"entity:{current.friendly_id}.{name}"))
                rendered = ", ".join(parts)
            elif isinstance(value, list | tuple):
                rendered = ", ".join(_scalar(v) for v in value if not _empty(v))
            else:
                rendered = _scalar(value)
            if rendered:
                lines.append(f"  {name}: {rendered}\n")
                shown[name] = rendered
        shown_entities.append((current, depth, via, lines, shown))
    for current, depth, via, lines, shown in shown_entities:
        found_by = [] if via is None else referrers.get(current.friendly_id, [via])
        where = "directly mentioned" if via is None else f"referenced via {', '.join(found_by)}"
        deleted = " (deleted)" if current.trashed else ""
        further = f" {NOT_EXPANDED}" if depth >= MAX_ENTITY_DEPTH else ""
        heading = (
            f"### @{current.name} ({current.type}) [id:{current.friendly_id}]{deleted}"
            f"  ← {where}{further}\n"
        )
        build.add(
            Piece(
                ENTITIES,
                P_ENTITY if depth == 0 else P_DEEP_ENTITY,
                "entity",
                f"entity:{current.friendly_id}",
                heading + "".join(lines),
                {
                    "kind": "entity",
                    "friendly_id": current.friendly_id,
                    "name": current.name,
                    "type": current.type,
                    "trashed": current.trashed,
                    "depth": depth,
                    "via": via,
                    "referrers": found_by,
                    "fields": shown,
                },
            )
        )
    for note, source in linked[:MAX_ENTITY_NOTES]:
        entity_key, _, field_name = source.partition(".")
        build.add(
            note_piece(
                read,
                ENTITY_NOTES,
                P_ENTITY_NOTE,
                note,
                heading=None,
                limit=ENTITY_NOTE_CHARS,
                key=f"linked:{note.key}",
                requires=entity_key,
                extra={"entity": entity_key.removeprefix("entity:"), "field": field_name},
            )
        )


def _find_note(resolver: Resolver, target: str) -> Note | None:
    title, _, _ = target.partition("#")
    for vault in resolver.vaults:
        found = vault.resolve(title.strip()).note
        if found is not None:
            return found
    return None


def _entity_ids(value: object) -> list[str]:
    """Entity friendly ids in a field value: a string (comma-separated) or a list."""
    if isinstance(value, str):
        items: list[object] = list(value.split(","))
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return []
    ids = [str(item).strip().removeprefix("@") for item in items]
    return list(dict.fromkeys(i for i in ids if i))


def _empty(value: object) -> bool:
    return (
        value is None
        or (isinstance(value, str | list | tuple | dict) and not value)
        or (isinstance(value, str) and not value.strip())
    )


def _scalar(value: object) -> str:
    if isinstance(value, str):
        return fold(value)
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _note_targets(value: object) -> list[str]:
    items = value if isinstance(value, list | tuple) else [value]
    targets = []
    for item in items:
        text = str(item).strip()
        if text.startswith("[[") and text.endswith("]]"):
            text = text[2:-2]
        text = text.partition("|")[0].strip()
        if text:
            targets.append(text)
    return targets


def _entity_handle(found: Entity | None, friendly_id: str) -> str:
    if found is None:
        return f"@{friendly_id} (not found)"
    deleted = " (deleted)" if found.trashed else ""
    return f"@{found.name} [id:{found.friendly_id}]{deleted}"
