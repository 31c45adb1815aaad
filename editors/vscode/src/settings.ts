/**
 * The extension's settings, read from a `lspMemory` configuration section: the server's own
 * options (passed as `initializationOptions` and through `workspace/configuration`, camelCase
 * like every VS Code setting), the command that starts the server, and the documents it
 * serves. Pure: no `vscode` import, so every rule here is unit-tested without an editor.
 */

import * as path from "node:path";

/** The settings section, shared with the server (it reads `workspace/configuration` of it). */
export const SECTION = "lspMemory";

/** The server's options, as VS Code settings (the server takes these names and its own
 * snake_case ones: README "Configuration"). */
export const SERVER_KEYS = [
  "store",
  "user",
  "vaults",
  "budget",
  "recentTokens",
  "episodeTokens",
  "factTokens",
  "toolTokens",
  "model",
  "excludes",
  "cache",
  "busyTimeoutMs",
  "maxDocumentBytes",
  "severities",
  "tiers",
  "classifierCommand",
  "classifierTimeoutS",
  "supersede",
  "reviewCommand",
  "reviewTimeoutS",
  "consolidateEvery",
  "decay",
  "extractorCommand",
  "extractorTimeoutS",
  "minSimilarity",
  "embedIdleSeconds",
  "relatedSimilarity",
] as const;

/** Settings renamed to camelCase in 0.2.0, old name → new name. VS Code does not move a
 * user's values, so an old name still counts where the new one is unset. */
export const RENAMED: Readonly<Record<string, (typeof SERVER_KEYS)[number]>> = {
  busy_timeout_ms: "busyTimeoutMs",
  classifier_command: "classifierCommand",
  classifier_timeout_s: "classifierTimeoutS",
  review_command: "reviewCommand",
  review_timeout_s: "reviewTimeoutS",
  consolidate_every: "consolidateEvery",
  extractor_command: "extractorCommand",
  extractor_timeout_s: "extractorTimeoutS",
};

/** Settings that start the server or choose what it serves: only this extension reads them,
 * and a change restarts the server. */
export const CLIENT_KEYS = [
  "serverPath",
  "serverCommand",
  "folders",
  "plainText",
  "untitled",
  "documentSelector",
] as const;

/** Keys of the section that are not the server's: the extension's own and the client
 * library's (`trace.server`). */
const NOT_THE_SERVERS: ReadonlySet<string> = new Set([...CLIENT_KEYS, "trace"]);

export const DEFAULT_COMMAND: readonly string[] = ["lsp-memory", "serve"];

/** What the extension needs of a `WorkspaceConfiguration`. */
export interface Settings {
  get(key: string): unknown;
}

/** Where relative paths and `${…}` variables in the server command point. */
export interface Places {
  /** The first workspace folder's path, if any. */
  workspaceFolder?: string;
  /** The user's home folder. */
  home: string;
}

/** Whether a setting's value counts as set: every server option's default is `null`. */
function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== "";
}

/** A server option's value: its camelCase setting, else its old snake_case name. */
function serverValue(settings: Settings, key: string): unknown {
  const value = settings.get(key);
  if (isSet(value)) return value;
  const old = Object.keys(RENAMED).find((name) => RENAMED[name] === key);
  return old === undefined ? undefined : settings.get(old);
}

/**
 * The server options the user set, for `initializationOptions`: unset ones (`null`,
 * `undefined`, `""`; every default is `null`) are left out, so `lsp-memory.toml` and the
 * server's defaults still apply to them — the same rule the server applies to what
 * `workspace/configuration` returns.
 */
export function initializationOptions(settings: Settings): Record<string, unknown> {
  const options: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const value = serverValue(settings, key);
    if (isSet(value)) {
      options[key] = value;
    }
  }
  return options;
}

/** The old names among the settings the user set, with their new names. */
export function renamedInUse(settings: Settings): { old: string; name: string }[] {
  return Object.entries(RENAMED)
    .filter(([old]) => isSet(settings.get(old)))
    .map(([old, name]) => ({ old: `${SECTION}.${old}`, name: `${SECTION}.${name}` }));
}

/**
 * The `lspMemory` section as the server gets it through `workspace/configuration`: without
 * the extension's own keys, and with a value under an old name moved to its new name when
 * the new one is unset. Keys the extension does not know (a newer server's) pass through.
 */
export function serverSection(section: unknown): unknown {
  if (typeof section !== "object" || section === null || Array.isArray(section)) return section;
  const given = section as Record<string, unknown>;
  const result: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    if (!NOT_THE_SERVERS.has(key) && !(key in RENAMED)) result[key] = value;
  }
  for (const [old, name] of Object.entries(RENAMED)) {
    if (isSet(given[old]) && !isSet(given[name])) result[name] = given[old];
  }
  return result;
}

/** A program and its arguments; `label` says which setting gave it, for messages. */
export interface ServerCommand {
  command: string;
  args: string[];
  label: string;
}

/** A setting that does not make a command: what is wrong, in one line. */
export class SettingError extends Error {}

const PYTHON = /^python[0-9.]*(\.exe)?$/i;

/**
 * The command that starts the server: `lspMemory.serverPath` when set (the `lsp-memory`
 * program → `<path> serve`; a Python interpreter → `<path> -m lsp_memory serve`), else
 * `lspMemory.serverCommand` (a list, or a string split at spaces). Throws `SettingError`
 * for a setting that gives no program.
 */
export function serverCommand(settings: Settings, places: Places): ServerCommand {
  const given = settings.get("serverPath");
  if (typeof given === "string" && given.trim() !== "") {
    const program = resolvePath(expand(given.trim(), places), places);
    const name = program.split(/[\\/]/).at(-1) ?? program;
    const args = PYTHON.test(name) ? ["-m", "lsp_memory", "serve"] : ["serve"];
    return { command: program, args, label: "lspMemory.serverPath" };
  }
  const value = settings.get("serverCommand") ?? DEFAULT_COMMAND;
  let words: string[];
  if (typeof value === "string") {
    words = splitCommandLine(value);
  } else if (Array.isArray(value) && value.every((word) => typeof word === "string")) {
    words = value;
  } else {
    throw new SettingError("lspMemory.serverCommand must be a list of strings or a string");
  }
  words = words.map((word) => expand(word, places));
  const [program, ...args] = words;
  if (program === undefined || program.trim() === "") {
    throw new SettingError("lspMemory.serverCommand is empty: it needs at least a program");
  }
  return { command: resolvePath(program, places), args, label: "lspMemory.serverCommand" };
}

/** `~`, `${userHome}` and `${workspaceFolder}` expanded. */
export function expand(word: string, places: Places): string {
  let text = word.replace(/\$\{userHome\}/g, places.home);
  if (places.workspaceFolder !== undefined) {
    text = text.replace(/\$\{workspaceFolder\}/g, places.workspaceFolder);
  }
  if (text === "~" || text.startsWith("~/") || text.startsWith("~\\")) {
    text = places.home + text.slice(1);
  }
  return text;
}

/** A path with a folder part made absolute against the workspace folder; a bare program
 * name (no separator) is left for a `PATH` lookup. */
function resolvePath(program: string, places: Places): string {
  const bare = !program.includes("/") && !program.includes("\\");
  if (bare || path.isAbsolute(program) || places.workspaceFolder === undefined) {
    return program;
  }
  return path.resolve(places.workspaceFolder, program);
}

/**
 * A command line split into words at whitespace. Single quotes keep everything literally;
 * double quotes keep spaces and take `\"` for a quote. Backslashes outside quotes are
 * literal, so Windows paths need no doubling.
 */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let word = "";
  let started = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line.charAt(i);
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === "\\" && line.charAt(i + 1) === '"') {
        word += '"';
        i++;
      } else if (c === '"') quote = null;
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      started = true;
    } else if (/\s/.test(c)) {
      if (started) words.push(word);
      word = "";
      started = false;
    } else {
      word += c;
      started = true;
    }
  }
  if (quote !== null) {
    throw new SettingError(`lspMemory.serverCommand has an unclosed ${quote} quote`);
  }
  if (started) words.push(word);
  return words;
}

/** A glob relative to a folder, as LSP 3.17 has it (`baseUri` is a `file:` URI). */
export interface RelativePattern {
  baseUri: string;
  pattern: string;
}

/** A document filter, as LSP has it: at least one of the three. */
export type DocumentFilter =
  | { language: string; scheme?: string; pattern?: string | RelativePattern }
  | { language?: string; scheme: string; pattern?: string | RelativePattern }
  | { language?: string; scheme?: string; pattern: string | RelativePattern };

/**
 * `lspMemory.documentSelector`, the escape hatch: when set (a non-empty list) it replaces the
 * served folders. A language id serves that language's saved (`file`) and `untitled`
 * documents; a filter object is used as it is. Anything else in the list is skipped; unset,
 * or nothing usable, gives `undefined`.
 */
export function customSelector(settings: Settings): DocumentFilter[] | undefined {
  const value = settings.get("documentSelector");
  const entries = Array.isArray(value) ? (value as unknown[]) : [];
  const filters: DocumentFilter[] = [];
  for (const entry of entries) {
    if (typeof entry === "string" && entry.trim() !== "") {
      filters.push(
        { scheme: "file", language: entry.trim() },
        { scheme: "untitled", language: entry.trim() },
      );
    } else if (isFilter(entry)) {
      filters.push(entry);
    }
  }
  return filters.length > 0 ? filters : undefined;
}

function isFilter(entry: unknown): entry is DocumentFilter {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return false;
  const fields = Object.entries(entry as Record<string, unknown>);
  const known = ["language", "scheme", "pattern"];
  return (
    fields.length > 0 &&
    fields.every(([key, value]) => known.includes(key) && typeof value === "string" && value !== "")
  );
}
