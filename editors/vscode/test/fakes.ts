/**
 * Test doubles for the server manager: a language client whose life the test drives, and a
 * `Host` that records what the manager shows, on a workspace of one folder of notes (with an
 * `lsp-memory.toml`) by default.
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { Readable } from "node:stream";
import { vi } from "vitest";
import type {
  Executable,
  LanguageClient,
  LanguageClientOptions,
  StateChangeEvent,
} from "vscode-languageclient/node";
import { State } from "vscode-languageclient/node";
import * as vscode from "vscode";
import type { Root, Scope } from "../src/scope";
import type { Host } from "../src/server";
import type { Status } from "../src/status";
import { DEFAULT_COMMAND, type Settings } from "../src/settings";

let temporary: string | undefined;

/** A folder for this test file's workspaces, removed when the process ends. */
export function temporaryFolder(): string {
  if (temporary === undefined) {
    const made = mkdtempSync(path.join(tmpdir(), "lsp-memory-test-"));
    temporary = made;
    process.once("exit", () => rmSync(made, { recursive: true, force: true }));
  }
  return temporary;
}

/** A new folder under the temporary one, with these files (name → text). */
export function folder(name: string, files: Record<string, string> = {}): string {
  const made = path.join(temporaryFolder(), name);
  mkdirSync(made, { recursive: true });
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(made, file), text);
  return made;
}

/** What `start()` does: run (the default), fail, or stay starting. */
export type Behaviour = "run" | "fail" | "hang";

export class FakeClient {
  state: State = State.Stopped;
  private readonly states = new vscode.EventEmitter<StateChangeEvent>();
  readonly onDidChangeState = this.states.event;
  readonly requests: { method: string; params: unknown }[] = [];
  answer: (params: { command: string; arguments: unknown[] }) => unknown = () => null;
  /** What the server answered to `initialize`, once it runs (only its commands matter). */
  initializeResult: { capabilities: { executeCommandProvider?: { commands: string[] } } } | undefined;
  readonly code2ProtocolConverter = { asUri: (uri: vscode.Uri) => uri.toString() };
  disposed = false;

  constructor(
    readonly server: Executable,
    readonly options: LanguageClientOptions,
    private readonly behaviour: Behaviour,
    readonly folders: readonly Root[] | undefined,
  ) {}

  setState(state: State): void {
    const oldState = this.state;
    this.state = state;
    if (oldState !== state) this.states.fire({ oldState, newState: state });
  }

  start = vi.fn((): Promise<void> => {
    this.setState(State.Starting);
    if (this.behaviour === "run") {
      this.setState(State.Running);
      return Promise.resolve();
    }
    if (this.behaviour === "fail") {
      this.setState(State.StartFailed);
      return Promise.reject(new Error("Connection to server got closed."));
    }
    return new Promise((_resolve, reject) => {
      this.rejectStart = reject;
    });
  });

  private rejectStart: (error: Error) => void = () => undefined;

  /** A pending ("hang") start fails, as vscode-languageclient fails it: state, then rejection. */
  failStart(error = new Error("Connection to server got closed.")): void {
    this.setState(State.StartFailed);
    this.rejectStart(error);
  }

  dispose = vi.fn((): Promise<void> => {
    this.disposed = true;
    const running = this.state === State.Running;
    this.setState(State.Stopped);
    return running ? Promise.resolve() : Promise.reject(new Error("Client is not running"));
  });

  sendRequest = vi.fn((type: { method: string }, params: { command: string; arguments: unknown[] }) => {
    this.requests.push({ method: type.method, params });
    return Promise.resolve(this.answer(params));
  });

  /** The server process ends: what vscode-languageclient asks the error handler. */
  async crash(): Promise<unknown> {
    const handler = this.options.errorHandler;
    if (handler === undefined) throw new Error("no error handler");
    return handler.closed();
  }

  /** Lines the server writes to stderr. */
  stderr(...lines: string[]): Promise<void> {
    const stdio = (
      this.options as { stdioOptions?: { stderr(input: NodeJS.ReadableStream, channel: unknown): void } }
    ).stdioOptions;
    const channel = vscode.window.createOutputChannel("stderr");
    stdio?.stderr(Readable.from(lines.map((line) => `${line}\n`)), channel);
    return new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface Recorder {
  host: Host;
  clients: FakeClient[];
  statuses: Status[];
  scopes: Scope[];
  /** The workspace folders: paths; each sees the settings in `values`. */
  workspace: string[];
  trusted: boolean;
  errors: { message: string; actions: string[] }[];
  /** Answers to the next error messages (an action's title). */
  answers: (string | undefined)[];
  installGuides: number;
  settingsOpened: number;
  found: string[];
  output: vscode.LogOutputChannel;
  /** The settings the host reports. */
  values: Record<string, unknown>;
  /** Whether the program is found: by default it is, at /usr/bin/<name>. */
  exists: (program: string) => boolean;
  behaviour: Behaviour;
}

/** The notes folder of the default workspace: it has an `lsp-memory.toml`. */
export function notes(): string {
  return folder("notes", { "lsp-memory.toml": "", "a.md": "# A\n" });
}

export function recorder(): Recorder {
  const output = vscode.window.createOutputChannel("lsp-memory", { log: true });
  const r: Recorder = {
    clients: [],
    statuses: [],
    scopes: [],
    workspace: [notes()],
    trusted: true,
    errors: [],
    answers: [],
    installGuides: 0,
    settingsOpened: 0,
    found: [],
    output,
    values: {
      serverPath: "",
      serverCommand: DEFAULT_COMMAND,
      folders: [],
      plainText: false,
      untitled: false,
      documentSelector: null,
    },
    exists: () => true,
    behaviour: "run",
    host: undefined as unknown as Host,
  };
  const settings: Settings = { get: (key: string) => r.values[key] };
  r.host = {
    settings: () => settings,
    places: () => ({ workspaceFolder: r.workspace[0], home: "/home/priya" }),
    folders: () => r.workspace.map((where) => ({ path: where, name: path.basename(where), settings })),
    trusted: () => r.trusted,
    scope: (scope) => r.scopes.push(scope),
    output,
    status: (status) => r.statuses.push(status),
    showError: (message, ...actions) => {
      r.errors.push({ message, actions });
      const answer = r.answers.shift();
      return Promise.resolve(answer);
    },
    openInstallGuide: () => {
      r.installGuides++;
    },
    openSettings: () => {
      r.settingsOpened++;
    },
    findProgram: (program) => {
      r.found.push(program);
      const found = program.includes("/") ? program : `/usr/bin/${program}`;
      return Promise.resolve(r.exists(program) ? found : undefined);
    },
    createClient: (server, options, folders) => {
      const client = new FakeClient(server, options, r.behaviour, folders);
      r.clients.push(client);
      return client as unknown as LanguageClient;
    },
  };
  return r;
}

/** Lets pending promise callbacks (a chosen action and what it starts) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
}
