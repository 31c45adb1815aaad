import { describe, expect, test } from "vitest";
import {
  DEFAULT_COMMAND,
  RENAMED,
  SERVER_KEYS,
  SettingError,
  customSelector,
  initializationOptions,
  renamedInUse,
  serverCommand,
  serverSection,
  splitCommandLine,
  type Settings,
} from "../src/settings";

/** Settings as `workspace.getConfiguration("lspMemory")` gives them: every contributed key
 * is there, unset ones with their default (`null` for the server's options). */
function settings(values: Record<string, unknown>): Settings {
  const all: Record<string, unknown> = {
    serverPath: "",
    serverCommand: DEFAULT_COMMAND,
    folders: [],
    plainText: false,
    untitled: false,
    documentSelector: null,
    store: null,
    user: null,
    vaults: null,
    budget: null,
    model: null,
    excludes: null,
    cache: null,
    busyTimeoutMs: null,
    busy_timeout_ms: null,
    severities: null,
    tiers: null,
    trace: { server: "off" },
    ...values,
  };
  return { get: (key: string) => all[key] };
}

const places = { workspaceFolder: "/work/notes", home: "/home/priya" };

describe("initializationOptions", () => {
  test("nothing set: nothing sent, so lsp-memory.toml and the defaults apply", () => {
    expect(initializationOptions(settings({}))).toEqual({});
  });

  test("only the set keys, camelCase", () => {
    const options = initializationOptions(
      settings({
        user: "priya",
        budget: 2000,
        busyTimeoutMs: 250,
        vaults: ["~/notes"],
        severities: { "archived-note": "off" },
        tiers: { recent: { max: 0 } },
      }),
    );
    expect(options).toEqual({
      user: "priya",
      budget: 2000,
      busyTimeoutMs: 250,
      vaults: ["~/notes"],
      severities: { "archived-note": "off" },
      tiers: { recent: { max: 0 } },
    });
  });

  test("unset values (null, empty string) and the extension's own keys are left out", () => {
    const options = initializationOptions(
      settings({
        store: "",
        model: null,
        serverPath: "/x/lsp-memory",
        documentSelector: ["org"],
        folders: ["."],
        plainText: true,
      }),
    );
    expect(options).toEqual({});
  });

  test("falsy but set values are kept", () => {
    expect(initializationOptions(settings({ busyTimeoutMs: 0, excludes: [] }))).toEqual({
      busyTimeoutMs: 0,
      excludes: [],
    });
  });
});

describe("renamed settings", () => {
  test("every server option is camelCase; every old name maps onto one", () => {
    for (const key of SERVER_KEYS) expect(key).toMatch(/^[a-z][A-Za-z]*$/);
    for (const [old, name] of Object.entries(RENAMED)) {
      expect(old).toMatch(/_/);
      expect(SERVER_KEYS).toContain(name);
      expect(old.replace(/_([a-z])/g, (_all, c: string) => c.toUpperCase())).toBe(name);
    }
  });

  test("a value under an old name counts while the new name is unset", () => {
    const old = settings({ busy_timeout_ms: 250, review_timeout_s: 12 });
    expect(initializationOptions(old)).toEqual({ busyTimeoutMs: 250, reviewTimeoutS: 12 });
    expect(renamedInUse(old)).toEqual([
      { old: "lspMemory.busy_timeout_ms", name: "lspMemory.busyTimeoutMs" },
      { old: "lspMemory.review_timeout_s", name: "lspMemory.reviewTimeoutS" },
    ]);
    const both = settings({ busy_timeout_ms: 250, busyTimeoutMs: 900 });
    expect(initializationOptions(both)).toEqual({ busyTimeoutMs: 900 });
    expect(renamedInUse(settings({}))).toEqual([]);
  });

  test("workspace/configuration: the server's keys only, old names under their new ones", () => {
    const section = {
      user: "priya",
      busyTimeoutMs: null,
      busy_timeout_ms: 250,
      reviewCommand: "llm-review",
      review_command: "old-review",
      classifier_command: null,
      aNewerServerKey: 1,
      serverPath: "/x/lsp-memory",
      serverCommand: ["lsp-memory", "serve"],
      folders: ["."],
      plainText: true,
      untitled: false,
      documentSelector: null,
      trace: { server: "verbose" },
    };
    expect(serverSection(section)).toEqual({
      user: "priya",
      busyTimeoutMs: 250,
      reviewCommand: "llm-review",
      aNewerServerKey: 1,
    });
    expect(serverSection(null)).toBeNull();
  });
});

describe("serverCommand", () => {
  test("default: lsp-memory serve, looked up on PATH", () => {
    expect(serverCommand(settings({}), places)).toEqual({
      command: "lsp-memory",
      args: ["serve"],
      label: "lspMemory.serverCommand",
    });
  });

  test("a list is program and arguments", () => {
    const given = settings({ serverCommand: ["/opt/venv/bin/python", "-m", "lsp_memory", "serve"] });
    expect(serverCommand(given, places)).toMatchObject({
      command: "/opt/venv/bin/python",
      args: ["-m", "lsp_memory", "serve"],
    });
  });

  test("a string is split at spaces, quotes kept together", () => {
    const given = settings({ serverCommand: `"/opt/my tools/lsp-memory" serve --user 'priya s'` });
    expect(serverCommand(given, places)).toMatchObject({
      command: "/opt/my tools/lsp-memory",
      args: ["serve", "--user", "priya s"],
    });
  });

  test("~, ${userHome} and ${workspaceFolder} are expanded; a relative path is the workspace's", () => {
    expect(serverCommand(settings({ serverCommand: "~/bin/lsp-memory serve" }), places).command).toBe(
      "/home/priya/bin/lsp-memory",
    );
    expect(
      serverCommand(settings({ serverCommand: ["${workspaceFolder}/.venv/bin/lsp-memory", "serve"] }), places)
        .command,
    ).toBe("/work/notes/.venv/bin/lsp-memory");
    expect(
      serverCommand(settings({ serverCommand: [".venv/bin/lsp-memory", "serve"] }), places).command,
    ).toBe("/work/notes/.venv/bin/lsp-memory");
    expect(
      serverCommand(settings({ serverCommand: ["${userHome}/x/lsp-memory", "--store", "~/m"] }), places),
    ).toMatchObject({ command: "/home/priya/x/lsp-memory", args: ["--store", "/home/priya/m"] });
  });

  test("serverPath wins: the program gets `serve`, a Python interpreter `-m lsp_memory serve`", () => {
    expect(serverCommand(settings({ serverPath: "/opt/venv/bin/lsp-memory" }), places)).toEqual({
      command: "/opt/venv/bin/lsp-memory",
      args: ["serve"],
      label: "lspMemory.serverPath",
    });
    for (const python of [
      "/usr/bin/python3",
      "/opt/venv/bin/python",
      "C:\\venv\\Scripts\\python.exe",
      "python3.11",
    ]) {
      const command = serverCommand(settings({ serverPath: python, serverCommand: ["ignored"] }), {
        home: "/home/priya",
      });
      expect(command.args, python).toEqual(["-m", "lsp_memory", "serve"]);
    }
    expect(serverCommand(settings({ serverPath: "  .venv/bin/lsp-memory " }), places).command).toBe(
      "/work/notes/.venv/bin/lsp-memory",
    );
  });

  test("a setting that gives no program is a SettingError", () => {
    for (const bad of [[], [""], "", "   ", [1, 2], { program: "x" }, `"unclosed serve`]) {
      expect(() => serverCommand(settings({ serverCommand: bad }), places), JSON.stringify(bad)).toThrow(
        SettingError,
      );
    }
  });
});

describe("splitCommandLine", () => {
  test.each([
    ["lsp-memory serve", ["lsp-memory", "serve"]],
    ["  a   b  ", ["a", "b"]],
    [`a "b c" 'd e'`, ["a", "b c", "d e"]],
    [`a "say \\"hi\\"" b`, ["a", 'say "hi"', "b"]],
    [`a "" b`, ["a", "", "b"]],
    [`C:\\Tools\\lsp-memory.exe serve`, ["C:\\Tools\\lsp-memory.exe", "serve"]],
    [`pre"quoted part"post`, ["prequoted partpost"]],
  ])("%s", (line, words) => {
    expect(splitCommandLine(line)).toEqual(words);
  });
});

describe("customSelector (lspMemory.documentSelector)", () => {
  test("unset: undefined, so the served folders decide", () => {
    expect(customSelector(settings({}))).toBeUndefined();
    expect(customSelector(settings({ documentSelector: [] }))).toBeUndefined();
  });

  test("language ids and filters", () => {
    const given = settings({
      documentSelector: ["org", { pattern: "**/*.prompt" }, { language: "markdown", scheme: "file" }],
    });
    expect(customSelector(given)).toEqual([
      { scheme: "file", language: "org" },
      { scheme: "untitled", language: "org" },
      { pattern: "**/*.prompt" },
      { language: "markdown", scheme: "file" },
    ]);
  });

  test("unusable entries are skipped; nothing usable is unset", () => {
    const given = settings({
      documentSelector: [42, "", {}, { language: 3 }, { lang: "x" }, null, "markdown"],
    });
    expect(customSelector(given)).toHaveLength(2);
    expect(customSelector(settings({ documentSelector: [42, {}] }))).toBeUndefined();
    expect(customSelector(settings({ documentSelector: "markdown" }))).toBeUndefined();
  });
});
