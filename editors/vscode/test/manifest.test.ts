/**
 * package.json against the code and the server: every server option is a camelCase setting
 * with an unset (`null`) default, and its old snake_case name a deprecated one; every command
 * is contributed under `lspMemory.`, none a server command's id; the VS Code version is the
 * one vscode-languageclient needs. Where the repository's Python source is there, the
 * settings, diagnostic kinds and tiers are checked against the server's own lists.
 */

import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, test } from "vitest";
import { COMMANDS } from "../src/commands";
import { SERVED_CONTEXT } from "../src/extension";
import { SERVER_COMMANDS } from "../src/protocol";
import { CLIENT_KEYS, DEFAULT_COMMAND, RENAMED, SECTION, SERVER_KEYS } from "../src/settings";

interface Property {
  default: unknown;
  type: string | string[];
  scope?: string;
  markdownDeprecationMessage?: string;
  properties?: Record<string, Property & { enum?: string[] }>;
}

const manifest = JSON.parse(readFileSync(path.join(__dirname, "../package.json"), "utf8")) as {
  main: string;
  engines: { vscode: string };
  activationEvents: string[];
  capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
  devDependencies: Record<string, string>;
  dependencies: Record<string, string>;
  contributes: {
    commands: { command: string; title: string; category: string }[];
    menus: Record<string, { command: string; when: string }[]>;
    configuration: { properties: Record<string, Property> };
  };
};
const properties = manifest.contributes.configuration.properties;
const CONFIG_PY = path.join(__dirname, "../../../lsp_memory/config.py");
const HAVE_SERVER_SOURCE = existsSync(CONFIG_PY);

const camel = (key: string) => key.replace(/_([a-z])/g, (_all, c: string) => c.toUpperCase());

test("every server option is a camelCase setting, unset by default", () => {
  for (const key of SERVER_KEYS) {
    const property = properties[`${SECTION}.${key}`];
    expect(property, key).toBeDefined();
    expect(property!.default, key).toBeNull();
    expect(property!.type, key).toContain("null");
    expect(property!.markdownDeprecationMessage, key).toBeUndefined();
  }
  const current = Object.keys(properties).filter(
    (key) => properties[key]!.markdownDeprecationMessage === undefined,
  );
  expect(current.filter((key) => key.includes("_"))).toEqual([]);
});

test("an old snake_case name is a deprecated setting pointing at its new name", () => {
  for (const [old, name] of Object.entries(RENAMED)) {
    const before = properties[`${SECTION}.${old}`];
    const after = properties[`${SECTION}.${name}`]!;
    expect(before, old).toBeDefined();
    expect(before!.markdownDeprecationMessage).toContain(`#${SECTION}.${name}#`);
    expect(before!.default).toBeNull();
    expect(before!.type).toEqual(after.type);
    expect(before!.scope).toEqual(after.scope);
  }
});

test("the extension's own settings; nothing else", () => {
  expect(properties[`${SECTION}.serverCommand`]!.default).toEqual(DEFAULT_COMMAND);
  expect(properties[`${SECTION}.serverPath`]!.default).toBe("");
  expect(properties[`${SECTION}.folders`]).toMatchObject({ default: [], scope: "resource" });
  expect(properties[`${SECTION}.plainText`]!.default).toBe(false);
  expect(properties[`${SECTION}.untitled`]!.default).toBe(false);
  expect(properties[`${SECTION}.documentSelector`]!.default).toBeNull();
  const known = new Set<string>(
    [...SERVER_KEYS, ...CLIENT_KEYS, ...Object.keys(RENAMED), "trace.server"].map(
      (key) => `${SECTION}.${key}`,
    ),
  );
  expect(Object.keys(properties).filter((key) => !known.has(key))).toEqual([]);
});

test("an untrusted workspace cannot choose a program that runs, nor where it serves", () => {
  // Every setting that names a program (the server's, the classifier's, the review's, the
  // extractor's, under both names) is one a cloned folder's .vscode/settings.json could use
  // to run code: VS Code ignores a workspace's value of each until the user trusts it.
  const programs = Object.keys(properties).filter((key) => /command$/i.test(key));
  expect(programs).toHaveLength(7);
  expect(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.sort()).toEqual(
    [...programs, ...["serverPath", "folders", "documentSelector"].map((key) => `${SECTION}.${key}`)].sort(),
  );
});

test("every command is contributed under lspMemory., titled for the palette, none a server command", () => {
  const contributed = manifest.contributes.commands.map((command) => command.command).sort();
  expect(contributed).toEqual(Object.values(COMMANDS).sort());
  expect(contributed.every((id) => id.startsWith(`${SECTION}.`))).toBe(true);
  const server: string[] = Object.values(SERVER_COMMANDS);
  expect(contributed.filter((id) => server.includes(id))).toEqual([]);
  expect(manifest.contributes.commands.every((command) => command.category === "lsp-memory")).toBe(true);
  const titles = manifest.contributes.commands.map((command) => command.title);
  expect(titles).toEqual(
    expect.arrayContaining([
      "Build context",
      "Search memory",
      "Remember selection",
      "Reindex",
      "Restart server",
    ]),
  );
});

test("the context menu shows on served documents, with contributed commands", () => {
  const menu = manifest.contributes.menus["editor/context"]!;
  expect(menu.map((entry) => entry.command).sort()).toEqual([COMMANDS.remember, COMMANDS.showContext].sort());
  for (const entry of menu) expect(entry.when).toContain(SERVED_CONTEXT);
});

test("VS Code ^1.91.0 (vscode-languageclient 11), the bundle, Markdown and plain text", () => {
  expect(manifest.engines.vscode).toBe("^1.91.0");
  expect(manifest.devDependencies["@types/vscode"]).toBe("~1.91.0");
  expect(manifest.dependencies["vscode-languageclient"]).toMatch(/^\^11\./);
  expect(manifest.main).toBe("./dist/extension.js");
  expect(manifest.activationEvents).toEqual(
    expect.arrayContaining([
      "onLanguage:markdown",
      "onLanguage:plaintext",
      "workspaceContains:lsp-memory.toml",
    ]),
  );
});

describe.skipIf(!HAVE_SERVER_SOURCE)("against the server's lsp_memory/config.py", () => {
  const source = HAVE_SERVER_SOURCE ? readFileSync(CONFIG_PY, "utf8") : "";
  const block = (name: string) => {
    const match = new RegExp(
      `^${name}[^=]*= [^\\n]*\\n([\\s\\S]*?)^\\)|^${name}[^=]*= \\{([\\s\\S]*?)^\\}`,
      "m",
    ).exec(source);
    if (match === null) throw new Error(`${name} not found in config.py`);
    return match[1] ?? match[2] ?? "";
  };
  const keys = (text: string) => [...text.matchAll(/^\s+"([\w-]+)":/gm)].map((m) => m[1]);

  test("the settings are the server's, camelCase", () => {
    // The server takes both spellings; its list may hold either or both.
    const server = [...new Set(keys(block("_PARSERS")).map((key) => camel(key!)))];
    expect([...SERVER_KEYS].sort()).toEqual(server.sort());
  });

  test("the diagnostic kinds and levels are the server's", () => {
    const severities = properties[`${SECTION}.severities`]!.properties!;
    expect(Object.keys(severities).sort()).toEqual(keys(block("DIAGNOSTIC_SEVERITIES")).sort());
    const levels = /^SEVERITY_LEVELS = \(([^)]*)\)/m
      .exec(source)![1]!
      .match(/"(\w+)"/g)!
      .map((l) => l.slice(1, -1));
    for (const property of Object.values(severities)) expect(property.enum).toEqual(levels);
  });

  test("the tiers and their keys are the server's", () => {
    const tiers = properties[`${SECTION}.tiers`]!.properties!;
    const server: Record<string, string[]> = {};
    for (const m of block("_TIER_KEYS").matchAll(/"(\w+)": \(([^)]*)\)/g)) {
      server[m[1]!] = m[2]!.match(/"(\w+)"/g)!.map((k) => k.slice(1, -1));
    }
    expect(Object.keys(server)).toHaveLength(4);
    expect(
      Object.fromEntries(
        Object.entries(tiers).map(([name, spec]) => [name, Object.keys(spec.properties ?? {})]),
      ),
    ).toEqual(server);
  });
});
