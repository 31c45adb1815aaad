/**
 * Whether a server program exists before it is started: a missing program is then one clear
 * message instead of a spawn error, a failed connection and a client error report.
 */

import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import * as path from "node:path";

/**
 * The file a program name or path runs, or `undefined` when there is none: a path (with a
 * separator) must be an executable file; a bare name is looked up on `PATH` (with
 * `PATHEXT`'s extensions on Windows).
 */
export async function findProgram(
  program: string,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): Promise<string | undefined> {
  const windows = platform === "win32";
  const extensions = windows
    ? ["", ...(env.PATHEXT ?? ".COM;.EXE;.BAT;.CMD").split(";").filter(Boolean)]
    : [""];
  const bare = !program.includes("/") && !(windows && program.includes("\\"));
  const folders = bare ? (env.PATH ?? env.Path ?? "").split(path.delimiter).filter(Boolean) : [""];
  for (const folder of folders) {
    for (const extension of extensions) {
      const candidate = folder === "" ? program + extension : path.join(folder, program + extension);
      if (await runnable(candidate, windows)) {
        return candidate;
      }
    }
  }
  return undefined;
}

async function runnable(file: string, windows: boolean): Promise<boolean> {
  try {
    if (!(await stat(file)).isFile()) return false;
    await access(file, windows ? constants.F_OK : constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
