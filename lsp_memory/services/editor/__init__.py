"""What an editor asks of a document: completion, hovers and record pages (``describe``),
diagnostics and their fixes (``checks``), references, rename, document links and inlay hints
(``annotate``).

Architecture invariant: the editor's services read; the only write is a rename's plan,
applied by ``rename`` in one store transaction. They never import ``memory``, ``block`` or
``conversations``.
"""
