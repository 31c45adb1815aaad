import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { beforeEach, describe, expect, test, vi } from "vitest";
import {
  CloseAction,
  ErrorAction,
  State,
  type ClientCapabilities,
  type ConfigurationParams,
  type InitializeParams,
  type Middleware,
} from "vscode-languageclient/node";
import * as vscode from "vscode";
import { Uri, makeDocument, reset, state } from "./vscode";
import { ACTIONS, MemoryClient, NotRunning, ServerManager, readmeName } from "../src/server";
import { folder, recorder, settle, type Recorder } from "./fakes";

let r: Recorder;
let manager: ServerManager;

beforeEach(() => {
  reset();
  r = recorder();
  manager = new ServerManager(r.host);
});

describe("starting", () => {
  test("the resolved program, the server's options and the document selector go to the client", async () => {
    r.values = { ...r.values, user: "priya", budget: 2000, store: null, busy_timeout_ms: 250 };
    await manager.start();
    expect(r.clients).toHaveLength(1);
    const client = r.clients[0]!;
    const notes = r.workspace[0]!;
    expect(client.server).toEqual({
      command: "/usr/bin/lsp-memory",
      args: ["serve"],
      options: { cwd: notes },
    });
    // camelCase, an old name's value under its new one.
    expect(client.options.initializationOptions).toEqual({ user: "priya", budget: 2000, busyTimeoutMs: 250 });
    expect(client.options.documentSelector).toEqual([
      {
        scheme: "file",
        language: "markdown",
        pattern: { baseUri: pathToFileURL(notes).href, pattern: "**" },
      },
    ]);
    expect(client.folders).toEqual([{ path: notes, name: "notes", reason: "lsp-memory.toml" }]);
    expect(r.statuses.map((s) => s.kind)).toEqual(["starting", "indexing"]);
    expect(r.errors).toEqual([]);
  });

  test("a workspace folder that is not on disk is not the working folder", async () => {
    r.values = { ...r.values, documentSelector: ["markdown"] };
    r.workspace = [];
    r.host.places = () => ({ workspaceFolder: "/nonexistent/notes", home: "/home/priya" });
    await manager.start();
    expect(r.clients[0]!.server.options).toBeUndefined();
  });

  test("serverPath to a Python interpreter runs the module", async () => {
    r.values = { ...r.values, serverPath: "/opt/venv/bin/python3" };
    await manager.start();
    expect(r.clients[0]!.server.command).toBe("/opt/venv/bin/python3");
    expect(r.clients[0]!.server.args).toEqual(["-m", "lsp_memory", "serve"]);
  });
});

describe("where it serves", () => {
  const lines = () => (r.output as unknown as { lines: string[] }).lines;

  test("no folder with lsp-memory.toml and no lspMemory.folders: not started, and said so", async () => {
    r.workspace = [folder("just-code", { "CHANGELOG.md": "Thanks @octocat\n" })];
    await manager.start();
    expect(r.clients).toEqual([]);
    expect(r.found).toEqual([]);
    expect(r.statuses).toEqual([{ kind: "off" }]);
    expect(r.errors).toEqual([]);
    expect(lines().join("\n")).toContain("no workspace folder has an lsp-memory.toml at its root");
    const changelog = makeDocument(
      "",
      "markdown",
      pathToFileURL(path.join(r.workspace[0]!, "CHANGELOG.md")).href,
    );
    expect(manager.serves(changelog as unknown as vscode.TextDocument)).toBe(false);
  });

  test("an lsp-memory.toml that appears starts it; one that goes stops it", async () => {
    const code = folder("becomes-notes", {});
    r.workspace = [code];
    await manager.start();
    expect(r.clients).toHaveLength(0);
    writeFileSync(path.join(code, "lsp-memory.toml"), "");
    await manager.refresh();
    expect(r.clients).toHaveLength(1);
    expect(r.clients[0]!.state).toBe(State.Running);
    const note = makeDocument("", "markdown", pathToFileURL(path.join(code, "a.md")).href);
    expect(manager.serves(note as unknown as vscode.TextDocument)).toBe(true);
    // Nothing changed: no restart.
    await manager.refresh();
    expect(r.clients).toHaveLength(1);
    unlinkSync(path.join(code, "lsp-memory.toml"));
    await manager.refresh();
    expect(r.clients[0]!.disposed).toBe(true);
    expect(r.clients).toHaveLength(1);
    expect(r.statuses.at(-1)).toEqual({ kind: "off" });
  });

  test("lspMemory.folders serves a folder without lsp-memory.toml; plain text when opted in", async () => {
    const repo = folder("repo-with-notes", {});
    const notes = folder("repo-with-notes/notes", {});
    r.workspace = [repo];
    r.values = { ...r.values, folders: ["notes"], plainText: true };
    await manager.start();
    const client = r.clients[0]!;
    const baseUri = pathToFileURL(notes).href;
    expect(client.options.documentSelector).toEqual([
      { scheme: "file", language: "markdown", pattern: { baseUri, pattern: "**" } },
      { scheme: "file", language: "plaintext", pattern: { baseUri, pattern: "**" } },
    ]);
    expect(client.folders).toEqual([{ path: notes, name: "notes", reason: "lspMemory.folders" }]);
    const text = makeDocument("", "plaintext", pathToFileURL(path.join(notes, "a.txt")).href);
    expect(manager.serves(text as unknown as vscode.TextDocument)).toBe(true);
    const readme = makeDocument("", "markdown", pathToFileURL(path.join(repo, "README.md")).href);
    expect(manager.serves(readme as unknown as vscode.TextDocument)).toBe(false);
  });

  test("the server is told about the served folders only, also when it asks", async () => {
    const code = folder("multi-root-code", {});
    r.workspace = [code, r.workspace[0]!];
    await manager.start();
    // It runs in the served folder, not the first workspace folder.
    expect(r.clients[0]!.server.options).toEqual({ cwd: r.workspace[1] });
    expect(r.clients[0]!.folders?.map((root) => root.path)).toEqual([r.workspace[1]]);
    const middleware = r.clients[0]!.options.middleware!.workspace!;
    const served = [{ uri: vscode.Uri.file(r.workspace[1]!).toString(), name: "notes" }];
    const next = vi.fn(() => [{ uri: vscode.Uri.file(code).toString(), name: "code" }]);
    expect(middleware.workspaceFolders!(undefined as never, next)).toEqual(served);
    const send = vi.fn(() => Promise.resolve());
    await middleware.didChangeWorkspaceFolders!({ added: [], removed: [] }, send);
    expect(send).not.toHaveBeenCalled();
  });
});

describe("the settings the server reads", () => {
  test("workspace/configuration of lspMemory: the server's keys, camelCase; other sections as they are", async () => {
    await manager.start();
    const configuration = r.clients[0]!.options.middleware!.workspace!.configuration!;
    const params: ConfigurationParams = { items: [{ section: "lspMemory" }, { section: "editor" }] };
    const next = vi.fn(() => [
      {
        user: "priya",
        busy_timeout_ms: 250,
        busyTimeoutMs: null,
        folders: ["."],
        plainText: false,
        trace: {},
      },
      { tabSize: 2 },
    ]);
    const answer = await configuration(params, undefined as never, next);
    expect(answer).toEqual([{ user: "priya", busyTimeoutMs: 250 }, { tabSize: 2 }]);
  });

  test("the extension's own middleware is kept", async () => {
    const handleWorkDoneProgress = vi.fn();
    const given: Middleware = { handleWorkDoneProgress };
    const withOwn = new ServerManager(r.host, given);
    await withOwn.start();
    expect(r.clients[0]!.options.middleware!.handleWorkDoneProgress).toBe(handleWorkDoneProgress);
  });
});

describe("a missing program", () => {
  beforeEach(() => {
    r.exists = () => false;
  });

  test("one clear message with How to install and Retry; no client, no loop", async () => {
    await manager.start();
    await settle();
    expect(r.clients).toHaveLength(0);
    expect(r.errors).toHaveLength(1);
    const [error] = r.errors;
    expect(error!.message).toContain('"lsp-memory" is not on PATH');
    expect(error!.message).toContain("lspMemory.serverCommand");
    expect(error!.actions).toEqual([ACTIONS.install, ACTIONS.settings, ACTIONS.retry]);
    expect(r.statuses.at(-1)).toMatchObject({ kind: "stopped" });
    expect(r.found).toEqual(["lsp-memory"]);
  });

  test("a missing path names the path and the setting", async () => {
    r.values = { ...r.values, serverPath: "/opt/venv/bin/lsp-memory" };
    await manager.start();
    expect(r.errors[0]!.message).toContain('"/opt/venv/bin/lsp-memory" does not exist or is not executable');
    expect(r.errors[0]!.message).toContain("lspMemory.serverPath");
  });

  test("How to install opens the guide and nothing else happens", async () => {
    r.answers.push(ACTIONS.install);
    await manager.start();
    await settle();
    expect(r.installGuides).toBe(1);
    expect(r.found).toHaveLength(1);
    expect(r.errors).toHaveLength(1);
  });

  test("Retry looks again: found now, it starts", async () => {
    r.answers.push(ACTIONS.retry);
    let installed = false;
    r.exists = () => installed;
    await manager.start();
    installed = true;
    await settle();
    expect(r.found).toHaveLength(2);
    expect(r.clients).toHaveLength(1);
    expect(r.errors).toHaveLength(1);
    expect(r.statuses.at(-1)).toEqual({ kind: "indexing" });
  });

  test("Retry while still missing: one more message, only because the user asked", async () => {
    r.answers.push(ACTIONS.retry);
    await manager.start();
    await settle();
    expect(r.errors).toHaveLength(2);
    expect(r.found).toHaveLength(2);
  });

  test("a setting that gives no program: a message that opens the settings", async () => {
    r.exists = () => true;
    r.values = { ...r.values, serverCommand: [] };
    r.answers.push(ACTIONS.settings);
    await manager.start();
    await settle();
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.message).toContain("lspMemory.serverCommand is empty");
    expect(r.errors[0]!.actions).toEqual([ACTIONS.settings, ACTIONS.retry]);
    expect(r.settingsOpened).toBe(1);
    expect(r.clients).toHaveLength(0);
  });
});

describe("a failed start", () => {
  test("one message with the server's last stderr line; the client is not restarted", async () => {
    r.behaviour = "hang";
    await Promise.race([manager.start(), settle()]);
    const client = r.clients[0]!;
    await client.stderr(
      "Traceback (most recent call last):",
      '  File "x.py", line 1',
      "ModuleNotFoundError: No module named 'pygls'",
      "",
    );
    // What vscode-languageclient asks: the connection closed while starting.
    expect(await client.crash()).toEqual({ action: CloseAction.DoNotRestart, handled: true });
    client.failStart();
    client.setState(State.StartFailed);
    await settle();
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.message).toBe(
      "lsp-memory: the language server failed to start: ModuleNotFoundError: No module named 'pygls'",
    );
    expect(r.errors[0]!.actions).toEqual([ACTIONS.output, ACTIONS.install, ACTIONS.retry]);
    expect(client.start).toHaveBeenCalledTimes(1);
    expect(r.clients).toHaveLength(1);
  });

  test("a spawn error is quoted", async () => {
    r.behaviour = "hang";
    void manager.start();
    await settle();
    r.clients[0]!.failStart(
      new Error("Launching server using command /x/lsp-memory failed. Error: spawn /x/lsp-memory EACCES"),
    );
    await settle();
    expect(r.errors[0]!.message).toBe(
      "lsp-memory: the language server failed to start: Launching server using command /x/lsp-memory failed. Error: spawn /x/lsp-memory EACCES",
    );
  });

  test("without stderr it says the program exited; Retry builds a fresh client", async () => {
    r.behaviour = "fail";
    r.answers.push(ACTIONS.retry);
    await manager.start();
    await settle();
    expect(r.errors[0]!.message).toBe(
      "lsp-memory: the language server failed to start: /usr/bin/lsp-memory serve exited before it answered.",
    );
    expect(r.clients).toHaveLength(2);
    expect(r.clients[0]!.disposed).toBe(true);
    expect(r.errors).toHaveLength(2);
  });
});

describe("crashes", () => {
  test("restarted three times within three minutes, then stopped with one message", async () => {
    await manager.start();
    const client = r.clients[0]!;
    for (let i = 0; i < 3; i++) {
      expect(await client.crash()).toMatchObject({ action: CloseAction.Restart, handled: true });
    }
    expect(r.errors).toHaveLength(0);
    expect(await client.crash()).toEqual({ action: CloseAction.DoNotRestart, handled: true });
    // vscode-languageclient stops the client; more closings change nothing.
    client.setState(State.Stopped);
    await settle();
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.message).toMatch(/stopped 4 times within 3 minutes; it is not restarted again/);
    expect(r.errors[0]!.actions).toEqual([ACTIONS.restart, ACTIONS.output]);
    expect(r.statuses.at(-1)).toMatchObject({ kind: "stopped" });
  });

  test("Restart from the message starts a fresh client with a fresh count", async () => {
    await manager.start();
    const first = r.clients[0]!;
    for (let i = 0; i < 3; i++) await first.crash();
    r.answers.push(ACTIONS.restart);
    await first.crash();
    await settle();
    expect(r.clients).toHaveLength(2);
    expect(manager.limiter.count).toBe(0);
    expect(await r.clients[1]!.crash()).toMatchObject({ action: CloseAction.Restart });
  });

  test("a close while starting is a failed start, never a restart", async () => {
    r.behaviour = "hang";
    void manager.start();
    await settle();
    expect(await r.clients[0]!.crash()).toEqual({ action: CloseAction.DoNotRestart, handled: true });
    expect(manager.limiter.count).toBe(0);
  });

  test("a stopped (old) client's closings are ignored", async () => {
    await manager.start();
    const old = r.clients[0]!;
    await manager.restart();
    expect(await old.crash()).toEqual({ action: CloseAction.DoNotRestart, handled: true });
    expect(r.errors).toHaveLength(0);
  });

  test("connection errors: carried on three times, then shut down with one message", async () => {
    await manager.start();
    const handler = r.clients[0]!.options.errorHandler!;
    const error = new Error("write EPIPE");
    for (const count of [1, 2, 3]) {
      expect(await handler.error(error, undefined, count)).toEqual({
        action: ErrorAction.Continue,
        handled: true,
      });
    }
    expect(await handler.error(error, undefined, 4)).toEqual({ action: ErrorAction.Shutdown, handled: true });
    expect(await handler.error(error, undefined, 5)).toEqual({ action: ErrorAction.Shutdown, handled: true });
    await settle();
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.message).toContain("keeps failing (write EPIPE)");
  });
});

describe("execute", () => {
  test("sends workspace/executeCommand to the running server", async () => {
    await manager.start();
    r.clients[0]!.answer = () => [{ reference: "@x" }];
    const hits = await manager.execute("lspMemory.search", ["alpha", "all", 20]);
    expect(hits).toEqual([{ reference: "@x" }]);
    expect(r.clients[0]!.requests).toEqual([
      {
        method: "workspace/executeCommand",
        params: { command: "lspMemory.search", arguments: ["alpha", "all", 20] },
      },
    ]);
  });

  test("NotRunning without a running server", async () => {
    await expect(manager.execute("lspMemory.reindex", [])).rejects.toBeInstanceOf(NotRunning);
    r.behaviour = "fail";
    await manager.start();
    await expect(manager.execute("lspMemory.reindex", [])).rejects.toBeInstanceOf(NotRunning);
  });

  test("announces(): the commands the server listed in its answer to initialize", async () => {
    await manager.start();
    expect(manager.announces("lspMemory.status")).toBeUndefined();
    r.clients[0]!.initializeResult = {
      capabilities: { executeCommandProvider: { commands: ["lspMemory.search"] } },
    };
    expect(manager.announces("lspMemory.status")).toBe(false);
    expect(manager.announces("lspMemory.search")).toBe(true);
  });

  test("uri() is the client's own conversion", async () => {
    await manager.start();
    expect(manager.uri(vscode.Uri.parse("file:///notes/a%20b.md"))).toBe("file:///notes/a%20b.md");
  });
});

test("stop and dispose end the client; nothing starts after dispose", async () => {
  await manager.start();
  await manager.dispose();
  expect(r.clients[0]!.disposed).toBe(true);
  await manager.start();
  expect(r.clients).toHaveLength(1);
});

describe("MemoryClient", () => {
  const output = () => vscode.window.createOutputChannel("lsp-memory", { log: true });
  const internals = (client: MemoryClient) =>
    client as unknown as {
      fillInitializeParams(params: InitializeParams): void;
      computeClientCapabilities(): ClientCapabilities;
    };

  test("tells the server about the served folders only", () => {
    state.workspaceFolders = [
      { uri: Uri.file("/work/code"), name: "code", index: 0 },
      { uri: Uri.file("/work/notes"), name: "notes", index: 1 },
    ];
    const client = new MemoryClient(
      "lspMemory",
      "lsp-memory",
      { command: "lsp-memory" },
      { outputChannel: output() },
      [{ path: "/work/notes", name: "notes", reason: "lsp-memory.toml" }],
    );
    const params = {} as InitializeParams;
    internals(client).fillInitializeParams(params);
    expect(params.workspaceFolders).toEqual([{ uri: "file:///work/notes", name: "notes" }]);
    // Without served folders (lspMemory.documentSelector alone): VS Code's.
    const plain = new MemoryClient(
      "lspMemory",
      "lsp-memory",
      { command: "lsp-memory" },
      { outputChannel: output() },
    );
    const all = {} as InitializeParams;
    internals(plain).fillInitializeParams(all);
    expect(all.workspaceFolders?.map((f) => f.name)).toEqual(["code", "notes"]);
  });

  test("announces resource operations: the server offers VS Code its Create note edit, not the command", () => {
    const client = new MemoryClient(
      "lspMemory",
      "lsp-memory",
      { command: "lsp-memory" },
      { outputChannel: output() },
    );
    const capabilities = internals(client).computeClientCapabilities();
    expect(capabilities.workspace?.workspaceEdit?.resourceOperations).toContain("create");
  });
});

test("MemoryClient never shows vscode-languageclient's own forced notifications", () => {
  const output = vscode.window.createOutputChannel("lsp-memory", { log: true });
  const client = new MemoryClient(
    "lspMemory",
    "lsp-memory",
    { command: "lsp-memory" },
    { outputChannel: output },
  );
  client.error("lsp-memory client: couldn't create connection to server.", undefined, "force");
  expect(state.shown).toEqual([]);
  expect(state.outputs.at(-1)!.lines.join("\n")).toContain("couldn't create connection to server");
});

test("the install guide is the README, whatever case the .vsix gave its name", () => {
  const folder = mkdtempSync(path.join(tmpdir(), "lsp-memory-extension-"));
  try {
    expect(readmeName(folder)).toBe("README.md");
    writeFileSync(path.join(folder, "readme.md"), "# lsp-memory");
    expect(readmeName(folder)).toBe("readme.md");
    expect(readmeName(path.join(folder, "missing"))).toBe("README.md");
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
