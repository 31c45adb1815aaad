"""Services: what the command line and the language server ask of the stores."""
