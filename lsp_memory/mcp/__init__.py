"""``lsp-memory mcp``: the memory served to agents over the Model Context Protocol (stdio),
on the official ``mcp`` SDK. The only package that imports it (imported only when the
command runs)."""
