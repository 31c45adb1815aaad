"""Reference resolution (docs/reference.md, Resolution): what an ``@id``, ``#N`` or
``@memory:uuid`` names for one
user, tried in the spec's order, the first hit winning.

Notes (``[[...]]``) are resolved against the vaults (docs/reference.md, Notes), the first vault
holding the
target winning; without vaults a note link is unresolved, never silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_memory import refs
from lsp_memory.errors import UnresolvedReference
from lsp_memory.ids import name_key
from lsp_memory.model import Claim, Context, Entity, NoteTarget, Reference, RefKind, Tag
from lsp_memory.notes import VaultView
from lsp_memory.services.kernel.claim_form import claim_record
from lsp_memory.store.sqlite import Store
from lsp_memory.text import one_line

NO_VAULT = "no vault to look in (set `vaults` in lsp-memory.toml or pass --vault DIR)"
_DOMAIN = re.compile(r"(.+)_domain")
_BARE_NUMBER = re.compile(r"[0-9]+")
_MAX_NUMBER = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Resolution:
    """What one reference resolved to. ``claims`` are in the order docs/reference.md, Resolution
    gives."""

    ref: str  # the reference as written
    kind: str | None  # claim, context, entity, tag, domain, note; None when unresolved
    id: str | None  # the record's friendly id (claims, contexts, entities, tags) or domain
    claims: tuple[Claim, ...] = ()
    error: str | None = None
    context: Context | None = None
    entity: Entity | None = None
    tag: Tag | None = None
    note: NoteTarget | None = None  # for [[links]]: the note, heading and candidates
    reference: Reference | None = field(default=None, compare=False)

    @property
    def resolved(self) -> bool:
        return self.error is None


def not_found(ref: str, target: str) -> Resolution:
    return Resolution(ref, None, None, error=f"No memory or context found with ID: {target}")


class Resolver:
    """Resolves references for one user against the store."""

    def __init__(self, store: Store, user: str, vaults: Sequence[VaultView] = ()) -> None:
        self.store = store
        self.user = user
        self.vaults = vaults

    def resolve(self, reference: Reference, *, members: bool = True) -> Resolution:
        """Resolve one parsed reference token. Without ``members`` a context, entity, tag or
        domain comes without its claims (whether it resolves is all diagnostics ask: loading
        every claim of 200 references' groups made a 1 000-line check take 191 ms)."""
        found = self._resolve(reference, members)
        return Resolution(
            found.ref,
            found.kind,
            found.id,
            found.claims,
            found.error,
            found.context,
            found.entity,
            found.tag,
            found.note,
            reference,
        )

    def resolve_all(self, references: tuple[Reference, ...]) -> list[Resolution]:
        return [self.resolve(reference) for reference in references]

    def _resolve(self, reference: Reference, members: bool = True) -> Resolution:
        text, user, store = reference.text, self.user, self.store
        if reference.kind is RefKind.NOTE:
            return self._note(reference)
        if reference.kind is RefKind.UUID:
            claim = store.claim_by_uuid(user, reference.target)
            if claim is None:
                return Resolution(
                    text, None, None, error=f"No memory found with ID: {reference.target}"
                )
            return Resolution(text, "claim", claim.friendly_id, (claim,))
        number = reference.claim_number
        if number is not None and number > _MAX_NUMBER:  # SQLite integers stop at 2**63 - 1
            digits = reference.target.removeprefix("claim_")
            return not_found(text, one_line(f"claim_{digits}", 60))
        if number is not None:
            # `#N` resolves by number only; `@claim_N` by number first, then as any other
            # `@id` (an imported record may be called claim_N): docs/reference.md, Resolution.
            claim = store.claim_by_number(user, number)
            if claim is not None:
                return Resolution(text, "claim", claim.friendly_id, (claim,))
            if reference.kind is not RefKind.ID:
                return not_found(text, f"claim_{number}")
        target = reference.target
        claim = store.claim_by_friendly_id(user, target)
        if claim is not None:
            return Resolution(text, "claim", claim.friendly_id, (claim,))
        context = store.context_by_friendly_id(user, target) or store.context_by_name_key(
            user, name_key(target)
        )
        if context is not None:
            claims = tuple(store.claims_in_context(user, context.context_id)) if members else ()
            return Resolution(text, "context", context.friendly_id, claims, context=context)
        entity = store.entity_by_friendly_id(user, target)
        if entity is not None:
            claims = tuple(store.claims_of_entity(user, entity.entity_id)) if members else ()
            return Resolution(text, "entity", entity.friendly_id, claims, entity=entity)
        tag = store.tag_by_friendly_id(user, target)
        if tag is not None:
            claims = tuple(store.claims_with_tag(user, tag.friendly_id)) if members else ()
            return Resolution(text, "tag", tag.friendly_id, claims, tag=tag)
        domain = _DOMAIN.fullmatch(target)
        if domain and store.domain_exists(user, domain.group(1)):
            claims = tuple(store.claims_in_domain(user, domain.group(1))) if members else ()
            return Resolution(text, "domain", domain.group(1), claims)
        return not_found(text, target)

    def _note(self, reference: Reference) -> Resolution:
        if not self.vaults:
            return Resolution(reference.text, "note", reference.target, error=NO_VAULT)
        missed: NoteTarget | None = None
        for vault in self.vaults:
            target = vault.resolve(reference.target, reference.heading)
            if target.note is not None:
                return Resolution(reference.text, "note", target.note.path, note=target, error=None)
            if target.file is not None:  # an attachment: an image, a PDF, …
                relative = Path(target.file).relative_to(vault.root).as_posix()
                return Resolution(reference.text, "file", relative, note=target, error=None)
            missed = missed or target
        error = missed.error if missed and missed.error else f"Note not found: {reference.target}"
        return Resolution(reference.text, "note", None, note=missed, error=error)


def parse_argument(text: str) -> Reference:
    """A reference typed as a command-line argument: ``@ssdva``, ``ssdva``, ``#42``, ``42``,
    ``@claim_42``, ``@memory:<uuid>`` or ``[[Note]]``. Raises ``UnresolvedReference``."""
    stripped = text.strip()
    candidates = [stripped]
    if _BARE_NUMBER.fullmatch(stripped):
        candidates.append(f"#{stripped}")
    elif not stripped.startswith(("@", "#", "[[", "![[")):
        candidates.append(f"@{stripped}")
    for candidate in candidates:
        found = refs.parse(candidate).references
        if len(found) == 1 and found[0].text == candidate:
            return found[0]
    raise UnresolvedReference(
        f"not a reference: {text!r} (expected @id, #N, @claim_N, @memory:<uuid> or [[Note]])"
    )


def claim_named(resolver: Resolver, text: str) -> Claim:
    """The claim a reference typed as an argument names (``parse_argument``'s forms);
    ``UnresolvedReference`` with one line when it names nothing, or not a claim."""
    resolution = resolver.resolve(parse_argument(text))
    if resolution.error:
        raise UnresolvedReference(resolution.error)
    if resolution.kind != "claim" or not resolution.claims:
        raise UnresolvedReference(f"{text.strip()} is a {resolution.kind}, not a claim")
    return resolution.claims[0]


def reference_range(reference: Reference) -> dict[str, dict[str, int]]:
    """A reference's LSP range as JSON."""
    start, end = reference.span.start, reference.span.end
    return {
        "start": {"line": start.line, "character": start.character},
        "end": {"line": end.line, "character": end.character},
    }


def resolution_record(resolution: Resolution) -> dict[str, Any]:
    """A resolution as JSON: ``resolve --json`` and the MCP ``resolve`` tool."""
    found: dict[str, Any] = {
        "ref": resolution.ref,
        "resolved": resolution.resolved,
        "kind": resolution.kind,
        "id": resolution.id,
        "claims": [
            {k: v for k, v in claim_record(c).items() if k != "kind"} for c in resolution.claims
        ],
        "error": resolution.error,
    }
    if resolution.reference is not None:
        found["range"] = reference_range(resolution.reference)
    if resolution.context is not None:
        found["context"] = {
            "name": resolution.context.name,
            "description": resolution.context.description,
            "parent": resolution.context.parent,
        }
    if resolution.entity is not None:
        entity = resolution.entity
        found["entity"] = {
            "name": entity.name,
            "type": entity.type,
            "fields": entity.fields,
            "trashed": entity.trashed,
        }
    note = resolution.note.note if resolution.note is not None else None
    if note is not None and resolution.note is not None:
        found["note"] = {
            "path": note.path,
            "title": note.title,
            "vault": note.vault,
            "heading": resolution.note.heading.text if resolution.note.heading else None,
            "archived": note.archived,
            "candidates": [c.path for c in resolution.note.candidates],
        }
    return found
