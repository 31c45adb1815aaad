/**
 * Where the server serves: the folders the user chose — a workspace folder with an
 * `lsp-memory.toml` at its root, or a folder listed in `lspMemory.folders` — their Markdown
 * (and plain text when `lspMemory.plainText` is on), untitled documents when
 * `lspMemory.untitled` is on; or, when set, whatever `lspMemory.documentSelector` says. With
 * nowhere to serve the server is not started. No `vscode` import: the rules are unit-tested
 * on real folders.
 */

import { statSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { customSelector, expand, type DocumentFilter, type Places, type Settings } from "./settings";

/** The file whose presence at a workspace folder's root asks for the server there. */
export const CONFIG_FILE = "lsp-memory.toml";

/** A workspace folder on disk, with its own view of the settings (a folder may set
 * `lspMemory.folders` in its `.vscode/settings.json`). */
export interface Folder {
  path: string;
  name: string;
  settings: Settings;
}

/** What decides the scope. */
export interface ScopeInput {
  /** The window's settings. */
  settings: Settings;
  /** The workspace folders that are on disk (`file:`), in order. */
  folders: readonly Folder[];
  home: string;
  /** Whether the workspace is trusted: an untrusted one's own `lsp-memory.toml` (which can
   * name programs for the server to run) does not start the server. */
  trusted: boolean;
}

/** A folder the server serves, and why. */
export interface Root {
  path: string;
  name: string;
  reason: "lsp-memory.toml" | "lspMemory.folders";
}

export interface Scope {
  /** The served folders, none inside another. */
  roots: Root[];
  /** The served languages: Markdown, and plain text when opted in. */
  languages: string[];
  /** Whether untitled documents of those languages are served. */
  untitled: boolean;
  /** `lspMemory.documentSelector` when set: it replaces the folders' filters. */
  custom: DocumentFilter[] | undefined;
  /** What was left out and why, for the output. */
  notes: string[];
}

/** The scope the settings, the workspace folders and their `lsp-memory.toml` files give. */
export function scope(input: ScopeInput): Scope {
  const notes: string[] = [];
  const found: Root[] = [];
  for (const folder of input.folders) {
    if (isFile(path.join(folder.path, CONFIG_FILE))) {
      if (input.trusted) {
        found.push({ path: folder.path, name: folder.name, reason: "lsp-memory.toml" });
      } else {
        notes.push(`${folder.path}: its ${CONFIG_FILE} is not used in an untrusted workspace`);
      }
    }
  }
  const listed: { entry: string; places: Places }[] = [];
  for (const folder of input.folders) {
    for (const entry of entries(folder.settings.get("folders"))) {
      listed.push({ entry, places: { workspaceFolder: folder.path, home: input.home } });
    }
  }
  if (input.folders.length === 0) {
    for (const entry of entries(input.settings.get("folders"))) {
      listed.push({ entry, places: { home: input.home } });
    }
  }
  for (const { entry, places } of listed) {
    const given = expand(entry, places);
    const base = places.workspaceFolder;
    if (!path.isAbsolute(given) && base === undefined) {
      notes.push(`lspMemory.folders: "${entry}" is relative and there is no workspace folder; skipped`);
      continue;
    }
    const folder = path.resolve(base ?? "", given);
    if (!isFolder(folder)) {
      notes.push(`lspMemory.folders: ${folder} is not a folder; skipped`);
      continue;
    }
    found.push({ path: folder, name: path.basename(folder), reason: "lspMemory.folders" });
  }
  return {
    roots: outermost(found),
    languages: input.settings.get("plainText") === true ? ["markdown", "plaintext"] : ["markdown"],
    untitled: input.settings.get("untitled") === true,
    custom: customSelector(input.settings),
    notes: [...new Set(notes)],
  };
}

/** Whether there is anything to serve: without it, the server is not started. */
export function active(scope: Scope): boolean {
  return scope.custom !== undefined || scope.roots.length > 0;
}

/**
 * The client's document selector: for each served folder and language a filter of saved
 * documents under the folder (a relative pattern: a folder name with glob characters such
 * as `[` or `{` stays literal), and untitled documents when opted in; or the custom one.
 */
export function selector(scope: Scope): DocumentFilter[] {
  if (scope.custom !== undefined) return scope.custom;
  const filters: DocumentFilter[] = [];
  for (const root of scope.roots) {
    const baseUri = pathToFileURL(root.path).href;
    for (const language of scope.languages) {
      filters.push({ scheme: "file", language, pattern: { baseUri, pattern: "**" } });
    }
  }
  if (scope.untitled) {
    for (const language of scope.languages) filters.push({ scheme: "untitled", language });
  }
  return filters;
}

/** The workspace folders the server is told about (its vaults, and where it looks for
 * `lsp-memory.toml`): the served folders; `undefined` (VS Code's own folders) when the
 * custom selector alone starts it. */
export function serverFolders(scope: Scope): Root[] | undefined {
  return scope.roots.length > 0 ? scope.roots : undefined;
}

/** Equal keys: the same server would be started. */
export function scopeKey(scope: Scope): string {
  return JSON.stringify([
    scope.roots.map((root) => root.path),
    scope.languages,
    scope.untitled,
    scope.custom,
  ]);
}

/** One line for the output: what is served, or why nothing is. */
export function describeScope(scope: Scope): string {
  if (scope.custom !== undefined) {
    return `serving the documents lspMemory.documentSelector chooses: ${JSON.stringify(scope.custom)}`;
  }
  if (scope.roots.length === 0) {
    return `no workspace folder has an ${CONFIG_FILE} at its root and lspMemory.folders lists none: the language server is not started`;
  }
  const where = scope.roots.map((root) => `${root.path} (${root.reason})`).join(", ");
  const what = scope.languages.join(" and ") + (scope.untitled ? " (saved and untitled)" : "");
  return `serving ${what} in ${where}`;
}

function entries(value: unknown): string[] {
  const list = typeof value === "string" ? [value] : Array.isArray(value) ? (value as unknown[]) : [];
  return list
    .filter((entry): entry is string => typeof entry === "string" && entry.trim() !== "")
    .map((e) => e.trim());
}

/** The folders with those inside another (or repeated) left out, in their order. */
function outermost(roots: Root[]): Root[] {
  return roots.filter(
    (root, index) =>
      !roots.some((other, at) => {
        if (at === index) return false;
        const relative = path.relative(other.path, root.path);
        const up = relative === ".." || relative.startsWith(`..${path.sep}`);
        const inside = relative !== "" && !up && !path.isAbsolute(relative);
        return inside || (relative === "" && at < index);
      }),
  );
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function isFolder(folder: string): boolean {
  try {
    return statSync(folder).isDirectory();
  } catch {
    return false;
  }
}
