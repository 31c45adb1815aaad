"""The memory's lifecycle: single writes (``records``), JSONL import and export
(``interchange``), categories (``classify``), supersede on write (``supersede``),
consolidation runs (``consolidate``, with the word rules of ``compare``) and review items
(``review``).

Architecture invariant: every write to the store of record goes through here (or through
``editor.rename`` and ``conversations.ingest``), one transaction each, recorded in the change
log. Never imports ``editor``, ``block`` or ``conversations``.
"""
