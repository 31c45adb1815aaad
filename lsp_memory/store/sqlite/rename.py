"""Renaming a claim, context, entity or tag: its friendly id, the entity fields naming it, and
the change log entries that make the full-text index show the new id."""

from __future__ import annotations

import json
import sqlite3

from lsp_memory.errors import StoreError
from lsp_memory.store.schema import index_entity_names
from lsp_memory.store.sqlite.changes import _log, _log_rows
from lsp_memory.store.sqlite.connection import StoreBase, _translated

_RENAMEABLE = {"claim": "claims", "context": "contexts", "entity": "entities", "tag": "tags"}
"""Records with a friendly id, by kind: their tables."""
_LINKS_OF = {
    "context": ("context_claims", "context"),
    "entity": ("claim_entities", "entity"),
    "tag": ("claim_tags", "tag"),
}
"""The link table (and its column) joining a context, entity or tag to its claims."""


def _rename_entity_refs(db: sqlite3.Connection, user: str, old: str, new: str) -> list[int]:
    """Rewrite the user's entity fields that name the entity ``old`` to name ``new``; the
    rows of the entities changed. A comma-separated ``entity_ref_list`` keeps its spacing."""
    kinds: dict[int, dict[str, str]] = {
        int(type_id): {f["name"]: f["type"] for f in json.loads(fields)}
        for type_id, fields in db.execute(
            "SELECT id, fields FROM entity_types WHERE user = ?", (user,)
        )
    }
    changed: list[int] = []
    # Only the entities whose fields may name it (`entity_refs`), not every entity's fields.
    rows = db.execute(
        "SELECT id, type, fields FROM entities WHERE id IN "
        "(SELECT entity FROM entity_refs WHERE user = ? AND name = ?)",
        (user, old),
    ).fetchall()
    for row, type_id, text in rows:
        fields = json.loads(text)
        declared = kinds.get(int(type_id), {})
        touched = False
        for name, value in fields.items():
            kind = declared.get(name)
            if kind == "entity_ref" and value == old:
                fields[name] = new
                touched = True
            elif kind == "entity_ref_list" and isinstance(value, list):
                if old in value:
                    fields[name] = [new if item == old else item for item in value]
                    touched = True
            elif kind == "entity_ref_list" and isinstance(value, str):
                parts = value.split(",")
                if any(part.strip() == old for part in parts):
                    fields[name] = ",".join(
                        part.replace(old, new) if part.strip() == old else part for part in parts
                    )
                    touched = True
        if touched:
            written = json.dumps(fields, ensure_ascii=False)
            db.execute("UPDATE entities SET fields = ? WHERE id = ?", (written, row))
            index_entity_names(db, [(int(row), user, written)])
            changed.append(int(row))
    return changed


class Renames(StoreBase):
    """Giving a record a new friendly id."""

    @_translated
    def rename(self, user: str, kind: str, old: str, new: str) -> None:
        """Give the user's claim, context, entity or tag ``old`` the friendly id ``new``, in
        one transaction: all of it or, on any failure, none of it.

        Entity fields that name an entity (``entity_ref``, ``entity_ref_list``) follow it.
        The change log lists every record whose search document shows the id, so the
        full-text index re-indexes them: the record itself (claims, contexts, entities), the
        claims linked directly to a renamed context, entity or tag, and the entities whose
        fields changed. ``updated_at`` is left alone: an id is a handle, not content, and a
        renamed claim keeps its place in "newest first" orders.

        Raises ``StoreError`` when the user has no such record, when ``new`` is already a
        friendly id of any of the user's claims, contexts, entities or tags, and (one line)
        when the store is locked past the busy timeout or read-only.
        """
        table = _RENAMEABLE[kind]
        with self._write() as db:
            row = db.execute(
                f"SELECT id FROM {table} WHERE user = ? AND friendly_id = ?", (user, old)
            ).fetchone()
            if row is None:
                raise StoreError(f"no {kind} @{old} to rename")
            for other_kind, other in _RENAMEABLE.items():
                taken = db.execute(
                    f"SELECT 1 FROM {other} WHERE user = ? AND friendly_id = ?", (user, new)
                ).fetchone()
                if taken is not None:
                    raise StoreError(f"@{new} is already the id of a {other_kind}")
            record = int(row[0])
            db.execute(f"UPDATE {table} SET friendly_id = ? WHERE id = ?", (new, record))
            if kind in ("claim", "context", "entity"):
                _log(db, kind, record)
            if kind == "entity":
                _log_rows(db, "entity", _rename_entity_refs(db, user, old, new))
            links = _LINKS_OF.get(kind)
            if links is not None:
                table_name, column = links
                claims = db.execute(
                    f"SELECT claim FROM {table_name} WHERE {column} = ?", (record,)
                ).fetchall()
                _log_rows(db, "claim", [int(claim) for (claim,) in claims])
