import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import type { MemoryStatus } from "../src/protocol";
import {
  CountsRefresher,
  IndexingProgress,
  LanguageStatus,
  REFRESH_INTERVAL_MS,
  askCounts,
  isUnknownCommand,
  statusView,
  type CountsAnswer,
  type Status,
} from "../src/status";
import { LanguageStatusSeverity, reset, state } from "./vscode";

beforeEach(reset);

/** What `lspMemory.status` answers, as `lsp-memory status --json` prints it. */
const COUNTS: MemoryStatus = {
  user: "priya",
  claims: { total: 1234, active: 1200, superseded: 34 },
  contexts: 5,
  entities: 12,
  notes: 48,
  episodes: 0,
  sessions: 0,
  review_items: 0,
  index: { embedded: 1270, pending: 17 },
  paths: { store: "/s/memory.sqlite3", index: "/c/indexes/x", vaults: ["/notes"] },
};

describe("the view", () => {
  test("starting and indexing are busy, and say what happens", () => {
    expect(statusView({ kind: "starting" }, undefined)).toMatchObject({
      text: "lsp-memory: starting",
      busy: true,
      error: false,
      command: { command: "lspMemory.showOutput" },
    });
    expect(statusView({ kind: "indexing", percentage: 41.6, message: "notes 5/12" }, undefined)).toEqual({
      text: "lsp-memory: indexing 42%",
      detail: "notes 5/12; it answers meanwhile",
      busy: true,
      error: false,
      command: { title: "Show output", command: "lspMemory.showOutput" },
    });
    expect(statusView({ kind: "indexing" }, undefined).text).toBe("lsp-memory: indexing");
  });

  test("ready: the counts when known, else the index report", () => {
    expect(
      statusView({ kind: "ready", detail: "index ready: 12 written, 0 removed" }, undefined),
    ).toMatchObject({
      text: "lsp-memory: ready",
      detail: "index ready: 12 written, 0 removed",
      busy: false,
    });
    expect(statusView({ kind: "ready" }, COUNTS, "en")).toMatchObject({
      text: "lsp-memory: 1,234 claims",
      detail: "48 notes · 1,270 embedded, 17 pending",
      busy: false,
      error: false,
    });
    const one = { ...COUNTS, claims: { total: 1 }, notes: 1, review_items: 3 };
    expect(statusView({ kind: "ready" }, one, "en")).toMatchObject({
      text: "lsp-memory: 1 claim",
      detail: "1 note · 1,270 embedded, 17 pending · 3 to review",
    });
    // Numbers in the editor's language.
    expect(statusView({ kind: "ready" }, COUNTS, "de").text).toBe("lsp-memory: 1.234 claims");
  });

  test("stopped is an error, with the reason and a click to restart", () => {
    expect(statusView({ kind: "stopped", reason: "the language server was not found." }, COUNTS)).toEqual({
      text: "lsp-memory: stopped",
      detail: "the language server was not found.",
      busy: false,
      error: true,
      command: { title: "Restart", command: "lspMemory.restartServer" },
    });
  });
});

describe("the indexing progress", () => {
  test("followed from begin to end; other progress is not", () => {
    const shown: Status[] = [];
    const progress = new IndexingProgress((status) => shown.push(status));
    progress.handle("other", { kind: "begin", title: "something else" });
    progress.handle("other", { kind: "report", percentage: 50 });
    progress.handle("other", { kind: "end" });
    expect(shown).toEqual([]);
    progress.handle("lsp-memory-index-1", { kind: "begin", title: "lsp-memory: indexing", percentage: 0 });
    progress.handle("lsp-memory-index-1", { kind: "report", message: "notes 3/10", percentage: 30 });
    progress.handle("lsp-memory-index-1", { kind: "end", message: "index ready: 10 written, 0 removed" });
    progress.handle("lsp-memory-index-1", { kind: "report", percentage: 99 });
    expect(shown).toEqual([
      { kind: "indexing", percentage: 0, message: undefined },
      { kind: "indexing", percentage: 30, message: "notes 3/10" },
      { kind: "ready", detail: "index ready: 10 written, 0 removed" },
    ]);
  });

  test("cleared progress (a stopped server) ends nothing later", () => {
    const shown: Status[] = [];
    const progress = new IndexingProgress((status) => shown.push(status));
    progress.handle(7, { kind: "begin", title: "lsp-memory: indexing" });
    progress.clear();
    progress.handle(7, { kind: "end" });
    expect(shown).toHaveLength(1);
  });
});

describe("the language status item", () => {
  test("a language status item, not a status bar item; red when stopped", () => {
    const status = new LanguageStatus("en");
    const item = state.languageStatusItems[0]!;
    expect(item.id).toBe("lspMemory.status");
    expect(item.name).toBe("lsp-memory");
    expect(item.selector).toEqual([]);
    status.selector = [{ language: "markdown", scheme: "file" }];
    expect(item.selector).toEqual([{ language: "markdown", scheme: "file" }]);
    status.show({ kind: "starting" });
    expect(item).toMatchObject({ text: "lsp-memory: starting", busy: true });
    status.show({ kind: "ready" });
    status.showCounts(COUNTS);
    expect(item).toMatchObject({ text: "lsp-memory: 1,234 claims", busy: false });
    expect(item.detail).toBe("48 notes · 1,270 embedded, 17 pending");
    expect(item.severity).toBe(LanguageStatusSeverity.Information);
    // Indexing again (new settings): the counts are kept for when it ends.
    status.show({ kind: "indexing" });
    status.show({ kind: "ready" });
    expect(item.text).toBe("lsp-memory: 1,234 claims");
    status.show({ kind: "stopped", reason: "x." });
    expect(item.severity).toBe(LanguageStatusSeverity.Error);
    expect(item.command).toEqual({ title: "Restart", command: "lspMemory.restartServer" });
    // A new server starts without the old one's counts.
    status.show({ kind: "ready" });
    expect(item.text).toBe("lsp-memory: ready");
    status.dispose();
    expect(item.disposed).toBe(true);
  });
});

describe("asking for the counts", () => {
  const server = (announced: boolean | undefined, answer: () => Promise<unknown>) => ({
    announces: vi.fn((_command: string) => announced),
    execute: vi.fn((_command: string, _args: unknown[]) => answer()),
  });

  test("the answer of lspMemory.status", async () => {
    const asked = server(true, () => Promise.resolve(COUNTS));
    expect(await askCounts(asked)).toEqual(COUNTS);
    expect(asked.execute).toHaveBeenCalledWith("lspMemory.status", []);
  });

  test("an older server: not announced, or not known when asked", async () => {
    const silent = server(false, () => Promise.resolve(COUNTS));
    expect(await askCounts(silent)).toBe("unsupported");
    expect(silent.execute).not.toHaveBeenCalled();
    const pygls = new Error("Command name 'lspMemory.status' is not defined");
    expect(await askCounts(server(undefined, () => Promise.reject(pygls)))).toBe("unsupported");
    const notFound = Object.assign(new Error("Unhandled method workspace/executeCommand"), { code: -32601 });
    expect(isUnknownCommand(notFound)).toBe(true);
  });

  test("another failure, or an answer that is not a status, is an error", async () => {
    await expect(
      askCounts(server(true, () => Promise.reject(new Error("database is locked")))),
    ).rejects.toThrow("database is locked");
    await expect(askCounts(server(true, () => Promise.resolve({ claims: 3 })))).rejects.toThrow(
      "not a status",
    );
  });
});

describe("the refresher", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function refresher(answers: (() => Promise<CountsAnswer>)[]) {
    const shown: MemoryStatus[] = [];
    const logged: string[] = [];
    const fetch = vi.fn(() => (answers.shift() ?? (() => Promise.resolve(COUNTS)))());
    const counts = new CountsRefresher(
      fetch,
      (found) => shown.push(found),
      (message) => logged.push(message),
      REFRESH_INTERVAL_MS,
      () => Date.now(),
    );
    return { counts, fetch, shown, logged };
  }

  test("asks at once, then at most once every few seconds; requests within are one", async () => {
    const { counts, fetch, shown } = refresher([]);
    counts.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(fetch).toHaveBeenCalledTimes(1);
    expect(shown).toEqual([COUNTS]);
    counts.request();
    counts.request();
    counts.request();
    await vi.advanceTimersByTimeAsync(REFRESH_INTERVAL_MS - 1);
    expect(fetch).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(fetch).toHaveBeenCalledTimes(2);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(fetch).toHaveBeenCalledTimes(2);
  });

  test("a delayed request waits; an old answer refreshes only when stale", async () => {
    const { counts, fetch } = refresher([]);
    counts.request(5000);
    await vi.advanceTimersByTimeAsync(4999);
    expect(fetch).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(fetch).toHaveBeenCalledTimes(1);
    counts.requestIfOlder(60_000);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fetch).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(50_000);
    counts.requestIfOlder(60_000);
    await vi.advanceTimersByTimeAsync(0);
    expect(fetch).toHaveBeenCalledTimes(2);
  });

  test("a server without the command is not asked again, until a new server", async () => {
    const { counts, fetch, logged } = refresher([() => Promise.resolve("unsupported")]);
    counts.request();
    await vi.advanceTimersByTimeAsync(0);
    counts.request();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(fetch).toHaveBeenCalledTimes(1);
    expect(logged).toEqual(["the server has no lspMemory.status command: the status shows no counts"]);
    counts.reset();
    counts.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(fetch).toHaveBeenCalledTimes(2);
  });

  test("a failure keeps the counts known before", async () => {
    const { counts, shown, logged } = refresher([
      () => Promise.resolve(COUNTS),
      () => Promise.reject(new Error("database is locked")),
    ]);
    counts.request();
    await vi.advanceTimersByTimeAsync(0);
    counts.request();
    await vi.advanceTimersByTimeAsync(REFRESH_INTERVAL_MS);
    expect(shown).toEqual([COUNTS]);
    expect(logged).toEqual(["lspMemory.status failed: database is locked"]);
  });
});
