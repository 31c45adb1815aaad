/**
 * What the extension asks of the server: the server's `workspace/executeCommand` commands
 * (lsp_memory/lsp/features/commands.py) and the shapes of their results, as far as the
 * extension reads them.
 */

export const SERVER_COMMANDS = {
  search: "lspMemory.search",
  addClaim: "lspMemory.addClaim",
  rememberSelection: "lspMemory.rememberSelection",
  reindex: "lspMemory.reindex",
  buildContext: "lspMemory.buildContext",
  review: "lspMemory.review",
  status: "lspMemory.status",
  createNote: "lspMemory.createNote",
  unlinkedMentions: "lspMemory.unlinkedMentions",
  showReferences: "lspMemory.showReferences",
} as const;

/** `lspMemory.unlinkedMentions` → one entry a mention of the note in another note: where it
 * is (a Location: `uri`, `range`), the note it is in, its text and the line around it. */
export interface UnlinkedMention {
  uri: string;
  range: LspRange;
  note: string;
  title: string;
  text: string;
  snippet: string;
}

/** The server's commands that write to the memory: the counts change after them. */
export const WRITE_COMMANDS: readonly string[] = [
  SERVER_COMMANDS.addClaim,
  SERVER_COMMANDS.rememberSelection,
  SERVER_COMMANDS.review,
  SERVER_COMMANDS.createNote,
];

/** `lspMemory.status` → what the memory holds and where, as `lsp-memory status --json`
 * prints it. */
export interface MemoryStatus {
  user: string;
  /** `total`, and a count per claim status (`active`, `superseded`…). */
  claims: Record<string, number>;
  contexts: number;
  entities: number;
  notes: number;
  episodes: number;
  sessions: number;
  review_items: number;
  index: { embedded: number; pending: number };
  paths: { store: string; index: string; vaults: string[] };
}

/** Whether a server answer looks like a status (the fields the extension shows). */
export function isMemoryStatus(value: unknown): value is MemoryStatus {
  if (typeof value !== "object" || value === null) return false;
  const status = value as Record<string, unknown>;
  const claims = status.claims as Record<string, unknown> | null | undefined;
  const index = status.index as Record<string, unknown> | null | undefined;
  return (
    typeof claims === "object" &&
    claims !== null &&
    typeof claims.total === "number" &&
    typeof status.notes === "number" &&
    typeof index === "object" &&
    index !== null &&
    typeof index.embedded === "number" &&
    typeof index.pending === "number"
  );
}

/** `lspMemory.review` without arguments → a list of these: consolidation's open items. */
export interface ReviewItem {
  id: number;
  kind: string; // contradiction, merge
  proposal: string; // MERGE, KEEP_BOTH, CONTRADICTION
  reason: string;
  stale: boolean;
  claims: { claim: string; statement: string; status: string; confidence: number }[];
}

/** `lspMemory.review` with `[decision, id]` → what the decision did. */
export interface ReviewOutcome {
  item: number;
  run_id: number | null;
  message: string;
}

/** The title of the server's work-done progress while it indexes. */
export const INDEXING_TITLE = "lsp-memory: indexing";

/** `lspMemory.search` → a list of these, best first. */
export interface SearchHit {
  id: string;
  kind: string;
  key: string;
  title: string;
  snippet: string;
  status: string;
  score: number;
  /** The text to insert: `@friendly_id` for a record, `[[Title]]` for a note. */
  reference: string;
}

/** `lspMemory.rememberSelection` and `lspMemory.addClaim` → the new claim and more. */
export interface RememberResult {
  statement?: string;
  reference: string;
  replaced?: boolean;
}

/** An item `build-context` left out. */
export interface DroppedItem {
  section?: string;
  kind?: string;
  id?: string;
  tokens?: number;
  reason?: string;
}

/** `lspMemory.buildContext` → the context block (docs/reference.md, The context block, `build-context --format json`). */
export interface ContextBlock {
  budget: number;
  tokens: number;
  over_budget: boolean;
  markdown: string;
  warnings: string[];
  dropped: DroppedItem[];
}

/** An LSP range, zero-based, in the client's position units (UTF-16 for VS Code). */
export interface LspRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** Whether a server answer looks like a context block (the code lens passes it along). */
export function isContextBlock(value: unknown): value is ContextBlock {
  if (typeof value !== "object" || value === null) return false;
  const block = value as Record<string, unknown>;
  return typeof block.markdown === "string" && typeof block.tokens === "number";
}

/** A location as LSP writes it: what `lspMemory.showReferences` answers a list of. */
export interface LspLocation {
  uri: string;
  range: LspRange;
}

/** Whether a server answer is a list of locations. */
export function isLocations(value: unknown): value is LspLocation[] {
  return (
    Array.isArray(value) &&
    value.every((item) => {
      const place = item as Record<string, unknown> | null;
      const range = place?.range as Record<string, unknown> | null | undefined;
      return (
        typeof place?.uri === "string" && typeof range?.start === "object" && typeof range.end === "object"
      );
    })
  );
}
