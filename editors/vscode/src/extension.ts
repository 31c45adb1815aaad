/**
 * The extension's entry point and composition root: the output channel, the status bar, the
 * server manager with its middleware, the commands, and the settings watch that restarts the
 * server when the program or the served documents change. (The server's own settings reach
 * it without a restart: it pulls them through `workspace/configuration` and registers for
 * `workspace/didChangeConfiguration`.)
 */

import * as vscode from "vscode";
import type { Middleware } from "vscode-languageclient/node";
import { Commands } from "./commands";
import { ServerManager, vscodeHost } from "./server";
import { CLIENT_KEYS, SECTION } from "./settings";
import { IndexingProgress, StatusBar, type Status } from "./status";

let manager: ServerManager | undefined;

/** What `activate` returns: the server manager, for tests (not a stable API). */
export interface Api {
  server: ServerManager;
}

export function activate(context: vscode.ExtensionContext): Api {
  const output = vscode.window.createOutputChannel("lsp-memory", { log: true });
  const bar = new StatusBar();
  const progress = new IndexingProgress((status) => bar.show(status));
  const show = (status: Status) => {
    if (status.kind === "starting" || status.kind === "stopped") progress.clear();
    bar.show(status);
  };
  // The middleware refers to `commands`, made below: it runs only once the server runs.
  const middleware: Middleware = {
    handleWorkDoneProgress: (token, params, next) => {
      progress.handle(token, params);
      next(token, params);
    },
    executeCommand: async (command, args: unknown[], next) => {
      try {
        const result: unknown = await next(command, args);
        await commands.afterServerCommand(command, args, result);
        return result;
      } catch (error) {
        commands.report(error);
        return undefined;
      }
    },
  };
  const server = new ServerManager(vscodeHost(output, show, context.extensionUri), middleware);
  manager = server;
  const commands = new Commands(server);
  context.subscriptions.push(
    output,
    bar,
    ...commands.register(),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (CLIENT_KEYS.some((key) => event.affectsConfiguration(`${SECTION}.${key}`))) {
        output.info("lspMemory.serverPath, serverCommand or documentSelector changed: restarting the server");
        void server.restart();
      }
    }),
  );
  void server.start();
  return { server };
}

export async function deactivate(): Promise<void> {
  const server = manager;
  manager = undefined;
  await server?.dispose();
}
