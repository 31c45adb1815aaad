/**
 * The whole extension — activate(), the real vscode-languageclient, the real `lsp-memory
 * serve` — with only the editor's UI faked (test/vscode.ts). It checks what VS Code would
 * show: the status bar through indexing, the commands' documents and messages, a settings
 * change reaching the server, restarts keeping the open documents, crashes ending in one
 * message, and a missing or broken server in one message.
 *
 * The server is `$LSP_MEMORY_SERVER`, else the repository's `.venv/bin/lsp-memory`; without
 * one the tests that need it are skipped, unless `LSP_MEMORY_REQUIRE_SERVER=1` (CI).
 */

import { execFileSync } from "node:child_process";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import type { LanguageClient } from "vscode-languageclient/node";
import { activate, deactivate, type Api } from "../src/extension";
import type { ContextBlock } from "../src/protocol";
import { ACTIONS } from "../src/server";
import {
  FakeStatusBarItem,
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

function statusItem(): FakeStatusBarItem {
  const item = state.statusItems[0];
  if (item === undefined) throw new Error("no status bar item");
  return item;
}

function output(): string {
  return state.outputs.find((channel) => channel.name === "lsp-memory")?.lines.join("\n") ?? "";
}

function errors() {
  return state.shown.filter((shown) => shown.level === "error");
}

function start(settings: Record<string, unknown>): void {
  reset();
  Object.assign(state.configuration, defaults(), settings);
  state.workspaceFolders = [{ uri: Uri.file(notes), name: "notes", index: 0 }];
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
    });
    editor = new TextEditor(prompt);
    state.activeTextEditor = editor;
  });

  test("status, build context, search, remember, a settings change, a restart", async () => {
    await until("the index", () => statusItem().text === "$(database) lsp-memory");
    expect(statusItem().tooltip).toMatch(/^lsp-memory: ready \(index ready: \d+ written, \d+ removed\)/);
    expect(output()).toContain(`starting the language server: ${SERVER} serve`);
    expect(errors()).toEqual([]);

    // Build context: the block of the open prompt, beside it, and a Copy action.
    state.answers.push("Copy to clipboard");
    await command("lsp-memory.buildContext");
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
    await command("lsp-memory.rememberSelection");
    expect(state.shown.at(-1)!.message).toMatch(
      /^lsp-memory: remembered as @\w+; the selection now references it\.$/,
    );

    // Search: the hits of the real hybrid search; the chosen reference goes in at the cursor.
    const last = prompt.lineCount - 1;
    editor.selection = new Selection(new Position(last, 0), new Position(last, 0));
    const searching = command("lsp-memory.search");
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
    await until("the index", () => statusItem().text === "$(database) lsp-memory");
    const again = await api.server.execute<ContextBlock>("lspMemory.buildContext", [prompt.uri.toString()]);
    expect(again.budget).toBe(700);
    // The server took it without the extension restarting it.
    expect(output().match(/starting the language server/g)).toHaveLength(1);
    expect(errors()).toEqual([]);
  }, 120_000);

  test("the code lens's command shows the block; Reindex", async () => {
    await until("the index", () => statusItem().text === "$(database) lsp-memory");
    // vscode-languageclient registered the server's own commands; a code lens runs this one.
    const result = (await state.commands.get("lspMemory.buildContext")!(
      prompt.uri.toString(),
    )) as ContextBlock;
    expect(result.tokens).toBeGreaterThan(0);
    expect(state.opened).toHaveLength(1);
    await command("lsp-memory.reindex");
    expect(state.statusMessages.at(-1)).toBe("lsp-memory: reindexing the store and the vaults…");
  }, 60_000);

  test("a server that keeps crashing is restarted three times, then stopped with one message", async () => {
    await until("the index", () => statusItem().text === "$(database) lsp-memory");
    for (let crash = 1; crash <= 4; crash++) {
      const client = api.server.client as LanguageClient;
      await until("a running server", () => client.serverProcess?.pid !== undefined && client.isRunning());
      client.serverProcess?.kill("SIGKILL");
      if (crash < 4) {
        await until(`restart ${crash}`, () => output().includes(`restarting it (${crash} of 3`), 10_000);
      }
    }
    await until("the stop", () => statusItem().text === "$(error) lsp-memory", 10_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(errors()).toHaveLength(1);
    expect(errors()[0]!.message).toMatch(/stopped 4 times within 3 minutes; it is not restarted again/);
    expect(errors()[0]!.actions).toEqual([ACTIONS.restart, ACTIONS.output]);
    // The user restarts: it runs again, with the open document.
    await command("lsp-memory.restartServer");
    await until("the index", () => statusItem().text === "$(database) lsp-memory");
    const block = await api.server.execute<ContextBlock>("lspMemory.buildContext", [prompt.uri.toString()]);
    expect(block.markdown).toContain("@prefer_morning_a3f2");
  }, 120_000);
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
    expect(statusItem().text).toBe("$(error) lsp-memory");
    expect(statusItem().command).toBe("lsp-memory.restartServer");
    expect(api.server.client).toBeUndefined();
  });

  test("How to install opens the bundled README", async () => {
    start({ "lspMemory.serverPath": "/nonexistent/bin/lsp-memory" });
    state.answers.push(ACTIONS.install);
    await until(
      "the guide",
      () => state.executed.some((run) => run.command === "markdown.showPreview"),
      10_000,
    );
    const opened = state.executed.find((run) => run.command === "markdown.showPreview")!;
    expect(String(opened.args[0])).toBe(Uri.file(path.resolve(__dirname, "../README.md")).toString());
    expect(errors()).toHaveLength(1);
  });

  test("dying on start: one message with its last stderr line; not restarted", async () => {
    const script = path.join(root, "broken-lsp-memory");
    writeFileSync(
      script,
      '#!/bin/sh\necho "Traceback (most recent call last):" >&2\necho "ModuleNotFoundError: No module named \'lsp_memory\'" >&2\nexit 1\n',
    );
    chmodSync(script, 0o755);
    start({ "lspMemory.serverPath": script });
    await until("the message", () => errors().length > 0, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(errors()).toEqual([
      {
        level: "error",
        message:
          "lsp-memory: the language server failed to start: ModuleNotFoundError: No module named 'lsp_memory'",
        actions: [ACTIONS.output, ACTIONS.install, ACTIONS.retry],
      },
    ]);
    expect(statusItem().text).toBe("$(error) lsp-memory");
    expect(output().match(/starting the language server/g)).toHaveLength(1);
  });

  test("a fixed setting restarts by itself", async () => {
    start({ "lspMemory.serverCommand": ["lsp-memory-not-installed-here", "serve"] });
    await until("the message", () => errors().length > 0, 10_000);
    configure({ "lspMemory.serverCommand": ["another-missing-program"] });
    await until("the second look", () => errors().length > 1, 10_000);
    expect(errors()[1]!.message).toContain('"another-missing-program" is not on PATH');
  });
});
