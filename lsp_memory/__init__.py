"""lsp-memory: reference your personal knowledge base from any editor.

The package is layered; dependencies point down only (checked by import-linter):
``cli`` → ``app`` → ``services`` → ``store`` / ``notes`` → ``config`` → ``refs`` / ``ids`` →
``model`` / ``errors``.
"""

__version__ = "0.1.0"
