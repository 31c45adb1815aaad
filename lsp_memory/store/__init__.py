"""Stores: the SQLite store of record; later the derived full-text and vector indexes."""
