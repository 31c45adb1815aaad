"""``python -m lsp_memory`` runs the command line."""

from lsp_memory.cli import main

raise SystemExit(main())
