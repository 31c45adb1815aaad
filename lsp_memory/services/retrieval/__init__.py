"""Search: the documents the indexes hold (``documents``), writing them into the full-text
index (``indexing``), which process writes (``keeper``), the embedding queue drained into the
vector index (``embedding``) and hybrid ranking (``search``).

Architecture invariant: the indexes are derived: everything here can be rebuilt from the store
and the vaults. Uses only the kernel.
"""
