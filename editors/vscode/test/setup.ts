/**
 * Makes Node's own `require("vscode")` — vscode-languageclient's, which Vite's alias does not
 * see — return the same mock as the extension's `import "vscode"`. A name the mock lacks
 * is a do-nothing class, so the client's modules load.
 */

import Module, { createRequire } from "node:module";
import * as path from "node:path";
import * as mock from "./vscode";

const ID = "/virtual/vscode-mock.js";
const stubs = new Map<string, unknown>();

/** An API namespace (window, workspace, languages…) whose missing `register…`/`create…`
 * functions return a disposable and whose missing `onDid…`/`onWill…` events never fire:
 * what vscode-languageclient needs of the parts of the editor no test looks at. */
function namespace(target: object): object {
  return new Proxy(target, {
    get(object, name: string | symbol) {
      if (typeof name === "symbol" || name in object) return Reflect.get(object, name) as unknown;
      if (/^(register|create)/.test(name)) return () => new mock.Disposable();
      if (/^on(Did|Will)/.test(name)) return () => new mock.Disposable();
      return undefined;
    },
  });
}

const namespaces = new Map<string, object>(
  (["window", "workspace", "languages", "commands", "env", "extensions"] as const).map((name) => [
    name,
    namespace(mock[name]),
  ]),
);

const exports = new Proxy(mock, {
  get(target, name: string | symbol) {
    if (typeof name === "symbol") return Reflect.get(target, name) as unknown;
    const space = namespaces.get(name);
    if (space !== undefined) return space;
    if (name in target) return Reflect.get(target, name) as unknown;
    let stub = stubs.get(name);
    if (stub === undefined) {
      // eslint-disable-next-line @typescript-eslint/no-extraneous-class -- a stand-in base class
      stub = class {};
      stubs.set(name, stub);
    }
    return stub;
  },
});

const loader = Module as unknown as {
  _resolveFilename(request: string, ...rest: unknown[]): string;
};
const resolve = loader._resolveFilename.bind(loader);
loader._resolveFilename = (request: string, ...rest: unknown[]) =>
  request === "vscode" ? ID : resolve(request, ...rest);
const cache = createRequire(path.resolve("package.json")).cache;
cache[ID] = { id: ID, filename: ID, loaded: true, exports } as unknown as NodeJS.Module;
