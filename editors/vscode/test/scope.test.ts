import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { beforeEach, describe, expect, test } from "vitest";
import { active, describeScope, scope, scopeKey, selector, serverFolders, type Folder } from "../src/scope";
import { vscodeSelector } from "../src/server";
import type { Settings } from "../src/settings";
import { folder } from "./fakes";
import { languages, makeDocument, reset } from "./vscode";

beforeEach(reset);

function settings(values: Record<string, unknown> = {}): Settings {
  const all: Record<string, unknown> = {
    folders: [],
    plainText: false,
    untitled: false,
    documentSelector: null,
    ...values,
  };
  return { get: (key: string) => all[key] };
}

function workspace(paths: string[], values: Record<string, unknown> = {}): Folder[] {
  return paths.map((where) => ({ path: where, name: path.basename(where), settings: settings(values) }));
}

/** Whether the client would serve a document of `language` at `file`, as VS Code matches. */
function served(filters: ReturnType<typeof selector>, file: string, language = "markdown"): boolean {
  const uri = file.startsWith("untitled:") ? file : pathToFileURL(file).href;
  return languages.match(vscodeSelector(filters), makeDocument("", language, uri)) > 0;
}

const HOME = "/home/priya";

describe("where the server serves", () => {
  test("a workspace without lsp-memory.toml: nothing, so the server is not started", () => {
    const code = folder("code-project", { "CHANGELOG.md": "Thanks @octocat\n" });
    const found = scope({ settings: settings(), folders: workspace([code]), home: HOME, trusted: true });
    expect(found.roots).toEqual([]);
    expect(active(found)).toBe(false);
    expect(selector(found)).toEqual([]);
    expect(served(selector(found), path.join(code, "CHANGELOG.md"))).toBe(false);
    expect(describeScope(found)).toContain("the language server is not started");
  });

  test("a workspace folder with lsp-memory.toml at its root: its Markdown, nothing else", () => {
    const notes = folder("with-toml", { "lsp-memory.toml": "", "a.md": "" });
    const code = folder("code-beside", { "CHANGELOG.md": "" });
    const found = scope({
      settings: settings(),
      folders: workspace([code, notes]),
      home: HOME,
      trusted: true,
    });
    expect(found.roots).toEqual([{ path: notes, name: "with-toml", reason: "lsp-memory.toml" }]);
    expect(active(found)).toBe(true);
    const filters = selector(found);
    expect(filters).toEqual([
      {
        scheme: "file",
        language: "markdown",
        pattern: { baseUri: pathToFileURL(notes).href, pattern: "**" },
      },
    ]);
    expect(served(filters, path.join(notes, "a.md"))).toBe(true);
    expect(served(filters, path.join(notes, "deep/down/b.md"))).toBe(true);
    expect(served(filters, path.join(code, "CHANGELOG.md"))).toBe(false);
    expect(served(filters, path.join(notes, "a.txt"), "plaintext")).toBe(false);
    expect(served(filters, "untitled:Untitled-1")).toBe(false);
    expect(served(filters, `${notes}-sibling/a.md`)).toBe(false);
    // The server is told about the served folder only.
    expect(serverFolders(found)).toEqual(found.roots);
  });

  test("an lsp-memory.toml below a workspace folder's root does not count", () => {
    const repo = folder("repo-with-deep-toml", {});
    folder("repo-with-deep-toml/docs", { "lsp-memory.toml": "" });
    const found = scope({ settings: settings(), folders: workspace([repo]), home: HOME, trusted: true });
    expect(active(found)).toBe(false);
  });

  test("a folder name with glob characters stays literal", () => {
    const odd = folder("notes [draft] {x}", { "lsp-memory.toml": "" });
    const filters = selector(
      scope({ settings: settings(), folders: workspace([odd]), home: HOME, trusted: true }),
    );
    expect(served(filters, path.join(odd, "a.md"))).toBe(true);
  });
});

describe("lspMemory.folders", () => {
  test("relative to each workspace folder, absolute, or in the home folder; `.` is the folder", () => {
    const repo = folder("repo", {});
    const inner = folder("repo/docs/notes", { "n.md": "" });
    const elsewhere = folder("elsewhere-notes", {});
    const home = folder("home", {});
    const inHome = folder("home/journal", {});
    const found = scope({
      settings: settings(),
      folders: workspace([repo], { folders: ["docs/notes", elsewhere, "~/journal"] }),
      home,
      trusted: true,
    });
    expect(found.roots.map((root) => root.path)).toEqual([inner, elsewhere, inHome]);
    expect(found.roots.every((root) => root.reason === "lspMemory.folders")).toBe(true);
    const filters = selector(found);
    expect(served(filters, path.join(inner, "n.md"))).toBe(true);
    expect(served(filters, path.join(repo, "README.md"))).toBe(false);
    expect(served(filters, path.join(elsewhere, "x.md"))).toBe(true);

    const dot = scope({
      settings: settings(),
      folders: workspace([repo], { folders: ["."] }),
      home,
      trusted: true,
    });
    expect(dot.roots.map((root) => root.path)).toEqual([repo]);
  });

  test("a folder that is not there is skipped, and said so", () => {
    const repo = folder("repo-missing", {});
    const found = scope({
      settings: settings(),
      folders: workspace([repo], { folders: ["no/such/folder"] }),
      home: HOME,
      trusted: true,
    });
    expect(active(found)).toBe(false);
    expect(found.notes).toEqual([
      `lspMemory.folders: ${path.join(repo, "no/such/folder")} is not a folder; skipped`,
    ]);
  });

  test("without workspace folders: absolute paths only", () => {
    const notes = folder("loose-notes", {});
    const found = scope({
      settings: settings({ folders: [notes, "relative/one"] }),
      folders: [],
      home: HOME,
      trusted: true,
    });
    expect(found.roots.map((root) => root.path)).toEqual([notes]);
    expect(found.notes[0]).toContain('"relative/one" is relative and there is no workspace folder');
  });

  test("a folder inside another served one is left out; repeats are one", () => {
    const outer = folder("outer", { "lsp-memory.toml": "" });
    const inner = folder("outer/inner", {});
    const found = scope({
      settings: settings(),
      folders: workspace([outer], { folders: [inner, ".", outer] }),
      home: HOME,
      trusted: true,
    });
    expect(found.roots).toEqual([{ path: outer, name: "outer", reason: "lsp-memory.toml" }]);
  });
});

describe("languages and untitled documents", () => {
  const notes = () => folder("lang-notes", { "lsp-memory.toml": "" });

  test("plain text only when lspMemory.plainText is on", () => {
    const off = selector(
      scope({ settings: settings(), folders: workspace([notes()]), home: HOME, trusted: true }),
    );
    expect(served(off, path.join(notes(), "a.txt"), "plaintext")).toBe(false);
    const on = selector(
      scope({
        settings: settings({ plainText: true }),
        folders: workspace([notes()]),
        home: HOME,
        trusted: true,
      }),
    );
    expect(served(on, path.join(notes(), "a.txt"), "plaintext")).toBe(true);
    expect(served(on, path.join(notes(), "a.md"))).toBe(true);
    expect(served(on, "/somewhere/else.txt", "plaintext")).toBe(false);
  });

  test("untitled documents only when lspMemory.untitled is on", () => {
    const off = selector(
      scope({ settings: settings(), folders: workspace([notes()]), home: HOME, trusted: true }),
    );
    expect(served(off, "untitled:Untitled-1")).toBe(false);
    const on = scope({
      settings: settings({ untitled: true }),
      folders: workspace([notes()]),
      home: HOME,
      trusted: true,
    });
    expect(served(selector(on), "untitled:Untitled-1")).toBe(true);
    expect(served(selector(on), "untitled:Untitled-2", "plaintext")).toBe(false);
    // Untitled documents alone do not start the server.
    const nowhere = scope({ settings: settings({ untitled: true }), folders: [], home: HOME, trusted: true });
    expect(active(nowhere)).toBe(false);
  });
});

test("an untrusted workspace's own lsp-memory.toml does not count; the user's folders do", () => {
  const notes = folder("untrusted-notes", { "lsp-memory.toml": "" });
  const found = scope({ settings: settings(), folders: workspace([notes]), home: HOME, trusted: false });
  expect(active(found)).toBe(false);
  expect(found.notes[0]).toContain("not used in an untrusted workspace");
  const listed = scope({
    settings: settings(),
    folders: workspace([notes], { folders: ["."] }),
    home: HOME,
    trusted: false,
  });
  expect(listed.roots.map((root) => root.reason)).toEqual(["lspMemory.folders"]);
});

test("lspMemory.documentSelector replaces the folders and starts the server on its own", () => {
  const code = folder("code-custom", {});
  const found = scope({
    settings: settings({ documentSelector: ["markdown"] }),
    folders: workspace([code]),
    home: HOME,
    trusted: true,
  });
  expect(active(found)).toBe(true);
  expect(selector(found)).toEqual([
    { scheme: "file", language: "markdown" },
    { scheme: "untitled", language: "markdown" },
  ]);
  expect(served(selector(found), path.join(code, "CHANGELOG.md"))).toBe(true);
  expect(serverFolders(found)).toBeUndefined();
});

test("the key changes with what is served, not with the notes", () => {
  const notes = folder("key-notes", { "lsp-memory.toml": "" });
  const base = { folders: workspace([notes]), home: HOME, trusted: true };
  const key = scopeKey(scope({ ...base, settings: settings() }));
  const missing = { ...base, folders: workspace([notes], { folders: ["missing"] }) };
  expect(scopeKey(scope({ ...missing, settings: settings() }))).toBe(key);
  expect(scopeKey(scope({ ...base, settings: settings({ plainText: true }) }))).not.toBe(key);
  expect(scopeKey(scope({ ...base, settings: settings(), folders: [] }))).not.toBe(key);
});
