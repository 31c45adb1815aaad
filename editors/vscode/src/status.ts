/**
 * The language status item (in the `{ }` of the status bar, on served documents only):
 * starting → indexing (the server's `$/progress`, titled "lsp-memory: indexing") → ready with
 * the memory's counts (the server's `lspMemory.status`), or stopped with the reason and a
 * click to restart. The counts are asked for when indexing ends and after a write, never
 * more often than every few seconds; a server without `lspMemory.status` keeps showing
 * what the progress said.
 */

import * as vscode from "vscode";
import { INDEXING_TITLE, SERVER_COMMANDS, isMemoryStatus, type MemoryStatus } from "./protocol";

export type Status =
  | { kind: "off" }
  | { kind: "starting" }
  | { kind: "indexing"; percentage?: number; message?: string }
  | { kind: "ready"; detail?: string }
  | { kind: "stopped"; reason: string };

export const RESTART_COMMAND = "lspMemory.restartServer";
export const OUTPUT_COMMAND = "lspMemory.showOutput";

/** How the item looks. */
export interface StatusView {
  text: string;
  detail: string;
  busy: boolean;
  error: boolean;
  command: { title: string; command: string };
}

const SHOW_OUTPUT = { title: "Show output", command: OUTPUT_COMMAND };

/** How a status (and the counts, when known) shows; `locale` formats the numbers. */
export function statusView(status: Status, counts: MemoryStatus | undefined, locale = "en"): StatusView {
  const number = new Intl.NumberFormat(locale);
  switch (status.kind) {
    case "off":
      return {
        text: "lsp-memory: off",
        detail: "no served folder",
        busy: false,
        error: false,
        command: SHOW_OUTPUT,
      };
    case "starting":
      return {
        text: "lsp-memory: starting",
        detail: "starting the language server",
        busy: true,
        error: false,
        command: SHOW_OUTPUT,
      };
    case "indexing": {
      const percent = status.percentage === undefined ? "" : ` ${Math.round(status.percentage)}%`;
      return {
        text: `lsp-memory: indexing${percent}`,
        detail: status.message ? `${status.message}; it answers meanwhile` : "it answers meanwhile",
        busy: true,
        error: false,
        command: SHOW_OUTPUT,
      };
    }
    case "ready": {
      if (counts === undefined) {
        return {
          text: "lsp-memory: ready",
          detail: status.detail ?? "",
          busy: false,
          error: false,
          command: SHOW_OUTPUT,
        };
      }
      const claims = counts.claims.total ?? 0;
      const parts = [
        `${number.format(counts.notes)} ${plural(counts.notes, "note")}`,
        `${number.format(counts.index.embedded)} embedded, ${number.format(counts.index.pending)} pending`,
      ];
      if (counts.review_items > 0) {
        parts.push(`${number.format(counts.review_items)} to review`);
      }
      return {
        text: `lsp-memory: ${number.format(claims)} ${plural(claims, "claim")}`,
        detail: parts.join(" · "),
        busy: false,
        error: false,
        command: SHOW_OUTPUT,
      };
    }
    case "stopped":
      return {
        text: "lsp-memory: stopped",
        detail: status.reason,
        busy: false,
        error: true,
        command: { title: "Restart", command: RESTART_COMMAND },
      };
  }
}

function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`;
}

/** One `$/progress` value, as vscode-languageclient hands it to its middleware. */
export interface ProgressValue {
  kind: "begin" | "report" | "end";
  title?: string;
  message?: string;
  percentage?: number;
}

/**
 * Follows the server's indexing progress among all its work-done progress: a token is
 * followed from a `begin` titled "lsp-memory: indexing" to its `end`.
 */
export class IndexingProgress {
  private readonly tokens = new Set<string | number>();

  constructor(private readonly show: (status: Status) => void) {}

  handle(token: string | number, value: ProgressValue): void {
    if (value.kind === "begin") {
      if (value.title !== INDEXING_TITLE) return;
      this.tokens.add(token);
      this.show({ kind: "indexing", percentage: value.percentage, message: value.message });
    } else if (this.tokens.has(token)) {
      if (value.kind === "report") {
        this.show({ kind: "indexing", percentage: value.percentage, message: value.message });
      } else {
        this.tokens.delete(token);
        this.show({ kind: "ready", detail: value.message });
      }
    }
  }

  /** Forget what was in flight (the server stopped). */
  clear(): void {
    this.tokens.clear();
  }
}

/** The shortest time between two `lspMemory.status` requests. */
export const REFRESH_INTERVAL_MS = 5000;

/** What asking for the counts gave: the counts, or that this server cannot tell them. */
export type CountsAnswer = MemoryStatus | "unsupported";

/**
 * Asks for the memory's counts when told to, at most once every `intervalMs` (a request
 * within it is done when it ends; several are one). A server that does not know the
 * command is not asked again until `reset()` (a new server); any other failure keeps the
 * counts known before.
 */
export class CountsRefresher implements vscode.Disposable {
  private last = -Infinity;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private again = false;
  private unsupported = false;
  private generation = 0;

  constructor(
    private readonly fetch: () => Promise<CountsAnswer>,
    private readonly show: (counts: MemoryStatus) => void,
    private readonly log: (message: string) => void,
    private readonly intervalMs = REFRESH_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Asks for the counts now, or as soon as the interval allows; `delayMs` waits first
   * (for work the server does after it answered, such as a reindex). */
  request(delayMs = 0): void {
    if (this.unsupported) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const at = Math.max(this.now() + delayMs, this.last + this.intervalMs);
    const wait = at - this.now();
    if (this.timer !== undefined) return;
    if (wait <= 0) {
      void this.run();
    } else {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.run();
      }, wait);
    }
  }

  /** Asks for the counts if the last ask is older than `maxAgeMs` (the store may have
   * changed outside the editor: the command line, another window). */
  requestIfOlder(maxAgeMs: number): void {
    if (this.now() - this.last >= maxAgeMs) this.request();
  }

  /** A new server: forget what the last one could not do, and anything pending. */
  reset(): void {
    this.generation++;
    this.unsupported = false;
    this.again = false;
    this.running = false;
    this.last = -Infinity;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  dispose(): void {
    this.reset();
  }

  private async run(): Promise<void> {
    const generation = this.generation;
    this.running = true;
    this.last = this.now();
    try {
      const answer = await this.fetch();
      if (generation !== this.generation) return;
      if (answer === "unsupported") {
        this.unsupported = true;
        this.log("the server has no lspMemory.status command: the status shows no counts");
      } else {
        this.show(answer);
      }
    } catch (error) {
      if (generation !== this.generation) return;
      this.log(`lspMemory.status failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      if (generation === this.generation) {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.request();
        }
      }
    }
  }
}

/** Whether an error answer to `workspace/executeCommand` says the command does not exist
 * (pygls answers "Command name '…' is not defined"; others "not found", -32601). */
export function isUnknownCommand(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  return code === -32601 || /\b(not defined|not found|unknown command|no such command)\b/i.test(message);
}

/** Reads an answer to `lspMemory.status`. */
export function countsOf(answer: unknown): MemoryStatus {
  if (!isMemoryStatus(answer)) throw new Error("the answer to lspMemory.status is not a status");
  return answer;
}

/** The language status item itself: shown on the documents the server serves. */
export class LanguageStatus implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  status: Status = { kind: "off" };
  counts: MemoryStatus | undefined;

  constructor(private readonly locale: string = vscode.env.language) {
    this.item = vscode.languages.createLanguageStatusItem("lspMemory.status", []);
    this.item.name = "lsp-memory";
    this.render();
  }

  /** The documents it shows on. */
  set selector(selector: vscode.DocumentSelector) {
    this.item.selector = selector;
  }

  show(status: Status): void {
    // Counts belong to one server: a new one (or none) starts without them.
    if (status.kind === "starting" || status.kind === "stopped" || status.kind === "off") {
      this.counts = undefined;
    }
    this.status = status;
    this.render();
  }

  showCounts(counts: MemoryStatus): void {
    this.counts = counts;
    this.render();
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const view = statusView(this.status, this.counts, this.locale);
    this.item.text = view.text;
    this.item.detail = view.detail;
    this.item.busy = view.busy;
    this.item.severity = view.error
      ? vscode.LanguageStatusSeverity.Error
      : vscode.LanguageStatusSeverity.Information;
    this.item.command = view.command;
  }
}

/** What asking for the counts needs of the server manager. */
export interface CountsServer {
  announces(command: string): boolean | undefined;
  execute(command: string, args: unknown[]): Promise<unknown>;
}

/** Asks the server for its counts: "unsupported" when it did not announce `lspMemory.status`
 * or answers that it does not know it (an older server). */
export async function askCounts(server: CountsServer): Promise<CountsAnswer> {
  if (server.announces(SERVER_COMMANDS.status) === false) return "unsupported";
  try {
    return countsOf(await server.execute(SERVER_COMMANDS.status, []));
  } catch (error) {
    if (isUnknownCommand(error)) return "unsupported";
    throw error;
  }
}
