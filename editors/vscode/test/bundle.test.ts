/**
 * The bundle as it ships: esbuild's output (built here with esbuild.mjs, minified) loads with
 * only `vscode` outside it, activates, registers its commands, and, with a folder to serve
 * and no server, says so in one message.
 */

import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, expect, test } from "vitest";
import { COMMANDS } from "../src/commands";
import { Uri, reset, state } from "./vscode";

const folder = mkdtempSync(path.join(tmpdir(), "lsp-memory-bundle-"));

afterAll(() => {
  rmSync(folder, { recursive: true, force: true });
});

test("the bundle activates and reports a missing server once", async () => {
  const bundle = path.join(folder, "extension.js");
  execFileSync(process.execPath, ["esbuild.mjs", bundle], { cwd: path.resolve(__dirname, "..") });
  const extension = createRequire(bundle)(bundle) as {
    activate(context: unknown): unknown;
    deactivate(): Promise<void>;
  };
  reset();
  state.configuration["lspMemory.serverCommand"] = ["lsp-memory-not-installed-here", "serve"];
  state.configuration["lspMemory.folders"] = [folder];
  extension.activate({ subscriptions: [], extensionUri: Uri.file(folder) });
  for (let i = 0; i < 100 && state.shown.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(state.shown.map((shown) => shown.message)).toEqual([
    expect.stringContaining('"lsp-memory-not-installed-here" is not on PATH') as string,
  ]);
  expect([...state.commands.keys()].sort()).toEqual(Object.values(COMMANDS).sort());
  await extension.deactivate();
}, 30_000);
