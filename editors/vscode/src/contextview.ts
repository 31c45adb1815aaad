/**
 * Where Build context shows a context block: a read-only document of its own scheme, one per
 * source document (building it again replaces it in place), named after the source
 * (`prompt.md` → `prompt (context).md`).
 *
 * Not an untitled document: that one was dirty (closing it asked to save a block nobody
 * meant to keep), a new tab piled up at every build, and with `lspMemory.untitled` on the
 * block itself was served (a code lens and inlay hints inside it). The document selector only
 * ever names `file` and `untitled` documents, so this scheme is never served.
 */

import * as path from "node:path";
import * as vscode from "vscode";

export const CONTEXT_SCHEME = "lsp-memory-context";

/** The document that shows the block of `source` (a document URI as the server knows it). */
export function contextUri(source: string | undefined): vscode.Uri {
  const name = source === undefined ? "" : sourceName(source);
  const stem = name === "" ? "context" : `${name.replace(/\.(md|markdown|txt)$/i, "")} (context)`;
  // The query keeps apart the blocks of documents with the same name in different folders.
  return vscode.Uri.from({ scheme: CONTEXT_SCHEME, path: `/${stem}.md`, query: source ?? "" });
}

function sourceName(source: string): string {
  try {
    return path.posix.basename(decodeURIComponent(vscode.Uri.parse(source).path));
  } catch {
    return "";
  }
}

/** The content of the context documents, by URI. */
export class ContextDocuments implements vscode.TextDocumentContentProvider {
  private readonly blocks = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.blocks.get(uri.toString()) ?? "";
  }

  /** Keeps `markdown` as the block of `source`; resolves to the document showing it. */
  async open(source: string | undefined, markdown: string): Promise<vscode.TextDocument> {
    const uri = contextUri(source);
    this.blocks.set(uri.toString(), markdown);
    // An open one shows the new block (no document open: nothing listens).
    this.changed.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    return document.languageId === "markdown"
      ? document
      : vscode.languages.setTextDocumentLanguage(document, "markdown");
  }

  /** Registers the scheme. The blocks are kept while the window lives (one per source
   * document): VS Code may ask for a closed one again (reopening a closed editor), and
   * "closed" also fires when a document's language is set. */
  register(): vscode.Disposable[] {
    return [
      vscode.workspace.registerTextDocumentContentProvider(CONTEXT_SCHEME, this),
      new vscode.Disposable(() => this.dispose()),
    ];
  }

  dispose(): void {
    this.blocks.clear();
    this.changed.dispose();
  }
}
