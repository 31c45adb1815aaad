"""Entities, their types, and setting entity fields."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lsp_memory.errors import StoreError
from lsp_memory.model import Entity, EntityField, EntityType
from lsp_memory.store.sqlite.changes import _log
from lsp_memory.store.sqlite.connection import StoreBase, _translated
from lsp_memory.store.sqlite.rows import _ENTITY_SELECT, _entity


class Entities(StoreBase):
    """Reading entities and entity types; updating entity fields."""

    @_translated
    def entity_by_friendly_id(self, user: str, friendly_id: str) -> Entity | None:
        row = self._db.execute(
            _ENTITY_SELECT + "WHERE e.user = ? AND e.friendly_id = ?", (user, friendly_id)
        ).fetchone()
        return _entity(row) if row else None

    @_translated
    def entities(self, user: str) -> list[Entity]:
        rows = self._db.execute(_ENTITY_SELECT + "WHERE e.user = ? ORDER BY e.id", (user,))
        return [_entity(row) for row in rows]

    @_translated
    def entities_mentioning(self, user: str, text: str) -> list[Entity]:
        """The user's entities whose fields contain ``text`` anywhere (a pre-filter: the
        caller decides what counts), by row. Reading all 5 000 entities' fields to find the
        few that name one took an entity's page 59 ms."""
        sql = _ENTITY_SELECT + "WHERE e.user = ? AND instr(e.fields, ?) > 0 ORDER BY e.id"
        return [_entity(row) for row in self._db.execute(sql, (user, text))]

    @_translated
    def entity_types(self, user: str) -> list[EntityType]:
        rows = self._db.execute(
            "SELECT user, name, fields FROM entity_types WHERE user = ? ORDER BY id", (user,)
        )
        return [
            EntityType(
                user=row[0],
                name=row[1],
                fields=tuple(EntityField(f["name"], f["type"]) for f in json.loads(row[2])),
            )
            for row in rows
        ]

    @_translated
    def set_entity_fields(self, user: str, updates: Mapping[str, Mapping[str, Any]]) -> None:
        """Set fields of the user's entities (friendly id → field name → value), in one
        transaction, logging each entity changed; other fields are kept. Raises
        ``StoreError`` when an entity is gone (nothing is written then)."""
        with self._write() as db:
            for friendly_id, values in updates.items():
                row = db.execute(
                    "SELECT id, fields FROM entities WHERE user = ? AND friendly_id = ?",
                    (user, friendly_id),
                ).fetchone()
                if row is None:
                    raise StoreError(f"no entity @{friendly_id}")
                fields = {**json.loads(row[1]), **values}
                db.execute(
                    "UPDATE entities SET fields = ? WHERE id = ?",
                    (json.dumps(fields, ensure_ascii=False), row[0]),
                )
                _log(db, "entity", int(row[0]))
