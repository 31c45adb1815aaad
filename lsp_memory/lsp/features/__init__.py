"""One LSP capability per module, each with ``register(server)``; listed once in
``lsp_memory.lsp.server.FEATURES``. Features never import each other."""
