import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import {
  COMMANDS,
  COPY,
  COPY_REFERENCE,
  Commands,
  NOT_SERVED,
  OPEN_SETTINGS,
  REINDEX_SETTLE_MS,
  REMEMBER_CHOICES,
  contextSummary,
  insertReference,
  insertion,
  mentionItems,
  pickHit,
  rememberArguments,
  rememberedMessage,
  reviewItems,
  oneLine,
  searchItems,
  showContextBlock,
  unsorted,
  SEARCH_DELAY_MS,
} from "../src/commands";
import { CONTEXT_SCHEME, ContextDocuments, contextUri } from "../src/contextview";
import {
  SERVER_COMMANDS,
  type ContextBlock,
  type ReviewItem,
  type SearchHit,
  type UnlinkedMention,
} from "../src/protocol";
import { NotRunning, type ServerManager } from "../src/server";
import { Location, Position, Range, Selection, TextEditor, Uri, makeDocument, reset, state } from "./vscode";

const block: ContextBlock = {
  budget: 1500,
  tokens: 1485,
  over_budget: false,
  markdown: "## User memory\n- [REFERENCED @prefer_morning_a3f2] I prefer deep work in the morning\n",
  warnings: [],
  dropped: [],
};

function hit(reference: string, kind = "claim", extra: Partial<SearchHit> = {}): SearchHit {
  return {
    id: reference,
    kind,
    key: reference.replace(/^@/, ""),
    title: `title of ${reference}`,
    snippet: `snippet of ${reference}`,
    status: "active",
    score: 1,
    reference,
    ...extra,
  };
}

/** A stand-in for the server manager: `execute` answers from `answers` by command; it
 * serves Markdown. `written` records the refreshes of the counts asked for. */
function fakeServer(answers: Record<string, unknown> = {}) {
  const execute = vi.fn((command: string, _args: unknown[]) => {
    const answer = answers[command];
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  });
  const restart = vi.fn(() => Promise.resolve());
  const written = vi.fn((_delayMs?: number) => undefined);
  const server = {
    execute,
    restart,
    serves: (document: { languageId: string }) => document.languageId === "markdown",
    uri: (uri: { toString(): string }) => uri.toString(),
    output: { show: vi.fn() },
  };
  const contexts = new ContextDocuments();
  contexts.register();
  return {
    server,
    commands: new Commands(server as unknown as ServerManager, written, contexts),
    execute,
    restart,
    written,
  };
}

beforeEach(reset);

describe("the context block", () => {
  test("size against the budget", () => {
    expect(contextSummary(block)).toEqual({
      message: "lsp-memory: context block of 1485 / 1500 tokens.",
      warning: false,
    });
  });

  test("over budget, dropped items and warnings make a warning", () => {
    const summary = contextSummary({
      ...block,
      tokens: 1700,
      over_budget: true,
      dropped: [{ id: "projects/alpha-kickoff.md" }, { id: "[[Missing Note]]" }],
      warnings: ["@no_such_thing: No memory or context found", "[[Missing Note]]: Note not found", "third"],
    });
    expect(summary.warning).toBe(true);
    expect(summary.message).toBe(
      "lsp-memory: context block of 1700 / 1500 tokens (over budget: the referenced claims alone exceed it); " +
        "2 items left out for the budget. 3 warnings: @no_such_thing: No memory or context found; " +
        "[[Missing Note]]: Note not found; and 1 more.",
    );
    expect(contextSummary({ ...block, dropped: [{}], warnings: ["one."] }).message).toBe(
      "lsp-memory: context block of 1485 / 1500 tokens; 1 item left out for the budget. Warning: one.",
    );
  });

  test("opens as a read-only Markdown document beside the editor; Copy puts it on the clipboard", async () => {
    const contexts = new ContextDocuments();
    contexts.register();
    state.answers.push(COPY);
    await showContextBlock(block, contexts, "file:///notes/prompt.md");
    expect(state.opened).toHaveLength(1);
    const { document, options } = state.opened[0]!;
    expect(document.languageId).toBe("markdown");
    expect(document.uri.scheme).toBe(CONTEXT_SCHEME);
    expect(document.uri.path).toBe("/prompt (context).md");
    expect(document.getText()).toBe(block.markdown);
    expect(options).toEqual({ viewColumn: -2, preview: false, preserveFocus: true });
    expect(state.shown).toEqual([
      { level: "information", message: "lsp-memory: context block of 1485 / 1500 tokens.", actions: [COPY] },
    ]);
    expect(state.clipboard).toBe(block.markdown);
  });

  test("warnings show as a warning message; an empty block opens nothing", async () => {
    const contexts = new ContextDocuments();
    contexts.register();
    await showContextBlock({ ...block, warnings: ["w"] }, contexts);
    expect(state.shown[0]!.level).toBe("warning");
    expect(state.clipboard).toBe("");
    await showContextBlock({ ...block, markdown: "", tokens: 0 }, contexts);
    expect(state.opened).toHaveLength(1);
    expect(state.shown[1]!.actions).toEqual([]);
  });

  test("one document per source: building again shows the new block in it", async () => {
    const contexts = new ContextDocuments();
    contexts.register();
    const changed: string[] = [];
    contexts.onDidChange((uri) => changed.push(uri.toString()));
    const first = await contexts.open("file:///notes/prompt.md", "one");
    const again = await contexts.open("file:///notes/prompt.md", "two");
    const other = await contexts.open("file:///other/prompt.md", "three");
    expect(again.uri.toString()).toBe(first.uri.toString());
    expect(again.getText()).toBe("two");
    expect(changed).toEqual([first.uri.toString(), first.uri.toString(), other.uri.toString()]);
    expect(other.uri.toString()).not.toBe(first.uri.toString());
    expect(other.uri.path).toBe(first.uri.path);
    expect(contextUri("untitled:Untitled-1").path).toBe("/Untitled-1 (context).md");
    expect(contextUri(undefined).path).toBe("/context.md");
    expect(contextUri("file:///notes/My%20Plan.markdown").path).toBe("/My Plan (context).md");
  });

  test("Build context runs lspMemory.buildContext on the active document", async () => {
    const document = makeDocument("Plan with @project_alpha\n");
    state.activeTextEditor = new TextEditor(document);
    const { commands, execute } = fakeServer({ "lspMemory.buildContext": block });
    await commands.buildContext();
    expect(execute).toHaveBeenCalledWith("lspMemory.buildContext", ["file:///notes/prompt.md"]);
    expect(state.opened[0]!.document.getText()).toBe(block.markdown);
  });

  test("Build context on a document the server does not serve says so", async () => {
    state.activeTextEditor = new TextEditor(makeDocument("x = 1\n", "python", "file:///a.py"));
    const { commands, execute } = fakeServer();
    await commands.buildContext();
    state.answers.push(OPEN_SETTINGS);
    await commands.buildContext();
    await new Promise((resolve) => setImmediate(resolve));
    expect(execute).not.toHaveBeenCalled();
    expect(state.shown[0]).toEqual({ level: "warning", message: NOT_SERVED, actions: [OPEN_SETTINGS] });
    expect(NOT_SERVED).toContain("lsp-memory.toml");
    expect(NOT_SERVED).toContain("lspMemory.folders");
    expect(state.executed).toEqual([
      { command: "workbench.action.openSettings", args: ["lspMemory.folders"] },
    ]);
  });

  test("the code lens's lspMemory.buildContext result is shown the same way", async () => {
    const { commands, written } = fakeServer();
    const next = vi.fn((_command: string, _args: unknown[]) => block);
    await commands.runServerCommand("lspMemory.buildContext", ["file:///notes/prompt.md"], next);
    expect(next).toHaveBeenCalledWith("lspMemory.buildContext", ["file:///notes/prompt.md"]);
    expect(state.opened).toHaveLength(1);
    await commands.runServerCommand("lspMemory.reindex", [], () => ({ status: "started" }));
    expect(state.opened).toHaveLength(1);
    expect(written).not.toHaveBeenCalled();
  });
});

describe("reference counts", () => {
  test("a count lens's locations open VS Code's references view, in VS Code's values", async () => {
    const { commands } = fakeServer();
    const note = "file:///notes/alice.md";
    const found = [
      {
        uri: "file:///notes/plan.md",
        range: { start: { line: 2, character: 4 }, end: { line: 2, character: 19 } },
      },
    ];
    const next = vi.fn((_command: string, _args: unknown[]) => found);
    await commands.runServerCommand("lspMemory.showReferences", [note, { line: 8, character: 0 }], next);
    expect(state.executed).toHaveLength(1);
    const { command, args } = state.executed[0]!;
    expect(command).toBe("editor.action.showReferences");
    const [uri, position, locations] = args as [Uri, Position, Location[]];
    expect(uri).toBeInstanceOf(Uri);
    expect(uri.toString()).toBe(note);
    expect(position).toEqual(new Position(8, 0));
    expect(locations).toHaveLength(1);
    expect(locations[0]).toBeInstanceOf(Location);
    expect(locations[0]!.uri.toString()).toBe("file:///notes/plan.md");
    expect(locations[0]!.range).toEqual(new Range(2, 4, 2, 19));
  });
});

describe("search", () => {
  test("hits → quick pick items that the quick pick does not filter out", () => {
    const items = searchItems([
      hit("@prefer_morning_a3f2"),
      hit("[[Project Alpha Kickoff]]", "note", { title: "Project Alpha Kickoff", snippet: "" }),
      hit("@old_claim_1234", "claim", { status: "archived" }),
      hit("@alice_person_entity", "entity"),
      hit("@project_alpha", "context"),
      hit("@x", "something-new"),
    ]);
    const plain = (label: string) => label.replace(/\u200b/g, "");
    expect(items[0]).toMatchObject({
      description: "@prefer_morning_a3f2",
      detail: "snippet of @prefer_morning_a3f2",
      alwaysShow: true,
    });
    expect(plain(items[0]!.label)).toBe("$(comment) title of @prefer_morning_a3f2");
    expect(items[1]).toMatchObject({ description: "[[Project Alpha Kickoff]]" });
    expect(plain(items[1]!.label)).toBe("$(note) Project Alpha Kickoff");
    expect(items[1]!.detail).toBeUndefined();
    expect(items[2]!.description).toBe("@old_claim_1234 · archived");
    expect(items.slice(3).map((item) => item.label.split(" ")[0])).toEqual([
      "$(person)",
      "$(folder)",
      "$(symbol-misc)",
    ]);
    expect(items.every((item) => item.alwaysShow)).toBe(true);
    expect(items[0]!.hit.reference).toBe("@prefer_morning_a3f2");
  });

  test("labels the quick pick cannot match (it would reorder them); snippets on one line", () => {
    expect(unsorted("Pé 🚀")).toBe("P\u200bé\u200b \u200b🚀");
    expect(unsorted("Cafe\u0301")).toBe("C\u200ba\u200bf\u200be\u0301");
    expect(unsorted("")).toBe("");
    expect(oneLine("goal\nhealth\n\n  sleep  routine\r\n")).toBe("goal · health · sleep routine");
    expect(searchItems([hit("@a", "claim", { snippet: "x\ny" })])[0]!.detail).toBe("x · y");
    expect(searchItems([hit("@a", "claim", { snippet: " \n " })])[0]!.detail).toBeUndefined();
  });

  test("insertion takes over an @ or [[ typed before the cursor", () => {
    expect(insertion("see ", "@prefer_morning_a3f2")).toEqual({ text: "@prefer_morning_a3f2", replace: 0 });
    expect(insertion("see @", "@prefer_morning_a3f2")).toEqual({ text: "@prefer_morning_a3f2", replace: 1 });
    expect(insertion("see [[", "[[Project Alpha]]")).toEqual({ text: "[[Project Alpha]]", replace: 2 });
    expect(insertion("see @", "[[Project Alpha]]")).toEqual({ text: "[[Project Alpha]]", replace: 0 });
    expect(insertion("see [", "[[Project Alpha]]")).toEqual({ text: "[[Project Alpha]]", replace: 0 });
  });

  test("insertReference writes at every cursor and replaces selected text", async () => {
    const document = makeDocument("a @\nb selected c\n");
    const editor = new TextEditor(document);
    editor.selections = [
      new Selection(new Position(0, 3), new Position(0, 3)),
      new Selection(new Position(1, 2), new Position(1, 10)),
    ];
    await insertReference(editor as never, "@prefer_morning_a3f2");
    expect(document.getText()).toBe("a @prefer_morning_a3f2\nb @prefer_morning_a3f2 c\n");
  });

  describe("the quick pick", () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    test("searches once the user stops typing, and resolves to the chosen hit", async () => {
      const search = vi.fn((query: string) => Promise.resolve([hit(`@${query}_1`), hit(`@${query}_2`)]));
      const chosen = pickHit(search);
      const pick = state.quickPicks[0]!;
      expect(pick.visible).toBe(true);
      pick.type("al");
      pick.type("alp");
      pick.type("alpha ");
      expect(pick.busy).toBe(true);
      await vi.advanceTimersByTimeAsync(SEARCH_DELAY_MS - 1);
      expect(search).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1);
      expect(search).toHaveBeenCalledTimes(1);
      expect(search).toHaveBeenCalledWith("alpha");
      expect(pick.items.map((item) => item.description)).toEqual(["@alpha_1", "@alpha_2"]);
      expect(pick.busy).toBe(false);
      pick.accept(1);
      expect(await chosen).toMatchObject({ reference: "@alpha_2" });
      expect(pick.disposed).toBe(true);
    });

    test("an answer to an older query is dropped", async () => {
      let release: (hits: SearchHit[]) => void = () => undefined;
      const search = vi.fn((query: string) =>
        query === "slow"
          ? new Promise<SearchHit[]>((resolve) => {
              release = resolve;
            })
          : Promise.resolve([hit("@fast")]),
      );
      void pickHit(search);
      const pick = state.quickPicks[0]!;
      pick.type("slow");
      await vi.advanceTimersByTimeAsync(SEARCH_DELAY_MS);
      pick.type("fast");
      await vi.advanceTimersByTimeAsync(SEARCH_DELAY_MS);
      release([hit("@slow")]);
      await vi.advanceTimersByTimeAsync(0);
      expect(pick.items.map((item) => item.description)).toEqual(["@fast"]);
    });

    test("an error or no hits shows in the title; hiding resolves to nothing", async () => {
      const search = vi.fn((query: string) =>
        query === "bad"
          ? Promise.reject(new Error("lsp-memory is not initialized yet"))
          : Promise.resolve([]),
      );
      const chosen = pickHit(search);
      const pick = state.quickPicks[0]!;
      pick.type("bad");
      await vi.advanceTimersByTimeAsync(SEARCH_DELAY_MS);
      expect(pick.title).toBe("lsp-memory: Search memory: lsp-memory is not initialized yet");
      pick.type("nothing");
      await vi.advanceTimersByTimeAsync(SEARCH_DELAY_MS);
      expect(pick.title).toBe('lsp-memory: Search memory: nothing found for "nothing"');
      pick.type("  ");
      expect(pick.items).toEqual([]);
      await vi.advanceTimersByTimeAsync(SEARCH_DELAY_MS);
      expect(search).toHaveBeenCalledTimes(2);
      pick.hide();
      expect(await chosen).toBeUndefined();
    });
  });

  test("Search memory inserts the chosen reference at the cursor", async () => {
    vi.useFakeTimers();
    try {
      const document = makeDocument("Ask @\n");
      state.activeTextEditor = new TextEditor(
        document,
        new Selection(new Position(0, 5), new Position(0, 5)),
      );
      const { commands, execute } = fakeServer({ "lspMemory.search": [hit("@prefer_morning_a3f2")] });
      const done = commands.search();
      const pick = state.quickPicks[0]!;
      pick.type("morning");
      await vi.advanceTimersByTimeAsync(SEARCH_DELAY_MS);
      expect(execute).toHaveBeenCalledWith("lspMemory.search", ["morning", "all", 20]);
      pick.accept(0);
      await done;
      expect(document.getText()).toBe("Ask @prefer_morning_a3f2\n");
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("remember selection", () => {
  test("the editor selection becomes an LSP range (start before end, UTF-16 columns)", () => {
    const reversed = new Selection(new Position(2, 7), new Position(1, 3));
    expect(rememberArguments("file:///notes/a.md", reversed, true)).toEqual([
      "file:///notes/a.md",
      { start: { line: 1, character: 3 }, end: { line: 2, character: 7 } },
      true,
    ]);
  });

  test("asks, like the code actions, then runs lspMemory.rememberSelection", async () => {
    const document = makeDocument("I 🙂 prefer tea over coffee\n");
    state.activeTextEditor = new TextEditor(document, new Selection(new Position(0, 5), new Position(0, 27)));
    state.picks.push(1);
    const { commands, execute } = fakeServer({
      "lspMemory.rememberSelection": { reference: "@prefer_tea_1a2b", replaced: true },
    });
    await commands.rememberSelection();
    expect(execute).toHaveBeenCalledWith("lspMemory.rememberSelection", [
      "file:///notes/prompt.md",
      { start: { line: 0, character: 5 }, end: { line: 0, character: 27 } },
      true,
    ]);
    expect(state.shown).toEqual([
      {
        level: "information",
        message: "lsp-memory: remembered as @prefer_tea_1a2b; the selection now references it.",
        actions: [],
      },
    ]);
  });

  test("without replacing, the message offers to copy the reference", async () => {
    state.activeTextEditor = new TextEditor(
      makeDocument("tea\n"),
      new Selection(new Position(0, 0), new Position(0, 3)),
    );
    state.picks.push(0);
    state.answers.push(COPY_REFERENCE);
    const { commands, execute } = fakeServer({
      "lspMemory.rememberSelection": { reference: "@tea_1a2b", replaced: false },
    });
    await commands.rememberSelection();
    expect(execute.mock.calls[0]![1][2]).toBe(false);
    expect(state.shown[0]).toEqual({
      level: "information",
      message: "lsp-memory: remembered as @tea_1a2b.",
      actions: [COPY_REFERENCE],
    });
    expect(state.clipboard).toBe("@tea_1a2b");
  });

  test("an empty selection or a dismissed choice sends nothing", async () => {
    state.activeTextEditor = new TextEditor(
      makeDocument("   \n"),
      new Selection(new Position(0, 0), new Position(0, 3)),
    );
    const { commands, execute } = fakeServer();
    await commands.rememberSelection();
    expect(state.shown[0]!.message).toBe("lsp-memory: select the text to remember first.");
    state.activeTextEditor = new TextEditor(
      makeDocument("tea\n"),
      new Selection(new Position(0, 0), new Position(0, 3)),
    );
    await commands.rememberSelection(); // no pick queued: dismissed
    expect(execute).not.toHaveBeenCalled();
  });

  test("messages", () => {
    expect(rememberedMessage({ reference: "@a" }, true)).toBe("lsp-memory: remembered as @a.");
    expect(rememberedMessage({ reference: "@a", replaced: false }, true)).toBe(
      "lsp-memory: remembered as @a; the selection was not replaced.",
    );
    expect(REMEMBER_CHOICES.map((choice) => choice.replace)).toEqual([false, true]);
  });

  test("the code actions' results are reported too, and the counts refreshed", async () => {
    const { commands, written } = fakeServer();
    await commands.runServerCommand("lspMemory.rememberSelection", ["file:///a.md", {}, true], () => ({
      reference: "@a",
      replaced: true,
    }));
    expect(state.shown[0]!.message).toBe("lsp-memory: remembered as @a; the selection now references it.");
    expect(written).toHaveBeenCalledTimes(1);
  });

  test("Remember selection refreshes the counts", async () => {
    state.activeTextEditor = new TextEditor(
      makeDocument("tea\n"),
      new Selection(new Position(0, 0), new Position(0, 3)),
    );
    state.picks.push(0);
    const { commands, written } = fakeServer({ "lspMemory.rememberSelection": { reference: "@tea" } });
    await commands.rememberSelection();
    expect(written).toHaveBeenCalledTimes(1);
  });
});

const COMMANDS_PY = path.join(__dirname, "../../../lsp_memory/lsp/features/commands.py");

describe("the commands", () => {
  test("registered under lspMemory.*, none of them a server command", () => {
    const { commands } = fakeServer();
    commands.register();
    const ids = Object.values(COMMANDS);
    expect([...state.commands.keys()].sort()).toEqual([...ids].sort());
    expect(ids.every((id) => /^lspMemory\.[a-z][A-Za-z]+$/.test(id))).toBe(true);
    // vscode-languageclient registers the server's commands under their own ids: the same id
    // registered twice fails (and the server's command would be lost).
    const server: string[] = Object.values(SERVER_COMMANDS);
    expect(server).toEqual(expect.arrayContaining(["lspMemory.status", "lspMemory.createNote"]));
    expect(ids.filter((id) => server.includes(id))).toEqual([]);
  });

  test.skipIf(!existsSync(COMMANDS_PY))("no id is one the server's source registers", () => {
    const source = readFileSync(COMMANDS_PY, "utf8");
    const registered = [...source.matchAll(/"(lspMemory\.\w+)"/g)].map((match) => match[1]);
    expect(registered).toContain("lspMemory.buildContext");
    expect(Object.values(COMMANDS).filter((id) => registered.includes(id))).toEqual([]);
  });

  test("Reindex asks the server, says so in the status bar, and refreshes the counts later", async () => {
    const { commands, execute, written } = fakeServer({ "lspMemory.reindex": { status: "started" } });
    await commands.reindex();
    expect(execute).toHaveBeenCalledWith("lspMemory.reindex", []);
    expect(state.statusMessages).toEqual(["lsp-memory: reindexing the store and the vaults…"]);
    expect(written).toHaveBeenCalledWith(REINDEX_SETTLE_MS);
  });

  test("the server's Create note command goes through as it is, and refreshes the counts", async () => {
    // The server's quick fix for clients without resource operations runs it; nothing in the
    // extension may change or swallow it.
    const { commands, written } = fakeServer();
    const args = ["file:///notes/Project%20Beta.md", "# Project Beta\n"];
    const answer = { path: "/notes/Project Beta.md", uri: args[0], created: true };
    const next = vi.fn((_command: string, _args: unknown[]) => Promise.resolve(answer));
    const result = await commands.runServerCommand("lspMemory.createNote", args, next);
    expect(next).toHaveBeenCalledWith("lspMemory.createNote", args);
    expect(result).toEqual(answer);
    expect(written).toHaveBeenCalledTimes(1);
    expect(state.shown).toEqual([]);
  });

  test("a server command run from the editor that fails is one message", async () => {
    const { commands, written } = fakeServer();
    const result = await commands.runServerCommand("lspMemory.createNote", ["file:///n.md", "N"], () =>
      Promise.reject(new Error("file exists")),
    );
    expect(result).toBeUndefined();
    expect(state.shown).toEqual([{ level: "error", message: "lsp-memory: file exists", actions: [] }]);
    expect(written).not.toHaveBeenCalled();
  });

  test("a command without a running server offers Restart", async () => {
    const { commands, restart } = fakeServer({ "lspMemory.reindex": new NotRunning() });
    commands.register();
    state.answers.push("Restart");
    await state.commands.get(COMMANDS.reindexMemory)!();
    await new Promise((resolve) => setImmediate(resolve));
    expect(state.shown).toEqual([
      { level: "error", message: "lsp-memory: the language server is not running.", actions: ["Restart"] },
    ]);
    expect(restart).toHaveBeenCalledTimes(1);
  });

  test("a server error is one message", async () => {
    const { commands } = fakeServer({ "lspMemory.reindex": new Error("database is locked") });
    commands.register();
    await state.commands.get(COMMANDS.reindexMemory)!();
    expect(state.shown).toEqual([{ level: "error", message: "lsp-memory: database is locked", actions: [] }]);
  });
});

describe("unlinked mentions", () => {
  const mention: UnlinkedMention = {
    uri: "file:///notes/meeting.md",
    range: { start: { line: 5, character: 0 }, end: { line: 5, character: 5 } },
    note: "meeting.md",
    title: "meeting",
    text: "Alice",
    snippet: "Alice and  Bob.",
  };

  test("each mention is an item: the note's title, its path and line, the line's text", () => {
    expect(mentionItems([mention])).toEqual([
      { label: "meeting", description: "meeting.md:6", detail: "Alice and Bob.", mention },
    ]);
  });

  test("the command lists the active note's mentions and opens the chosen one, selected", async () => {
    state.activeTextEditor = new TextEditor(
      makeDocument("# Alice Notes\n", "markdown", "file:///notes/alice.md"),
    );
    const { commands, execute } = fakeServer({ "lspMemory.unlinkedMentions": [mention] });
    commands.register();
    state.picks.push(0);
    await state.commands.get(COMMANDS.unlinkedMentions)!();
    expect(execute).toHaveBeenCalledWith("lspMemory.unlinkedMentions", ["file:///notes/alice.md"]);
    expect(state.opened).toHaveLength(1);
    const opened = state.opened[0]!;
    // VS Code's showTextDocument takes the mention's Uri itself.
    expect((opened.document as unknown as Uri).path).toBe("/notes/meeting.md");
    const { selection } = opened.options as { selection: { start: Position; end: Position } };
    expect([selection.start.line, selection.start.character, selection.end.character]).toEqual([5, 0, 5]);
  });

  test("no mention is one message, nothing opened", async () => {
    state.activeTextEditor = new TextEditor(makeDocument("# Alone\n", "markdown", "file:///notes/alone.md"));
    const { commands } = fakeServer({ "lspMemory.unlinkedMentions": [] });
    await commands.unlinkedMentions();
    expect(state.shown).toEqual([
      { level: "information", message: "lsp-memory: no unlinked mentions of this note.", actions: [] },
    ]);
    expect(state.opened).toEqual([]);
  });
});

describe("review memory", () => {
  const item: ReviewItem = {
    id: 3,
    kind: "contradiction",
    proposal: "CONTRADICTION",
    reason: "#4 “I no longer live in Lyon” contradicts #3 “I live in Lyon”",
    stale: false,
    claims: [
      { claim: "#4", statement: "I no longer live in Lyon", status: "contested", confidence: 0.45 },
      { claim: "#3", statement: "I live in Lyon", status: "contested", confidence: 0.45 },
    ],
  };

  test("items show what they are, their claims and why", () => {
    const [picked] = reviewItems([{ ...item, stale: true }]);
    expect(picked!.label).toBe("3. contradiction: proposed CONTRADICTION (out of date)");
    expect(picked!.description).toBe("#4, #3");
    expect(picked!.detail).toBe(item.reason);
  });

  test("nothing to review", async () => {
    const { commands, execute } = fakeServer({ "lspMemory.review": [] });
    await commands.review();
    expect(execute).toHaveBeenCalledWith("lspMemory.review", []);
    expect(state.shown).toEqual([
      { level: "information", message: "lsp-memory: nothing to review.", actions: [] },
    ]);
  });

  test("a decision goes to the server and its answer is shown", async () => {
    state.picks.push(0, 1); // the item, then "Keep both"
    const execute = vi.fn((_command: string, args: unknown[]) =>
      Promise.resolve(
        args.length === 0
          ? [item]
          : { item: 3, run_id: 7, message: "review 3: kept #4, #3, each live (run 7)" },
      ),
    );
    const server = { execute, restart: vi.fn(), uri: String, output: { show: vi.fn() } };
    const written = vi.fn();
    await new Commands(server as unknown as ServerManager, written).review();
    expect(execute.mock.calls.map((call) => call[1])).toEqual([[], ["keep-both", 3]]);
    expect(written).toHaveBeenCalledTimes(1);
    expect(state.shown).toEqual([
      {
        level: "information",
        message: "lsp-memory: review 3: kept #4, #3, each live (run 7)",
        actions: [],
      },
    ]);
  });

  test("a refused decision is one error message", async () => {
    state.picks.push(0, 0);
    const execute = vi.fn((_command: string, args: unknown[]) =>
      args.length === 0
        ? Promise.resolve([item])
        : Promise.reject(new Error("review item 3 is out of date: #3 is now retracted")),
    );
    const server = { execute, restart: vi.fn(), uri: String, output: { show: vi.fn() } };
    const commands = new Commands(server as unknown as ServerManager);
    await commands.review().catch((error: unknown) => commands.report(error));
    expect(state.shown.map((shown) => shown.level)).toEqual(["error"]);
    expect(state.shown[0]!.message).toContain("review item 3 is out of date");
  });
});
