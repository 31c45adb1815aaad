"""Conversations: message pairs stored as episodes (``ingest``), the claims a message states
about its user (``extract``), and a conversation's messages, references, pins and passive
recall (``recall``).

Architecture invariant: the top of ``services``: it may use ``memory`` (to write extracted
claims) and ``block`` (for passive recall); nothing in ``services`` imports it.
"""
