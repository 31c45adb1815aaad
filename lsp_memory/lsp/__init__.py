"""The language server. The only package that imports pygls and lsprotocol."""
