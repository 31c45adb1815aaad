/**
 * The language server's life: decide where it serves (nowhere: it is not started), find the
 * program, start a client on it, restart it when it crashes (a few times, then stop and say
 * so), and tell the user once — one message per start, with the actions that fix it — when
 * it is missing, fails to start or keeps dying.
 *
 * A client that failed to start cannot be started again (vscode-languageclient keeps its
 * failed start), so every start the user asks for builds a fresh client.
 */

import { readdirSync, statSync } from "node:fs";
import * as readline from "node:readline";
import type { Readable } from "node:stream";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type CloseHandlerResult,
  type ErrorHandlerResult,
  type Executable,
  type InitializeParams,
  type LanguageClientOptions,
  type Middleware,
  type WorkspaceFolder,
} from "vscode-languageclient/node";
import { RestartLimiter } from "./limiter";
import { findProgram } from "./program";
import {
  active,
  describeScope,
  scope,
  scopeKey,
  selector,
  serverFolders,
  type Folder,
  type Root,
  type Scope,
} from "./scope";
import {
  SECTION,
  SettingError,
  initializationOptions,
  serverCommand,
  serverSection,
  type DocumentFilter,
  type Places,
  type ServerCommand,
  type Settings,
} from "./settings";
import type { Status } from "./status";

export const CLIENT_ID = SECTION;
export const CLIENT_NAME = "lsp-memory";

/** The actions offered in the messages. */
export const ACTIONS = {
  install: "How to install",
  retry: "Retry",
  restart: "Restart",
  settings: "Open Settings",
  output: "Show Output",
} as const;

/** What the manager needs of the editor; `vscodeHost` is the real one. */
export interface Host {
  settings(): Settings;
  places(): Places;
  /** The workspace folders on disk, each with its own view of the settings. */
  folders(): Folder[];
  /** Whether the workspace is trusted. */
  trusted(): boolean;
  /** Told where the server serves, at every start. */
  scope(scope: Scope): void;
  output: vscode.LogOutputChannel;
  status(status: Status): void;
  /** Shows an error message; resolves to the action chosen, if any. */
  showError(message: string, ...actions: string[]): Thenable<string | undefined>;
  openInstallGuide(): void;
  openSettings(): void;
  findProgram(program: string): Promise<string | undefined>;
  /** `folders`: the workspace folders the server is told about (`undefined`: VS Code's). */
  createClient(server: Executable, options: LanguageClientOptions, folders?: readonly Root[]): LanguageClient;
}

/** The client used in VS Code: the stock one, except that it never shows its own
 * notifications for a failed start or a lost connection — the manager reports those, once —
 * and that it tells the server about the served folders only, when given them (the server
 * makes every workspace folder a vault, and looks for `lsp-memory.toml` in the first). */
export class MemoryClient extends LanguageClient {
  constructor(
    id: string,
    name: string,
    server: Executable,
    options: LanguageClientOptions,
    private readonly folders?: readonly Root[],
  ) {
    super(id, name, server, options);
  }

  override error(message: string, data?: unknown, showNotification?: boolean | "force"): void {
    super.error(message, data, showNotification === "force" ? false : showNotification);
  }

  protected override fillInitializeParams(params: InitializeParams): void {
    super.fillInitializeParams(params);
    if (this.folders === undefined || this.folders.length === 0) return;
    params.workspaceFolders = protocolFolders(this.folders);
  }
}

/** Folders as LSP's `WorkspaceFolder`s. */
export function protocolFolders(folders: readonly Root[]): WorkspaceFolder[] {
  return folders.map((folder) => ({ uri: vscode.Uri.file(folder.path).toString(), name: folder.name }));
}

/** An LSP document selector as VS Code takes it (a relative pattern becomes a
 * `vscode.RelativePattern`), for `languages.match` and the language status item. */
export function vscodeSelector(filters: readonly DocumentFilter[]): vscode.DocumentFilter[] {
  return filters.map((filter) => {
    const { pattern, ...rest } = filter;
    if (pattern === undefined || typeof pattern === "string") return filter as vscode.DocumentFilter;
    return {
      ...rest,
      pattern: new vscode.RelativePattern(vscode.Uri.parse(pattern.baseUri), pattern.pattern),
    };
  });
}

export function vscodeHost(
  output: vscode.LogOutputChannel,
  status: (status: Status) => void,
  served: (scope: Scope) => void,
  extensionUri: vscode.Uri,
): Host {
  return {
    settings: () => vscode.workspace.getConfiguration(SECTION),
    places: () => ({
      workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      home: process.env.HOME ?? process.env.USERPROFILE ?? "",
    }),
    folders: () =>
      (vscode.workspace.workspaceFolders ?? [])
        .filter((folder) => folder.uri.scheme === "file")
        .map((folder) => ({
          path: folder.uri.fsPath,
          name: folder.name,
          settings: vscode.workspace.getConfiguration(SECTION, folder.uri),
        })),
    trusted: () => vscode.workspace.isTrusted,
    scope: served,
    output,
    status,
    showError: (message, ...actions) => vscode.window.showErrorMessage(message, ...actions),
    openInstallGuide: () => {
      const readme = vscode.Uri.joinPath(extensionUri, readmeName(extensionUri.fsPath));
      void vscode.commands.executeCommand("markdown.showPreview", readme);
    },
    openSettings: () => {
      void vscode.commands.executeCommand("workbench.action.openSettings", "lspMemory.server");
    },
    findProgram: (program) => findProgram(program),
    createClient: (server, options, folders) =>
      new MemoryClient(CLIENT_ID, CLIENT_NAME, server, options, folders),
  };
}

/** Raised by `execute` when there is no running server to ask. */
export class NotRunning extends Error {
  constructor() {
    super("the language server is not running");
  }
}

const STDERR_LINES = 20;

export class ServerManager implements vscode.Disposable {
  /** The current client, whatever its state. */
  client: LanguageClient | undefined;
  /** Where the server serves (or would), as of the last start. */
  scope: Scope | undefined;
  private scopeKey: string | undefined;
  private scopeShown: string | undefined;
  readonly limiter = new RestartLimiter();
  /** Counts starts; events of an older client are ignored. */
  private generation = 0;
  private stderr: string[] = [];
  /** Resolves when the current server's stderr ends. */
  private stderrEnded: Promise<void> = Promise.resolve();
  private alertShown = false;
  private disposed = false;

  constructor(
    private readonly host: Host,
    private readonly middleware: Middleware = {},
  ) {}

  get output(): vscode.LogOutputChannel {
    return this.host.output;
  }

  /** A document's URI as the client sends it to the server. */
  uri(uri: vscode.Uri): string {
    return this.client?.code2ProtocolConverter.asUri(uri) ?? uri.toString();
  }

  /** Whether the server serves a document (by the document selector, as the client has it). */
  serves(document: vscode.TextDocument): boolean {
    const served = this.scope ?? this.currentScope();
    return active(served) && vscode.languages.match(vscodeSelector(selector(served)), document) > 0;
  }

  /** Whether the running server announced a command: `undefined` when it is not known. */
  announces(command: string): boolean | undefined {
    return this.client?.initializeResult?.capabilities.executeCommandProvider?.commands.includes(command);
  }

  /** Starts the server where there is something to serve; resolves once it runs, has
   * failed (and said so), or is not started for want of a served folder. */
  async start(): Promise<void> {
    if (this.disposed) return;
    const generation = ++this.generation;
    this.alertShown = false;
    this.stderr = [];
    this.stderrEnded = Promise.resolve();
    const served = this.currentScope();
    this.scope = served;
    this.scopeKey = scopeKey(served);
    this.host.scope(served);
    this.describe(served);
    if (!active(served)) {
      this.host.status({ kind: "off" });
      return;
    }
    this.host.status({ kind: "starting" });
    const places = this.host.places();
    let command: ServerCommand;
    try {
      command = serverCommand(this.host.settings(), places);
    } catch (error) {
      if (!(error instanceof SettingError)) throw error;
      this.fail(error.message, [ACTIONS.settings, ACTIONS.retry]);
      return;
    }
    const program = await this.host.findProgram(command.command);
    if (generation !== this.generation) return;
    if (program === undefined) {
      this.fail(missingMessage(command), [ACTIONS.install, ACTIONS.settings, ACTIONS.retry]);
      return;
    }
    const shown = [program, ...command.args].join(" ");
    this.host.output.info(`starting the language server: ${shown}`);
    // The server runs in the first served folder, else the first workspace folder (where it
    // looks for lsp-memory.toml when told no folder); a folder that is not on disk would make
    // the spawn fail.
    const folders = serverFolders(served);
    const home = folders?.[0]?.path ?? places.workspaceFolder;
    const cwd = home !== undefined && isFolder(home) ? home : undefined;
    const server: Executable = { command: program, args: command.args, options: cwd ? { cwd } : undefined };
    const client = this.host.createClient(server, this.clientOptions(generation, served), folders);
    this.client = client;
    let spawnError: string | undefined;
    let settled: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (settled = resolve));
    client.onDidChangeState(({ newState }) => {
      if (generation !== this.generation) return;
      if (newState === State.Running) {
        this.host.status({ kind: "indexing" });
      } else if (newState === State.StartFailed) {
        // The state changes before the server's last words are read and before start()
        // rejects: wait for both (a second at most) so that the message can quote them.
        void Promise.race([Promise.all([this.stderrEnded, started]), delay(1000)]).then(() => {
          if (generation !== this.generation) return;
          const reason = this.lastError() ?? spawnError ?? `${shown} exited before it answered.`;
          this.fail(`lsp-memory: the language server failed to start: ${reason}`, [
            ACTIONS.output,
            ACTIONS.install,
            ACTIONS.retry,
          ]);
        });
      }
    });
    try {
      await client.start();
    } catch (error) {
      // Reported through the StartFailed state above (every failed start ends there).
      const text = describe(error);
      this.host.output.error(`start failed: ${text}`);
      if (/\bspawn\b|ENOENT|EACCES/.test(text)) spawnError = text;
    } finally {
      settled();
    }
  }

  /** Restarts the server when where it would serve has changed (an `lsp-memory.toml`
   * appeared or went, a workspace folder or a setting changed): started where it now has
   * something to serve, stopped where it has not. */
  async refresh(): Promise<void> {
    if (this.disposed) return;
    const served = this.currentScope();
    this.describe(served);
    const key = scopeKey(served);
    if (key === this.scopeKey) return;
    this.scopeKey = key;
    this.host.output.info("the served folders changed: restarting the server");
    await this.restart();
  }

  /** A restart the user asked for: the restart count starts again. */
  async restart(): Promise<void> {
    this.limiter.reset();
    await this.stop();
    await this.start();
  }

  /** Stops the server (if it runs) and forgets the client. */
  async stop(): Promise<void> {
    this.generation++;
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    try {
      await client.dispose(2000);
    } catch (error) {
      // A client that never ran cannot be stopped; its server process is ended anyway.
      this.host.output.debug(`stop: ${describe(error)}`);
    }
  }

  /** Runs one of the server's `workspace/executeCommand` commands. */
  async execute<R>(command: string, args: unknown[]): Promise<R> {
    const client = this.client;
    if (client === undefined || client.state === State.StartFailed || client.state === State.Stopped) {
      throw new NotRunning();
    }
    if (client.state === State.Starting) {
      await client.start();
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, {
      command,
      arguments: args,
    })) as R;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.stop();
  }

  private currentScope(): Scope {
    const places = this.host.places();
    return scope({
      settings: this.host.settings(),
      folders: this.host.folders(),
      home: places.home,
      trusted: this.host.trusted(),
    });
  }

  /** Says in the output where the server serves, when that changed. */
  private describe(served: Scope): void {
    const text = [describeScope(served), ...served.notes].join("; ");
    if (text === this.scopeShown) return;
    this.scopeShown = text;
    this.host.output.info(describeScope(served));
    for (const note of served.notes) this.host.output.warn(note);
  }

  private clientOptions(generation: number, served: Scope): LanguageClientOptions {
    const settings = this.host.settings();
    const output = this.host.output;
    return {
      documentSelector: selector(served),
      initializationOptions: initializationOptions(settings),
      outputChannel: output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationFailedHandler: () => false,
      errorHandler: {
        error: (error, _message, count) => this.connectionError(generation, error, count),
        closed: () => this.closed(generation),
      },
      middleware: this.withWorkspace(serverFolders(served)),
      stdioOptions: {
        stdout: (input, channel) => lines(input, (line) => channel.info(line)),
        stderr: (input, channel) => {
          if (generation === this.generation) {
            this.stderrEnded = new Promise((resolve) => input.once("close", resolve).once("end", resolve));
          }
          lines(input, (line) => {
            channel.error(line);
            if (generation === this.generation) {
              this.stderr.push(line);
              if (this.stderr.length > STDERR_LINES) this.stderr.shift();
            }
          });
        },
      },
    };
  }

  /**
   * The given middleware, plus: the `lspMemory` settings go to the server without the
   * extension's own keys and with renamed ones under their new names; and when the server
   * is told about the served folders only, it is told so again when it asks, and not told
   * about VS Code's folder changes (a change of the served folders restarts it).
   */
  private withWorkspace(folders: readonly Root[] | undefined): Middleware {
    const given = this.middleware.workspace ?? {};
    const workspace: Middleware["workspace"] = {
      ...given,
      configuration: async (params, token, next) => {
        const found = await (given.configuration
          ? given.configuration(params, token, next)
          : next(params, token));
        if (!Array.isArray(found)) return found;
        return found.map((value: unknown, index) =>
          params.items[index]?.section === SECTION ? serverSection(value) : value,
        );
      },
    };
    if (folders !== undefined) {
      workspace.workspaceFolders = () => protocolFolders(folders);
      workspace.didChangeWorkspaceFolders = () => Promise.resolve();
    }
    return { ...this.middleware, workspace };
  }

  /** The connection to a running server closed: restart it, unless it has done this too
   * often lately (then stop and say so once). A server that closes while still starting
   * is a failed start, reported as such. */
  private closed(generation: number): CloseHandlerResult {
    const client = this.client;
    if (generation !== this.generation || client === undefined || client.state !== State.Running) {
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    if (this.limiter.allow()) {
      const message = `the language server stopped; restarting it (${this.limiter.count} of ${this.limiter.max} within ${minutes(this.limiter.windowMs)})`;
      this.host.output.warn(message);
      this.host.status({ kind: "starting" });
      return { action: CloseAction.Restart, message, handled: true };
    }
    const reason = this.lastError();
    this.fail(
      `lsp-memory: the language server stopped ${this.limiter.max + 1} times within ${minutes(this.limiter.windowMs)}; it is not restarted again.${reason ? ` ${reason}` : ""}`,
      [ACTIONS.restart, ACTIONS.output],
    );
    return { action: CloseAction.DoNotRestart, handled: true };
  }

  /** Reading from or writing to the server failed: carry on a few times, then stop it. */
  private connectionError(generation: number, error: Error, count: number | undefined): ErrorHandlerResult {
    if (generation !== this.generation) {
      return { action: ErrorAction.Shutdown, handled: true };
    }
    this.host.output.error(`connection error: ${error.message}`);
    // A server that dies while starting breaks the pipe too: that is a failed start,
    // reported once as such.
    if (this.client?.state !== State.Running || (count ?? 1) <= 3) {
      return { action: ErrorAction.Continue, handled: true };
    }
    this.fail(
      `lsp-memory: the connection to the language server keeps failing (${error.message}); it was stopped.`,
      [ACTIONS.restart, ACTIONS.output],
    );
    return { action: ErrorAction.Shutdown, handled: true };
  }

  /** The one message for this start, and the status bar's stopped state. */
  private fail(message: string, actions: string[]): void {
    this.host.status({ kind: "stopped", reason: message.replace(/^lsp-memory: /, "") });
    this.host.output.error(message);
    if (this.alertShown) return;
    this.alertShown = true;
    void Promise.resolve(this.host.showError(message, ...actions)).then((action) => this.act(action));
  }

  private async act(action: string | undefined): Promise<void> {
    switch (action) {
      case ACTIONS.install:
        this.host.openInstallGuide();
        break;
      case ACTIONS.settings:
        this.host.openSettings();
        break;
      case ACTIONS.output:
        this.host.output.show(true);
        break;
      case ACTIONS.retry:
      case ACTIONS.restart:
        await this.restart();
        break;
    }
  }

  /** The server's last words on stderr (a traceback's last line says what went wrong). */
  private lastError(): string | undefined {
    const last = this.stderr.filter((line) => line.trim() !== "").at(-1);
    return last?.trim();
  }
}

function missingMessage(command: ServerCommand): string {
  const where =
    command.command.includes("/") || command.command.includes("\\")
      ? `"${command.command}" does not exist or is not executable`
      : `"${command.command}" is not on PATH`;
  return `lsp-memory: the language server was not found: ${where} (setting ${command.label}). Install lsp-memory, or point lspMemory.serverPath at it.`;
}

function minutes(ms: number): string {
  const count = Math.round(ms / 60_000);
  return count === 1 ? "a minute" : `${count} minutes`;
}

/** The README's file name in the extension's folder: a .vsix holds it as `readme.md`. */
export function readmeName(folder: string): string {
  try {
    return readdirSync(folder).find((name) => name.toLowerCase() === "readme.md") ?? "README.md";
  } catch {
    return "README.md";
  }
}

function isFolder(folder: string): boolean {
  try {
    return statSync(folder).isDirectory();
  } catch {
    return false;
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function lines(input: Readable, each: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on("line", each);
}

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
