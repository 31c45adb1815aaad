import { beforeEach, expect, test } from "vitest";
import { IndexingProgress, StatusBar, statusView, type Status } from "../src/status";
import { reset, state } from "./vscode";

beforeEach(reset);

test("each status: text, tooltip, click and colour", () => {
  expect(statusView({ kind: "starting" })).toMatchObject({ text: "$(sync~spin) lsp-memory", error: false });
  expect(statusView({ kind: "indexing", percentage: 41.6, message: "notes 5/12" })).toEqual({
    text: "$(sync~spin) lsp-memory 42%",
    tooltip: "lsp-memory: indexing the store and the vaults (notes 5/12); it answers meanwhile",
    command: "lsp-memory.showOutput",
    error: false,
  });
  expect(statusView({ kind: "indexing" }).text).toBe("$(sync~spin) lsp-memory");
  expect(statusView({ kind: "ready", detail: "index ready: 12 written, 0 removed" })).toMatchObject({
    text: "$(database) lsp-memory",
    tooltip: "lsp-memory: ready (index ready: 12 written, 0 removed). Click for the server output.",
  });
  expect(statusView({ kind: "stopped", reason: "the language server was not found." })).toEqual({
    text: "$(error) lsp-memory",
    tooltip: "lsp-memory: stopped. the language server was not found. Click to restart.",
    command: "lsp-memory.restartServer",
    error: true,
  });
});

test("the indexing progress is followed from begin to end; other progress is not", () => {
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

test("the status bar item shows the status, red when stopped", () => {
  const bar = new StatusBar();
  const item = state.statusItems[0]!;
  expect(item.visible).toBe(true);
  expect(item.text).toBe("$(sync~spin) lsp-memory");
  bar.show({ kind: "stopped", reason: "x." });
  expect(item.command).toBe("lsp-memory.restartServer");
  expect(item.backgroundColor).toMatchObject({ id: "statusBarItem.errorBackground" });
  bar.show({ kind: "ready" });
  expect(item.backgroundColor).toBeUndefined();
  bar.dispose();
  expect(item.disposed).toBe(true);
});
