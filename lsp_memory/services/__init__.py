"""Services: what the command line, the language server and the MCP server ask of the
memory, one room per domain, layered (checked by import-linter; see ARCHITECTURE.md):

- ``conversations`` — episodes, extraction, a conversation's recall;
- ``editor`` · ``memory`` · ``block`` — independent of each other: what an editor asks of a
  document; the memory's lifecycle; the token-budgeted context block for an LLM;
- ``retrieval`` — the derived indexes and hybrid search;
- ``kernel`` — resolution, lineage, token counts, external commands, the claim as JSON.
"""
