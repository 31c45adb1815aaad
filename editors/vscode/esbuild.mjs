// Bundles the extension and vscode-languageclient into dist/extension.js (or the file given
// as the argument): CommonJS for the Node.js of VS Code >= 1.91; `vscode` is provided by the
// editor at run time.
import { URL, fileURLToPath } from "node:url";
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  outfile: process.argv[2] ?? "dist/extension.js",
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  minify: true,
  keepNames: true,
  sourcemap: false,
  logLevel: "warning",
  absWorkingDir: fileURLToPath(new URL(".", import.meta.url)),
});
