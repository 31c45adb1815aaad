/**
 * The status bar item: starting → indexing (the server's `$/progress`, titled
 * "lsp-memory: indexing") → ready, or stopped with the reason and a click to restart.
 */

import * as vscode from "vscode";
import { INDEXING_TITLE } from "./protocol";

export type Status =
  | { kind: "starting" }
  | { kind: "indexing"; percentage?: number; message?: string }
  | { kind: "ready"; detail?: string }
  | { kind: "stopped"; reason: string };

export interface StatusView {
  text: string;
  tooltip: string;
  command: string;
  error: boolean;
}

export const RESTART_COMMAND = "lsp-memory.restartServer";
export const OUTPUT_COMMAND = "lsp-memory.showOutput";

/** How a status shows in the status bar. */
export function statusView(status: Status): StatusView {
  switch (status.kind) {
    case "starting":
      return {
        text: "$(sync~spin) lsp-memory",
        tooltip: "lsp-memory: starting the language server",
        command: OUTPUT_COMMAND,
        error: false,
      };
    case "indexing": {
      const percent = status.percentage === undefined ? "" : ` ${Math.round(status.percentage)}%`;
      const message = status.message ? ` (${status.message})` : "";
      return {
        text: `$(sync~spin) lsp-memory${percent}`,
        tooltip: `lsp-memory: indexing the store and the vaults${message}; it answers meanwhile`,
        command: OUTPUT_COMMAND,
        error: false,
      };
    }
    case "ready":
      return {
        text: "$(database) lsp-memory",
        tooltip: `lsp-memory: ready${status.detail ? ` (${status.detail})` : ""}. Click for the server output.`,
        command: OUTPUT_COMMAND,
        error: false,
      };
    case "stopped":
      return {
        text: "$(error) lsp-memory",
        tooltip: `lsp-memory: stopped. ${status.reason} Click to restart.`,
        command: RESTART_COMMAND,
        error: true,
      };
  }
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

/** The status bar item itself. */
export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  status: Status = { kind: "starting" };

  constructor() {
    this.item = vscode.window.createStatusBarItem("lsp-memory.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "lsp-memory";
    this.show(this.status);
    this.item.show();
  }

  show(status: Status): void {
    this.status = status;
    const view = statusView(status);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.command;
    this.item.backgroundColor = view.error
      ? new vscode.ThemeColor("statusBarItem.errorBackground")
      : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
