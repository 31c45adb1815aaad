"""``python -m lsp_memory`` runs the command line."""

from lsp_memory.launch import main

raise SystemExit(main())
