/**
 * The extension's entry point and composition root: the output channel, the language status
 * item and its counts, the server manager with its middleware, the commands, and the watches
 * that restart the server when the program or where it serves changes (a setting, an
 * `lsp-memory.toml` at a workspace folder's root, the workspace folders, the workspace's
 * trust). (The server's own settings reach it without a restart: it pulls them through
 * `workspace/configuration` and registers for `workspace/didChangeConfiguration`.)
 */

import * as vscode from "vscode";
import type { Middleware } from "vscode-languageclient/node";
import { Commands } from "./commands";
import { CONFIG_FILE, active, selector, type Scope } from "./scope";
import { ServerManager, vscodeHost, vscodeSelector } from "./server";
import { CLIENT_KEYS, SECTION, renamedInUse } from "./settings";
import { CountsRefresher, IndexingProgress, LanguageStatus, askCounts, type Status } from "./status";

let manager: ServerManager | undefined;

/** The context key that says whether the active editor's document is served (menus). */
export const SERVED_CONTEXT = "lspMemory.served";

/** How old the counts may be when a served document becomes active before they are asked
 * for again (the store changes outside the editor too). */
export const COUNTS_MAX_AGE_MS = 60_000;

/** What `activate` returns: the server manager, for tests (not a stable API). */
export interface Api {
  server: ServerManager;
}

export function activate(context: vscode.ExtensionContext): Api {
  const output = vscode.window.createOutputChannel("lsp-memory", { log: true });
  const status = new LanguageStatus();
  // `counts` and `commands` are made below; these run only once the server runs.
  const progress = new IndexingProgress((shown) => {
    status.show(shown);
    if (shown.kind === "ready") counts.request();
  });
  const show = (shown: Status) => {
    if (shown.kind === "starting" || shown.kind === "stopped" || shown.kind === "off") {
      progress.clear();
      counts.reset();
    }
    status.show(shown);
  };
  const served = (scope: Scope) => {
    status.selector = active(scope) ? vscodeSelector(selector(scope)) : [];
    setServedContext();
  };
  const middleware: Middleware = {
    handleWorkDoneProgress: (token, params, next) => {
      progress.handle(token, params);
      next(token, params);
    },
    executeCommand: (command, args: unknown[], next) => commands.runServerCommand(command, args, next),
  };
  const server = new ServerManager(vscodeHost(output, show, served, context.extensionUri), middleware);
  manager = server;
  const counts = new CountsRefresher(
    () => askCounts(server),
    (found) => status.showCounts(found),
    (message) => output.debug(message),
  );
  const commands = new Commands(server, (delayMs) => counts.request(delayMs));
  const setServedContext = () => {
    const editor = vscode.window.activeTextEditor;
    const value = editor !== undefined && server.serves(editor.document);
    void vscode.commands.executeCommand("setContext", SERVED_CONTEXT, value);
  };
  const configFiles = vscode.workspace.createFileSystemWatcher(`**/${CONFIG_FILE}`, false, true, false);
  context.subscriptions.push(
    output,
    status,
    counts,
    ...commands.register(),
    vscode.workspace.onDidChangeConfiguration((event) => {
      const changed = CLIENT_KEYS.filter((key) => event.affectsConfiguration(`${SECTION}.${key}`));
      if (changed.includes("serverPath") || changed.includes("serverCommand")) {
        output.info("lspMemory.serverPath or serverCommand changed: restarting the server");
        void server.restart();
      } else if (changed.length > 0) {
        void server.refresh();
      }
    }),
    configFiles,
    configFiles.onDidCreate(() => void server.refresh()),
    configFiles.onDidDelete(() => void server.refresh()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => void server.refresh()),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.refresh()),
    vscode.window.onDidChangeActiveTextEditor((editor) => {
      setServedContext();
      if (editor !== undefined && status.status.kind === "ready" && server.serves(editor.document)) {
        counts.requestIfOlder(COUNTS_MAX_AGE_MS);
      }
    }),
  );
  for (const { old, name } of renamedInUse(vscode.workspace.getConfiguration(SECTION))) {
    output.warn(`the setting ${old} is now ${name}: the old name still works, but please rename it`);
  }
  void server.start();
  return { server };
}

export async function deactivate(): Promise<void> {
  const server = manager;
  manager = undefined;
  await server?.dispose();
}
