/**
 * activate() as VS Code runs it, with a server program that is not installed: every start
 * the extension attempts shows as one "not found" message, so these tests see when it starts
 * the server — never for a workspace without `lsp-memory.toml`, and again when a watch says
 * where it serves changed.
 */

import { unlinkSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { afterEach, expect, test } from "vitest";
import { activate, deactivate, SERVED_CONTEXT, type Api } from "../src/extension";
import { folder } from "./fakes";
import { TextEditor, Uri, configure, makeDocument, reset, state } from "./vscode";

const MISSING = "lsp-memory-not-installed-here";

function start(workspace: string[], settings: Record<string, unknown> = {}): Api {
  reset();
  Object.assign(state.configuration, { "lspMemory.serverCommand": [MISSING, "serve"] }, settings);
  state.workspaceFolders = workspace.map((where, index) => ({
    uri: Uri.file(where),
    name: path.basename(where),
    index,
  }));
  return activate({ subscriptions: [], extensionUri: Uri.file(__dirname) } as never);
}

/** How many times a start looked for the program (each says "not on PATH" once). */
function starts(): number {
  return state.shown.filter((shown) => shown.message.includes(`"${MISSING}" is not on PATH`)).length;
}

function output(): string {
  return state.outputs.find((channel) => channel.name === "lsp-memory")?.lines.join("\n") ?? "";
}

/** Waits for `count` starts (a start looks the program up on PATH: file system calls), then
 * a little more, so that a start too many would show. */
async function startsReach(count: number): Promise<void> {
  const end = Date.now() + 5000;
  while (starts() < count && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 10));
  await new Promise((resolve) => setTimeout(resolve, 100));
}

afterEach(async () => {
  await deactivate();
});

test("a workspace without lsp-memory.toml: no server; one that gets it: the server starts", async () => {
  const code = folder("ext-code", { "CHANGELOG.md": "Thanks @octocat\n" });
  start([code]);
  await startsReach(0);
  expect(starts()).toBe(0);
  expect(state.shown).toEqual([]);
  expect(output()).toContain("no workspace folder has an lsp-memory.toml at its root");
  expect(state.languageStatusItems[0]!.selector).toEqual([]);

  const config = path.join(code, "lsp-memory.toml");
  writeFileSync(config, "");
  try {
    for (const watcher of state.watchers) watcher.create(Uri.file(config));
    await startsReach(1);
    expect(starts()).toBe(1);
    expect(state.languageStatusItems[0]!.selector).not.toEqual([]);
  } finally {
    unlinkSync(config);
  }
  for (const watcher of state.watchers) watcher.delete(Uri.file(config));
  await startsReach(1);
  expect(starts()).toBe(1);
  expect(state.languageStatusItems[0]!.selector).toEqual([]);
});

test("lspMemory.folders and lspMemory.plainText restart it; an unrelated setting does not", async () => {
  const repo = folder("ext-repo", {});
  folder("ext-repo/notes", {});
  start([repo]);
  await startsReach(0);
  expect(starts()).toBe(0);
  configure({ "lspMemory.folders": ["notes"] });
  await startsReach(1);
  expect(starts()).toBe(1);
  configure({ "lspMemory.plainText": true });
  await startsReach(2);
  expect(starts()).toBe(2);
  configure({ "lspMemory.budget": 900 });
  configure({ "lspMemory.folders": ["notes", "no-such-folder"] }); // serves the same
  await startsReach(2);
  expect(starts()).toBe(2);
  expect(output()).toContain("no-such-folder is not a folder; skipped");
});

test("a workspace folder added with lsp-memory.toml starts it", async () => {
  const code = folder("ext-code-2", {});
  const notes = folder("ext-notes-2", { "lsp-memory.toml": "" });
  start([code]);
  await startsReach(0);
  expect(starts()).toBe(0);
  state.workspaceFolders = [
    ...state.workspaceFolders!,
    { uri: Uri.file(notes), name: "ext-notes-2", index: 1 },
  ];
  state.foldersEmitter.fire({ added: [], removed: [] });
  await startsReach(1);
  expect(starts()).toBe(1);
});

test("the served context key follows the active editor (the context menu's entries)", async () => {
  const notes = folder("ext-served", { "lsp-memory.toml": "" });
  const code = folder("ext-not-served", {});
  start([notes, code]);
  await startsReach(1);
  const editor = (file: string) => new TextEditor(makeDocument("", "markdown", Uri.file(file).toString()));
  state.activeTextEditor = editor(path.join(notes, "a.md"));
  state.activeEditorEmitter.fire(state.activeTextEditor);
  expect(state.context.get(SERVED_CONTEXT)).toBe(true);
  state.activeTextEditor = editor(path.join(code, "CHANGELOG.md"));
  state.activeEditorEmitter.fire(state.activeTextEditor);
  expect(state.context.get(SERVED_CONTEXT)).toBe(false);
});

test("a setting under its old name is reported in the output", async () => {
  const notes = folder("ext-renamed", { "lsp-memory.toml": "" });
  start([notes], { "lspMemory.busy_timeout_ms": 250, "lspMemory.busyTimeoutMs": null });
  await startsReach(1);
  expect(output()).toContain("the setting lspMemory.busy_timeout_ms is now lspMemory.busyTimeoutMs");
});
