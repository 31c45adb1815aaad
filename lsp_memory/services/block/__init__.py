"""The context block (docs/reference.md, The context block), the context assembler's work: a
document's references plus
automatically retrieved memories → a token-budgeted Markdown block for an LLM, and the same
as JSON.

``Assembler.build`` is the one entry point: ``lsp-memory build-context`` and the language
server's ``lspMemory.buildContext`` both call it. It reads the store, the vaults and the
search indexes and writes nothing; keeping the indexes current is the caller's job.

What goes in, in output order (each section left out when empty):

1. **User memory.** Claims the document references (``@id``, ``#N``, ``@claim_N``,
   ``@memory:uuid``; contexts expanded with their descendants, tags, domains, and the claims
   linked to a referenced entity), verbatim, in document order of their references, each
   claim once under the first reference that reached it. Then ``--attach`` claims, global pins
   (live claims with ``pinned``, newest first), ``--pin`` claims and automatic memories. A
   claim appears once, under the highest label: REFERENCED > ATTACHED > GLOBAL PINNED >
   CONV PINNED > AUTO.
2. **Notes pinned by user**: the document's ``[[links]]`` that resolve, at most 5, in order of
   first appearance; each note once. The body is the note's Markdown text without its front
   matter (an LLM reads Markdown well, and headings and lists carry meaning that the plain
   search text of ``Note.body`` loses), read from the file, or from the caller's ``note_text``
   (the language server's unsaved buffers). ``[[Note#Heading]]`` pins that heading's section
   (down to the next heading of the same or a higher level) unless the document also links
   the whole note. Bodies over 4,000 characters are cut with ``…``.
3. **Entity context**: breadth-first from the entities the document references, through
   ``entity_ref`` and ``entity_ref_list`` fields, to depth 2; depth 2 shows name and type only.
   Each entity once (so cycles end). ``computed`` and empty fields are skipped; a trashed
   entity is shown as ``(deleted)`` with no fields and is not followed; a reference to an
   entity that does not exist shows ``(not found)``; a note field shows the note's title and
   path, ``(archived)`` or ``(not found)``.
4. **Notes linked via entity fields**: notes named by ``note_ref`` fields of the entities
   whose fields are shown, at most 3, bodies at most 2,000 characters, never a pinned note.
5. **Referenced documents**: one line per linked note (each note once, in order of first
   appearance, pinned ones too): its path and a summary (the first paragraph that is not a
   heading when it is at most 200 characters, else its first sentence, cut at 200), cached by
   content hash; ``Warning - Document not found`` for a link that resolves to nothing.

How automatic memories are chosen and ranked, and why "now" is the newest claim's time, is
in :mod:`.tiers`; how the token budget is filled, in :mod:`.budget`.

Decisions where docs/reference.md, The context block is silent: a referenced claim that is not live
(a direct reference
to a retracted, superseded, merged or deprecated claim) is shown, because the user asked for
it, with its status after its type (``[fact] [superseded]``) and a warning; ``--attach`` and
``--pin`` take references that name claims (a claim, context, tag, domain or entity) and
refuse notes; more than 5 linked notes: the rest are listed in ``dropped`` (reason
``limit``) and in ``warnings``. A statement over several lines keeps its lines, continued
with two spaces of indent, so a Markdown list item holds it and :func:`referenced_lines`
gives it back whole.

The modules, one job each: ``block`` (the format: sections, pieces, rendering, the JSON,
reading the referenced lines back), ``claims`` (the claims of User memory and their labels),
``notes`` (a note's text, pinned notes, referenced documents), ``entities`` (the entity walk
and entity-linked notes), ``tiers`` (automatic memories), ``budget`` (filling the budget),
``assembler`` (the :class:`Assembler` that runs these steps in order).
"""

from lsp_memory.notes.parts import note_markdown
from lsp_memory.services.block.assembler import Assembler
from lsp_memory.services.block.budget import Filled, cut_piece, fill
from lsp_memory.services.block.claims import claim_line
from lsp_memory.services.block.notes import read_note, summary
from lsp_memory.services.block.pieces import (
    DOCUMENTS,
    ENTITIES,
    ENTITY_NOTES,
    MEMORY,
    PINNED_NOTES,
    SECTIONS,
    ContextBlock,
    Piece,
    Section,
    referenced_lines,
    referenced_only,
    render,
)

__all__ = [
    "DOCUMENTS",
    "ENTITIES",
    "ENTITY_NOTES",
    "MEMORY",
    "PINNED_NOTES",
    "SECTIONS",
    "Assembler",
    "ContextBlock",
    "Filled",
    "Piece",
    "Section",
    "claim_line",
    "cut_piece",
    "fill",
    "note_markdown",
    "read_note",
    "referenced_lines",
    "referenced_only",
    "render",
    "summary",
]
