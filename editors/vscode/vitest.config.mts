// Unit tests run in Node with the `vscode` module replaced by test/vscode.ts (test/setup.ts
// hands the same mock to vscode-languageclient's own `require("vscode")`).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: { vscode: fileURLToPath(new URL("./test/vscode.ts", import.meta.url)) },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
    setupFiles: ["test/setup.ts"],
    restoreMocks: true,
  },
});
