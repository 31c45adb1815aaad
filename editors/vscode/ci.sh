#!/usr/bin/env bash
# CI for the VS Code extension: install the locked dependencies, lint, type-check, run the
# unit tests (and the integration tests against `lsp-memory serve` when the server is there:
# $LSP_MEMORY_SERVER, else the repository's .venv/bin/lsp-memory; LSP_MEMORY_REQUIRE_SERVER=1
# makes its absence a failure), bundle, and package the .vsix. Runs from any folder; needs
# Node.js >= 20 and npm, and the npm registry only for `npm ci`.
set -euo pipefail
cd "$(dirname "$0")"
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' 2>/dev/null; then
  echo "editors/vscode/ci.sh needs Node.js >= 20 and npm (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

started=$SECONDS
step() { printf '\n== vscode [%ss]: %s\n' "$((SECONDS - started))" "$*"; }

# node_modules is reinstalled unless it was installed by this script from this very lock file.
lock=$(node -e 'const c = require("node:crypto"), f = require("node:fs");
  process.stdout.write(c.createHash("sha256").update(f.readFileSync("package-lock.json")).digest("hex"))')
if [ "$(cat node_modules/.ci-lock 2>/dev/null)" = "$lock" ]; then
  step "node_modules is up to date with package-lock.json"
else
  step "npm ci"
  # --ignore-scripts: no install script is needed (esbuild's binary comes as a package), and
  # none may fetch anything from outside the registry.
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$lock" >node_modules/.ci-lock
fi

step "lint (eslint, typescript-eslint strict type-checked; prettier)"
npx --no-install eslint --max-warnings=0 .
npx --no-install prettier --check --log-level=warn .

step "type-check (tsc --noEmit, strict)"
npx --no-install tsc --noEmit -p .

step "tests (vitest; the vscode module mocked)"
npx --no-install vitest run

step "bundle and package (esbuild, vsce)"
rm -rf dist ./*.vsix
npx --no-install vsce package --no-dependencies --allow-missing-repository </dev/null
vsix=$(ls ./*.vsix)
node scripts/check-vsix.mjs "$vsix"
step "built editors/vscode/${vsix#./}"
