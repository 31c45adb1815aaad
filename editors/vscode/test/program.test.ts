import { chmodSync, mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { findProgram } from "../src/program";

let root = "";
let bin = "";

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), "lsp-memory-program-"));
  bin = path.join(root, "bin");
  mkdirSync(bin);
  mkdirSync(path.join(bin, "a-folder"));
  writeFileSync(path.join(bin, "lsp-memory"), "#!/bin/sh\n");
  chmodSync(path.join(bin, "lsp-memory"), 0o755);
  writeFileSync(path.join(bin, "not-executable"), "");
  chmodSync(path.join(bin, "not-executable"), 0o644);
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

test.skipIf(process.platform === "win32")("a bare name is looked up on PATH", async () => {
  const env = { PATH: ["/nonexistent", bin].join(path.delimiter) };
  expect(await findProgram("lsp-memory", env)).toBe(path.join(bin, "lsp-memory"));
  expect(await findProgram("lsp-memory", { PATH: "/nonexistent" })).toBeUndefined();
  expect(await findProgram("lsp-memory", {})).toBeUndefined();
});

test.skipIf(process.platform === "win32")("a path must be an executable file", async () => {
  expect(await findProgram(path.join(bin, "lsp-memory"), {})).toBe(path.join(bin, "lsp-memory"));
  expect(await findProgram(path.join(bin, "missing"), {})).toBeUndefined();
  expect(await findProgram(path.join(bin, "not-executable"), {})).toBeUndefined();
  expect(await findProgram(path.join(bin, "a-folder"), {})).toBeUndefined();
  expect(await findProgram("not-executable", { PATH: bin })).toBeUndefined();
});
