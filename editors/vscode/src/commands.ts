/**
 * The extension's commands — Build context, Search memory, Remember selection, Review
 * memory, Reindex, Show unlinked mentions — each a thin layer over one server command, and the pure pieces they are
 * made of (the message for a context block, quick pick items for search hits, the text to
 * insert, the arguments of `lspMemory.rememberSelection`), which the tests check without an
 * editor.
 *
 * Their ids differ from the server's commands (`lspMemory.buildContext`…), which
 * vscode-languageclient registers under the server's own names: one id registered twice
 * fails.
 */

import * as vscode from "vscode";
import {
  SERVER_COMMANDS,
  WRITE_COMMANDS,
  isContextBlock,
  isLocations,
  type ContextBlock,
  type LspLocation,
  type LspRange,
  type RememberResult,
  type ReviewItem,
  type ReviewOutcome,
  type SearchHit,
  type UnlinkedMention,
} from "./protocol";
import { ContextDocuments } from "./contextview";
import { NotRunning, describe, type ServerManager } from "./server";

/** The extension's commands (package.json contributes them). */
export const COMMANDS = {
  showContext: "lspMemory.showContext",
  searchMemory: "lspMemory.searchMemory",
  remember: "lspMemory.remember",
  reviewMemory: "lspMemory.reviewMemory",
  reindexMemory: "lspMemory.reindexMemory",
  restartServer: "lspMemory.restartServer",
  showOutput: "lspMemory.showOutput",
  unlinkedMentions: "lspMemory.showUnlinkedMentions",
} as const;

/** How long after asking for a reindex the counts are asked for (the server rescans in the
 * background after it answered). */
export const REINDEX_SETTLE_MS = 5000;

export const OPEN_SETTINGS = "Open Settings";

export const COPY = "Copy to clipboard";

/** Why a command does nothing on the active document. */
export const NOT_SERVED =
  "lsp-memory: this document is not served. lsp-memory serves Markdown under a workspace folder with an lsp-memory.toml at its root and under the folders of the setting lspMemory.folders; plain text with lspMemory.plainText, untitled documents with lspMemory.untitled.";
export const COPY_REFERENCE = "Copy reference";

// -- pure pieces ------------------------------------------------------------------------------

/** The message shown with a context block: its size against the budget, what was left out
 * and the warnings; `warning` says whether it deserves a warning rather than information. */
export function contextSummary(block: ContextBlock): { message: string; warning: boolean } {
  let message = `lsp-memory: context block of ${block.tokens} / ${block.budget} tokens`;
  if (block.over_budget) {
    message += " (over budget: the referenced claims alone exceed it)";
  }
  const dropped = block.dropped.length;
  if (dropped > 0) {
    message += `; ${dropped} ${dropped === 1 ? "item" : "items"} left out for the budget`;
  }
  const warnings = block.warnings;
  if (warnings.length > 0) {
    const shown = warnings.slice(0, 2).join("; ");
    const more = warnings.length > 2 ? `; and ${warnings.length - 2} more` : "";
    message += `. ${warnings.length === 1 ? "Warning" : `${warnings.length} warnings`}: ${shown}${more}`;
  }
  return { message: `${message}.`.replace(/\.\.$/, "."), warning: block.over_budget || warnings.length > 0 };
}

export interface SearchItem extends vscode.QuickPickItem {
  hit: SearchHit;
}

const KIND_ICONS: Record<string, string> = {
  claim: "$(comment)",
  context: "$(folder)",
  entity: "$(person)",
  note: "$(note)",
};

/** Quick pick items for search hits, in the server's order. `alwaysShow`: the hits match
 * by meaning too, so the quick pick must not filter them by the typed words. */
export function searchItems(hits: readonly SearchHit[]): SearchItem[] {
  return hits.map((hit) => {
    const status = hit.status && hit.status !== "active" ? ` · ${hit.status}` : "";
    const snippet = oneLine(hit.snippet);
    return {
      label: `${KIND_ICONS[hit.kind] ?? "$(symbol-misc)"} ${unsorted(hit.title || hit.reference)}`,
      description: `${hit.reference}${status}`,
      detail: snippet || undefined,
      alwaysShow: true,
      hit,
    };
  });
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** A label the quick pick's filter never matches, so that it keeps the server's ranking.
 * VS Code sorts the items whose label matches the typed words first, and extensions cannot
 * turn that off (`sortByLabel` is a proposed API, microsoft/vscode#73904): typing
 * "postgres" put a claim about PostgreSQL above the better-ranked hits. A zero-width space
 * between the characters (between graphemes: an accent stays on its letter) breaks the match
 * and shows nothing. */
export function unsorted(label: string): string {
  return Array.from(graphemes.segment(label), (part) => part.segment).join("\u200b");
}

/** A snippet on one line: a quick pick shows each line break as "⏎". */
export function oneLine(text: string): string {
  return text
    .split(/\s*[\r\n]+\s*/)
    .filter((part) => part !== "")
    .join(" · ")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * What to insert for a reference at a cursor with `before` (the line's text up to the
 * cursor): the reference, taking over an `@` or `[[` already typed for it.
 * `replace` is how many characters before the cursor it replaces.
 */
export function insertion(before: string, reference: string): { text: string; replace: number } {
  if (reference.startsWith("[[") && before.endsWith("[[")) return { text: reference, replace: 2 };
  if (reference.startsWith("@") && before.endsWith("@")) return { text: reference, replace: 1 };
  return { text: reference, replace: 0 };
}

/** An editor range (a selection) in LSP's shape: both count UTF-16 code units in VS Code,
 * and the client asks the server for UTF-16 positions. */
export function lspRange(range: LspRange): LspRange {
  return {
    start: { line: range.start.line, character: range.start.character },
    end: { line: range.end.line, character: range.end.character },
  };
}

/** The arguments of `lspMemory.rememberSelection`: the document's URI as the server knows
 * it, the selection, and whether to replace it with the new claim's reference. */
export function rememberArguments(
  uri: string,
  selection: LspRange,
  replace: boolean,
): [string, LspRange, boolean] {
  return [uri, lspRange(selection), replace];
}

export interface RememberChoice extends vscode.QuickPickItem {
  replace: boolean;
}

/** The same two choices as the server's "Remember selection" code actions. */
export const REMEMBER_CHOICES: readonly RememberChoice[] = [
  { label: "Remember selection as a claim", replace: false },
  { label: "Remember selection as a claim and replace it with its reference", replace: true },
];

/** The message after remembering. */
export function rememberedMessage(result: RememberResult, replace: boolean): string {
  let message = `lsp-memory: remembered as ${result.reference}`;
  if (replace && result.replaced === true) message += "; the selection now references it";
  if (replace && result.replaced === false) message += "; the selection was not replaced";
  return `${message}.`;
}

export interface ReviewPick extends vscode.QuickPickItem {
  item: ReviewItem;
}

/** Quick pick items for consolidation's review items: what they are, their claims, why. */
export function reviewItems(items: readonly ReviewItem[]): ReviewPick[] {
  return items.map((item) => ({
    label: `${item.id}. ${item.kind}: proposed ${item.proposal}${item.stale ? " (out of date)" : ""}`,
    description: item.claims.map((claim) => claim.claim).join(", "),
    detail: item.reason,
    item,
  }));
}

export interface DecisionChoice extends vscode.QuickPickItem {
  decision: "accept" | "keep-both" | "reject";
}

/** The decisions on a review item, as `lsp-memory review` takes them. */
export function decisionChoices(item: ReviewItem): DecisionChoice[] {
  return [
    { label: `Accept: ${item.proposal}`, decision: "accept" },
    { label: "Keep both claims live", decision: "keep-both" },
    { label: "Reject: change nothing", decision: "reject" },
  ];
}

/** A quick pick item of an unlinked mention: the note it is in and the line, the line's text
 * as the detail. */
export interface MentionItem extends vscode.QuickPickItem {
  mention: UnlinkedMention;
}

export function mentionItems(mentions: readonly UnlinkedMention[]): MentionItem[] {
  return mentions.map((mention) => ({
    label: mention.title,
    description: `${mention.note}:${mention.range.start.line + 1}`,
    detail: oneLine(mention.snippet),
    mention,
  }));
}

/** A position or range of LSP as VS Code's: both count UTF-16 code units here. */
function vscodeRange(range: LspRange): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

/** What a reference-count code lens's `lspMemory.showReferences` (a note's URI, the lens's
 * position) answered, in VS Code's references view: `editor.action.showReferences` takes
 * VS Code's own values, which a server cannot send. */
export async function showReferences(args: unknown[], found: readonly LspLocation[]): Promise<void> {
  const where = args[1] as { line?: unknown } | undefined;
  if (typeof args[0] !== "string" || typeof where?.line !== "number") return;
  const locations = found.map(
    (place) => new vscode.Location(vscode.Uri.parse(place.uri), vscodeRange(place.range)),
  );
  await vscode.commands.executeCommand(
    "editor.action.showReferences",
    vscode.Uri.parse(args[0]),
    new vscode.Position(where.line, 0),
    locations,
  );
}

// -- the commands -----------------------------------------------------------------------------

export class Commands {
  /** `written`: told after a write, to refresh the counts (`delayMs`: for work the server
   * does after it answered). */
  constructor(
    private readonly server: ServerManager,
    private readonly written: (delayMs?: number) => void = () => undefined,
    private readonly contexts: ContextDocuments = new ContextDocuments(),
  ) {}

  register(): vscode.Disposable[] {
    const add = (id: string, run: () => Promise<void>) =>
      vscode.commands.registerCommand(id, () => run().catch((error: unknown) => this.report(error)));
    return [
      ...this.contexts.register(),
      add(COMMANDS.showContext, () => this.buildContext()),
      add(COMMANDS.searchMemory, () => this.search()),
      add(COMMANDS.remember, () => this.rememberSelection()),
      add(COMMANDS.reviewMemory, () => this.review()),
      add(COMMANDS.reindexMemory, () => this.reindex()),
      add(COMMANDS.unlinkedMentions, () => this.unlinkedMentions()),
      add(COMMANDS.restartServer, () => this.server.restart()),
      add(COMMANDS.showOutput, () => {
        this.server.output.show(true);
        return Promise.resolve();
      }),
    ];
  }

  /** Builds the active document's context block, opens it beside the editor and offers to
   * copy it. */
  async buildContext(): Promise<void> {
    const editor = this.servedEditor("build its context block");
    if (editor === undefined) return;
    const uri = this.server.uri(editor.document.uri);
    const result = await this.server.execute<unknown>(SERVER_COMMANDS.buildContext, [uri]);
    if (!isContextBlock(result)) {
      throw new Error("the server's answer to lspMemory.buildContext is not a context block");
    }
    await showContextBlock(result, this.contexts, uri);
  }

  /** A quick pick over the hybrid search, as the user types; the chosen reference is
   * inserted at the cursor of the editor that was active. */
  async search(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const hit = await pickHit((query) =>
      this.server.execute<SearchHit[]>(SERVER_COMMANDS.search, [query, "all", 20]),
    );
    if (hit === undefined) return;
    if (editor === undefined || editor.document.isClosed) {
      await vscode.env.clipboard.writeText(hit.reference);
      void vscode.window.showInformationMessage(
        `lsp-memory: ${hit.reference} copied (no editor to insert it in).`,
      );
      return;
    }
    await insertReference(editor, hit.reference);
  }

  /** Stores the selection as a claim, replacing it with the claim's reference if the user
   * chooses so. */
  async rememberSelection(): Promise<void> {
    const editor = this.servedEditor("remember a selection");
    if (editor === undefined) return;
    const selection = editor.selection;
    if (selection.isEmpty || editor.document.getText(selection).trim() === "") {
      void vscode.window.showWarningMessage("lsp-memory: select the text to remember first.");
      return;
    }
    const choice = await vscode.window.showQuickPick(REMEMBER_CHOICES, {
      title: "lsp-memory: Remember selection",
    });
    if (choice === undefined) return;
    const args = rememberArguments(this.server.uri(editor.document.uri), selection, choice.replace);
    const result = await this.server.execute<RememberResult>(SERVER_COMMANDS.rememberSelection, args);
    this.written();
    await showRemembered(result, choice.replace);
  }

  /** Consolidation's open review items in a quick pick; the chosen one is decided on the
   * server and what happened shown. */
  async review(): Promise<void> {
    const items = await this.server.execute<ReviewItem[]>(SERVER_COMMANDS.review, []);
    if (!Array.isArray(items) || items.length === 0) {
      void vscode.window.showInformationMessage("lsp-memory: nothing to review.");
      return;
    }
    const picked = await vscode.window.showQuickPick(reviewItems(items), {
      title: "lsp-memory: Review memory",
    });
    if (picked === undefined) return;
    const choice = await vscode.window.showQuickPick(decisionChoices(picked.item), {
      title: `lsp-memory: review ${picked.item.id}`,
    });
    if (choice === undefined) return;
    const outcome = await this.server.execute<ReviewOutcome>(SERVER_COMMANDS.review, [
      choice.decision,
      picked.item.id,
    ]);
    this.written();
    void vscode.window.showInformationMessage(`lsp-memory: ${outcome.message}`);
  }

  /** The notes that mention the active note without linking it, in a quick pick; the chosen
   * mention is opened, selected. */
  async unlinkedMentions(): Promise<void> {
    const editor = this.servedEditor("list its unlinked mentions");
    if (editor === undefined) return;
    const uri = this.server.uri(editor.document.uri);
    const found = await this.server.execute<UnlinkedMention[]>(SERVER_COMMANDS.unlinkedMentions, [uri]);
    if (!Array.isArray(found) || found.length === 0) {
      void vscode.window.showInformationMessage("lsp-memory: no unlinked mentions of this note.");
      return;
    }
    const picked = await vscode.window.showQuickPick(mentionItems(found), {
      title: `lsp-memory: ${found.length} unlinked mention(s) of this note`,
      matchOnDetail: true,
    });
    if (picked === undefined) return;
    const { start, end } = picked.mention.range;
    await vscode.window.showTextDocument(vscode.Uri.parse(picked.mention.uri), {
      selection: new vscode.Range(start.line, start.character, end.line, end.character),
    });
  }

  async reindex(): Promise<void> {
    await this.server.execute(SERVER_COMMANDS.reindex, []);
    this.written(REINDEX_SETTLE_MS);
    vscode.window.setStatusBarMessage("lsp-memory: reindexing the store and the vaults…", 4000);
  }

  /**
   * Middleware for the server's commands run from the editor (the code lens runs
   * `lspMemory.buildContext`, the code actions `lspMemory.rememberSelection` and
   * `lspMemory.createNote`): each goes to the server as it is; its result is shown like the
   * extension's own commands show it, a write refreshes the counts, and a failure is one
   * message.
   */
  async runServerCommand(
    command: string,
    args: unknown[],
    next: (command: string, args: unknown[]) => unknown,
  ): Promise<unknown> {
    try {
      const result: unknown = await next(command, args);
      await this.afterServerCommand(command, args, result);
      return result;
    } catch (error) {
      this.report(error);
      return undefined;
    }
  }

  private async afterServerCommand(command: string, args: unknown[], result: unknown): Promise<void> {
    // `lspMemory.review` without arguments only lists the items.
    if (WRITE_COMMANDS.includes(command) && (command !== SERVER_COMMANDS.review || args.length > 0)) {
      this.written();
    }
    if (command === SERVER_COMMANDS.buildContext && isContextBlock(result)) {
      const source = typeof args[0] === "string" ? args[0] : undefined;
      await showContextBlock(result, this.contexts, source);
    } else if (command === SERVER_COMMANDS.rememberSelection && isRemembered(result)) {
      await showRemembered(result, args[2] === true);
    } else if (command === SERVER_COMMANDS.showReferences && isLocations(result)) {
      await showReferences(args, result);
    }
  }

  /** Says what went wrong, in one message. */
  report(error: unknown): void {
    if (error instanceof NotRunning) {
      void vscode.window
        .showErrorMessage(`lsp-memory: ${error.message}.`, "Restart")
        .then((action) => (action === "Restart" ? this.server.restart() : undefined));
      return;
    }
    void vscode.window.showErrorMessage(`lsp-memory: ${describe(error)}`);
  }

  private servedEditor(what: string): vscode.TextEditor | undefined {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showWarningMessage(`lsp-memory: open a document to ${what}.`);
      return undefined;
    }
    if (!this.server.serves(editor.document)) {
      void vscode.window.showWarningMessage(NOT_SERVED, OPEN_SETTINGS).then((action) => {
        if (action === OPEN_SETTINGS) {
          void vscode.commands.executeCommand("workbench.action.openSettings", "lspMemory.folders");
        }
      });
      return undefined;
    }
    return editor;
  }
}

/** Shows a context block's Markdown beside the editor, in the read-only document of its
 * source (`source`: the document's URI), and offers to copy it, with its size, what was left
 * out and its warnings. */
export async function showContextBlock(
  block: ContextBlock,
  contexts: ContextDocuments,
  source?: string,
): Promise<void> {
  const { message, warning } = contextSummary(block);
  if (block.markdown.trim() !== "") {
    const document = await contexts.open(source, block.markdown);
    await vscode.window.showTextDocument(document, {
      viewColumn: vscode.ViewColumn.Beside,
      preview: false,
      preserveFocus: true,
    });
  }
  const show = warning ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const action = block.markdown.trim() !== "" ? await show(message, COPY) : await show(message);
  if (action === COPY) {
    await vscode.env.clipboard.writeText(block.markdown);
    vscode.window.setStatusBarMessage("lsp-memory: context block copied", 3000);
  }
}

async function showRemembered(result: RememberResult, replace: boolean): Promise<void> {
  const message = rememberedMessage(result, replace);
  const action =
    replace && result.replaced === true
      ? await vscode.window.showInformationMessage(message)
      : await vscode.window.showInformationMessage(message, COPY_REFERENCE);
  if (action === COPY_REFERENCE) {
    await vscode.env.clipboard.writeText(result.reference);
  }
}

function isRemembered(value: unknown): value is RememberResult {
  return (
    typeof value === "object" && value !== null && typeof (value as RememberResult).reference === "string"
  );
}

/** Inserts a reference at every cursor of the editor (replacing selected text, and an `@`
 * or `[[` typed just before the cursor). */
export async function insertReference(editor: vscode.TextEditor, reference: string): Promise<boolean> {
  const document = editor.document;
  return editor.edit((builder) => {
    for (const selection of editor.selections) {
      const before = document.lineAt(selection.start.line).text.slice(0, selection.start.character);
      const { text, replace } = insertion(selection.isEmpty ? before : "", reference);
      const start = selection.start.translate(0, -replace);
      builder.replace(new vscode.Range(start, selection.end), text);
    }
  });
}

const TITLE = "lsp-memory: Search memory";

/** How long the quick pick waits after a keystroke before it searches. */
export const SEARCH_DELAY_MS = 150;

/**
 * Shows a quick pick that searches as the user types (debounced; an answer to an older query
 * is dropped) and resolves to the chosen hit, or `undefined` when dismissed.
 */
export function pickHit(search: (query: string) => Promise<SearchHit[]>): Promise<SearchHit | undefined> {
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick<SearchItem>();
    pick.title = TITLE;
    pick.placeholder = "Search claims, contexts, entities and notes, by words or meaning";
    pick.matchOnDescription = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let asked = 0;
    let done = false;
    const finish = (hit: SearchHit | undefined) => {
      if (done) return;
      done = true;
      if (timer !== undefined) clearTimeout(timer);
      resolve(hit);
      pick.dispose();
    };
    const run = async (query: string, number: number) => {
      try {
        const hits = await search(query);
        if (number !== asked || done) return;
        pick.items = searchItems(hits);
        pick.title = hits.length === 0 ? `${TITLE}: nothing found for "${query}"` : TITLE;
      } catch (error) {
        if (number !== asked || done) return;
        pick.items = [];
        pick.title = `${TITLE}: ${describe(error)}`;
      } finally {
        if (number === asked) pick.busy = false;
      }
    };
    pick.onDidChangeValue((value) => {
      if (timer !== undefined) clearTimeout(timer);
      const query = value.trim();
      const number = ++asked;
      if (query === "") {
        pick.items = [];
        pick.busy = false;
        return;
      }
      pick.busy = true;
      timer = setTimeout(() => void run(query, number), SEARCH_DELAY_MS);
    });
    pick.onDidAccept(() => finish(pick.selectedItems[0]?.hit));
    pick.onDidHide(() => finish(undefined));
    pick.show();
  });
}
