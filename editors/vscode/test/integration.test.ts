/**
 * The whole extension — activate(), the real vscode-languageclient, the real `lsp-memory
 * serve` — with only the editor's UI faked (test/vscode.ts). It checks what VS Code would
 * show: the language status item through indexing to the memory's counts, the commands'
 * documents and messages, a settings change reaching the server, restarts keeping the open
 * documents, crashes ending in one message, a missing or broken server in one message, and
 * no server for a workspace without `lsp-memory.toml` until one appears.
 *
 * The server is `$LSP_MEMORY_SERVER`, else the repository's `.venv/bin/lsp-memory`; without
 * one the tests that need it are skipped, unless `LSP_MEMORY_REQUIRE_SERVER=1` (CI).
 */

import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import type { LanguageClient } from "vscode-languageclient/node";
import { COMMANDS } from "../src/commands";
import { activate, deactivate, type Api } from "../src/extension";
import type { ContextBlock } from "../src/protocol";
import { ACTIONS } from "../src/server";
import {
  FakeLanguageStatusItem,
  LanguageStatusSeverity,
  Position,
  Selection,
  TextEditor,
  Uri,
  configure,
  makeDocument,
  reset,
  state,
} from "./vscode";

const REPOSITORY = path.resolve(__dirname, "../../..");
const SERVER = process.env.LSP_MEMORY_SERVER ?? path.join(REPOSITORY, ".venv/bin/lsp-memory");
const HAVE_SERVER = existsSync(SERVER);
const REQUIRED = process.env.LSP_MEMORY_REQUIRE_SERVER === "1";
const DEMO = path.join(REPOSITORY, "examples/demo");

let root = "";
let notes = "";
let api: Api;
const saved = { ...process.env };

/** Every setting at its package.json default, as VS Code has them. */
function defaults(): Record<string, unknown> {
  const manifest = JSON.parse(readFileSync(path.join(__dirname, "../package.json"), "utf8")) as {
    contributes: { configuration: { properties: Record<string, { default: unknown }> } };
  };
  return Object.fromEntries(
    Object.entries(manifest.contributes.configuration.properties).map(([key, spec]) => [key, spec.default]),
  );
}

async function until(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) {
      const output = state.outputs
        .find((channel) => channel.name === "lsp-memory")
        ?.lines.slice(-30)
        .join("\n");
      throw new Error(`timed out waiting for ${what}; output:\n${output ?? ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

function statusItem(): FakeLanguageStatusItem {
  const item = state.languageStatusItems[0];
  if (item === undefined) throw new Error("no language status item");
  return item;
}

/** The item says the server is ready: with the counts, or (a server without
 * `lspMemory.status`) the index report. */
function ready(): boolean {
  const item = statusItem();
  return !item.busy && /^lsp-memory: (ready|[\d,]+ claims?)$/.test(item.text);
}

/** The documents the client has sent to the server (didOpen). */
function opened(): string[] {
  const client = api.server.client as LanguageClient;
  return [...client.getFeature("textDocument/didOpen").openDocuments].map((document) =>
    document.uri.toString(),
  );
}

function output(): string {
  return state.outputs.find((channel) => channel.name === "lsp-memory")?.lines.join("\n") ?? "";
}

function errors() {
  return state.shown.filter((shown) => shown.level === "error");
}

function start(settings: Record<string, unknown>, folder = notes): void {
  reset();
  Object.assign(state.configuration, defaults(), settings);
  state.workspaceFolders = [{ uri: Uri.file(folder), name: path.basename(folder), index: 0 }];
  const context = {
    subscriptions: [] as { dispose(): unknown }[],
    extensionUri: Uri.file(path.resolve(__dirname, "..")),
  };
  api = activate(context as never);
}

async function command(id: string): Promise<void> {
  const run = state.commands.get(id);
  if (run === undefined) throw new Error(`no command ${id}`);
  await run();
}

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), "lsp-memory-vscode-"));
  notes = path.join(root, "notes");
  mkdirSync(notes);
  // What makes a workspace folder one the extension serves.
  writeFileSync(path.join(notes, "lsp-memory.toml"), "# the integration test's notes\n");
  process.env.XDG_CACHE_HOME = path.join(root, "xdg-cache");
  process.env.XDG_DATA_HOME = path.join(root, "xdg-data");
  process.env.XDG_CONFIG_HOME = path.join(root, "xdg-config");
  if (HAVE_SERVER) {
    cpSync(path.join(DEMO, "vault"), notes, { recursive: true });
    cpSync(path.join(DEMO, "prompt.md"), path.join(notes, "prompt.md"));
    execFileSync(
      SERVER,
      ["--store", path.join(root, "store"), "--user", "tester", "import", path.join(DEMO, "memory.jsonl")],
      {
        stdio: "ignore",
      },
    );
  }
});

afterAll(() => {
  process.env = saved;
  rmSync(root, { recursive: true, force: true });
});

afterEach(async () => {
  await deactivate();
});

test("the server is there when CI requires it", () => {
  expect(HAVE_SERVER || !REQUIRED, `no language server at ${SERVER}`).toBe(true);
});

describe.skipIf(!HAVE_SERVER)("against lsp-memory serve", () => {
  let prompt: ReturnType<typeof makeDocument>;
  let editor: TextEditor;

  beforeEach(() => {
    const file = path.join(notes, "prompt.md");
    prompt = makeDocument(readFileSync(file, "utf8"), "markdown", Uri.file(file).toString());
    start({
      "lspMemory.serverPath": SERVER,
      "lspMemory.store": path.join(root, "store"),
      "lspMemory.cache": path.join(root, "cache"),
      "lspMemory.user": "tester",
      // A value under an old name: it reaches the server under the new one.
      "lspMemory.busy_timeout_ms": 4000,
    });
    editor = new TextEditor(prompt);
    state.activeTextEditor = editor;
  });

  test("status, build context, search, remember, a settings change, a restart", async () => {
    await until("the index", ready);
    if (statusItem().text === "lsp-memory: ready") {
      expect(statusItem().detail).toMatch(/^index ready: \d+ written, \d+ removed/);
    }
    expect(output()).toContain(`starting the language server: ${SERVER} serve`);
    expect(output()).toContain(`serving markdown in ${notes} (lsp-memory.toml)`);
    // The open prompt is under the served folder: the client sent it to the server.
    expect(opened()).toEqual([prompt.uri.toString()]);
    expect(errors()).toEqual([]);

    // Build context: the block of the open prompt, beside it, and a Copy action.
    state.answers.push("Copy to clipboard");
    await command(COMMANDS.showContext);
    expect(state.opened).toHaveLength(1);
    const block = state.opened[0]!.document.getText();
    expect(block).toContain("@prefer_morning_a3f2");
    expect(state.clipboard).toBe(block);
    const shown = state.shown.at(-1)!;
    expect(shown.message).toMatch(/^lsp-memory: context block of \d+ \/ 1500 tokens/);
    expect(shown.level).toBe("warning"); // the demo prompt has two unresolved references
    expect(shown.message).toContain("@no_such_thing");

    // Remember selection: the server stores the claim and asks to replace the selection.
    editor.selection = new Selection(new Position(0, 2), new Position(0, 18)); // "Planning my week"
    state.picks.push(1);
    await command(COMMANDS.remember);
    expect(state.shown.at(-1)!.message).toMatch(
      /^lsp-memory: remembered as @\w+; the selection now references it\.$/,
    );

    // Search: the hits of the real hybrid search; the chosen reference goes in at the cursor.
    const last = prompt.lineCount - 1;
    editor.selection = new Selection(new Position(last, 0), new Position(last, 0));
    const searching = command(COMMANDS.searchMemory);
    const pick = state.quickPicks[0]!;
    pick.type("Project Alpha Kickoff");
    await until("search hits", () => pick.items.length > 0, 10_000);
    const index = pick.items.findIndex((item) => item.description === "[[Project Alpha Kickoff]]");
    expect(index).toBeGreaterThanOrEqual(0);
    pick.accept(index);
    await searching;
    expect(prompt.lineAt(last).text).toBe("[[Project Alpha Kickoff]]");

    // A settings change reaches the running server: it rebuilds its session on the new budget.
    configure({ "lspMemory.budget": 700 });
    await until(
      "the server to take the new settings",
      () => output().includes("settings changed; reindexing"),
      10_000,
    );
    await until("the index", ready);
    const again = await api.server.execute<ContextBlock>("lspMemory.buildContext", [prompt.uri.toString()]);
    expect(again.budget).toBe(700);
    // The server took it without the extension restarting it.
    expect(output().match(/starting the language server/g)).toHaveLength(1);
    expect(errors()).toEqual([]);
    // Neither the extension's own settings nor an old name reached the server as unknown.
    expect(state.shown.filter((shown) => shown.message.includes("setting"))).toEqual([]);
    expect(output()).toContain("the setting lspMemory.busy_timeout_ms is now lspMemory.busyTimeoutMs");
  }, 120_000);

  test("the code lens's command shows the block; Reindex", async () => {
    await until("the index", ready);
    // vscode-languageclient registered the server's own commands; a code lens runs this one.
    const result = (await state.commands.get("lspMemory.buildContext")!(
      prompt.uri.toString(),
    )) as ContextBlock;
    expect(result.tokens).toBeGreaterThan(0);
    expect(state.opened).toHaveLength(1);
    await command(COMMANDS.reindexMemory);
    expect(state.statusMessages.at(-1)).toBe("lsp-memory: reindexing the store and the vaults…");
  }, 60_000);

  test("a server that keeps crashing is restarted three times, then stopped with one message", async () => {
    await until("the index", ready);
    for (let crash = 1; crash <= 4; crash++) {
      const client = api.server.client as LanguageClient;
      await until("a running server", () => client.serverProcess?.pid !== undefined && client.isRunning());
      client.serverProcess?.kill("SIGKILL");
      if (crash < 4) {
        await until(`restart ${crash}`, () => output().includes(`restarting it (${crash} of 3`), 10_000);
      }
    }
    await until("the stop", () => statusItem().text === "lsp-memory: stopped", 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(errors()).toHaveLength(1);
    expect(errors()[0]!.message).toMatch(/stopped 4 times within 3 minutes; it is not restarted again/);
    expect(errors()[0]!.actions).toEqual([ACTIONS.restart, ACTIONS.output]);
    // The user restarts: it runs again, with the open document.
    await command(COMMANDS.restartServer);
    await until("the index", ready);
    const block = await api.server.execute<ContextBlock>("lspMemory.buildContext", [prompt.uri.toString()]);
    expect(block.markdown).toContain("@prefer_morning_a3f2");
  }, 120_000);
});

describe.skipIf(!HAVE_SERVER)("a workspace without lsp-memory.toml", () => {
  test("no server, until an lsp-memory.toml appears at its root", async () => {
    const code = path.join(root, "code-project");
    mkdirSync(code, { recursive: true });
    const changelog = path.join(code, "CHANGELOG.md");
    writeFileSync(changelog, "# Changelog\n\nThanks @octocat for [[the fix]].\n");
    start(
      {
        "lspMemory.serverPath": SERVER,
        "lspMemory.store": path.join(root, "store"),
        "lspMemory.cache": path.join(root, "cache"),
        "lspMemory.user": "tester",
      },
      code,
    );
    state.activeTextEditor = new TextEditor(makeDocument("", "markdown", Uri.file(changelog).toString()));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(api.server.client).toBeUndefined();
    expect(output()).toContain("no workspace folder has an lsp-memory.toml at its root");
    expect(output()).not.toContain("starting the language server");
    expect(errors()).toEqual([]);
    // Build context says why it does nothing here.
    await command(COMMANDS.showContext);
    expect(state.shown.at(-1)!.message).toContain("this document is not served");

    writeFileSync(path.join(code, "lsp-memory.toml"), "");
    for (const watcher of state.watchers) watcher.create(Uri.file(path.join(code, "lsp-memory.toml")));
    await until("the index", ready);
    expect(output()).toContain(`serving markdown in ${code} (lsp-memory.toml)`);
    expect(api.server.serves(state.activeTextEditor.document as never)).toBe(true);
    expect(opened()).toEqual([Uri.file(changelog).toString()]);
    expect(state.context.get("lspMemory.served")).toBe(true);
    expect(errors()).toEqual([]);
  }, 60_000);
});

describe.skipIf(!HAVE_SERVER)("a workspace of notes and code", () => {
  test("the code folder's Markdown is not sent, and is not a vault", async (context) => {
    const code = path.join(root, "code-beside-notes");
    mkdirSync(code, { recursive: true });
    const changelog = path.join(code, "CHANGELOG.md");
    writeFileSync(changelog, "# Changelog\n\nThanks @octocat.\n");
    start({
      "lspMemory.serverPath": SERVER,
      "lspMemory.store": path.join(root, "store"),
      "lspMemory.cache": path.join(root, "cache"),
      "lspMemory.user": "tester",
    });
    // The code folder first: VS Code's first folder is not the server's.
    state.workspaceFolders = [
      { uri: Uri.file(code), name: "code-beside-notes", index: 0 },
      { uri: Uri.file(notes), name: "notes", index: 1 },
    ];
    await api.server.restart();
    state.activeTextEditor = new TextEditor(makeDocument("", "markdown", Uri.file(changelog).toString()));
    await until("the index", ready);
    expect(opened()).toEqual([]);
    expect(api.server.serves(state.activeTextEditor.document as never)).toBe(false);
    if (api.server.announces("lspMemory.status") !== true) {
      context.skip("the server does not have lspMemory.status yet: its vaults cannot be asked");
    }
    const status = await api.server.execute<{ paths: { vaults: string[] } }>("lspMemory.status", []);
    expect(status.paths.vaults).toContain(realpathSync(notes));
    expect(status.paths.vaults).not.toContain(realpathSync(code));
  }, 60_000);
});

describe("a missing or broken server", () => {
  test("missing: one message with How to install and Retry, a red status bar item, no loop", async () => {
    start({ "lspMemory.serverCommand": ["lsp-memory-not-installed-here", "serve"] });
    await until("the message", () => errors().length > 0, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(errors()).toEqual([
      {
        level: "error",
        message:
          'lsp-memory: the language server was not found: "lsp-memory-not-installed-here" is not on PATH (setting lspMemory.serverCommand). Install lsp-memory, or point lspMemory.serverPath at it.',
        actions: [ACTIONS.install, ACTIONS.settings, ACTIONS.retry],
      },
    ]);
    expect(statusItem().text).toBe("lsp-memory: stopped");
    expect(statusItem().severity).toBe(LanguageStatusSeverity.Error);
    expect(statusItem().command).toEqual({ title: "Restart", command: COMMANDS.restartServer });
    expect(api.server.client).toBeUndefined();
  });

  test("a fixed setting restarts by itself", async () => {
    start({ "lspMemory.serverCommand": ["lsp-memory-not-installed-here", "serve"] });
    await until("the message", () => errors().length > 0, 10_000);
    configure({ "lspMemory.serverCommand": ["another-missing-program"] });
    await until("the second look", () => errors().length > 1, 10_000);
    expect(errors()[1]!.message).toContain('"another-missing-program" is not on PATH');
  });
});
