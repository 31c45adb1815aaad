// Checks a .vsix (a zip): it holds the bundle, the manifest, the README and the licence, and
// no node_modules. Reads the zip's central directory itself, so CI needs no unzip.
import { readFileSync } from "node:fs";

const file = process.argv[2];
if (!file) throw new Error("usage: node scripts/check-vsix.mjs <file.vsix>");
const zip = readFileSync(file);

// The end-of-central-directory record: signature 0x06054b50, within the last 64 KiB.
let end = -1;
for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
  if (zip.readUInt32LE(i) === 0x06054b50) {
    end = i;
    break;
  }
}
if (end < 0) throw new Error(`${file} is not a zip file`);
const count = zip.readUInt16LE(end + 10);
let at = zip.readUInt32LE(end + 16);
const names = [];
for (let n = 0; n < count; n++) {
  if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`${file}: bad central directory`);
  const nameLength = zip.readUInt16LE(at + 28);
  const extraLength = zip.readUInt16LE(at + 30);
  const commentLength = zip.readUInt16LE(at + 32);
  names.push(zip.toString("utf8", at + 46, at + 46 + nameLength));
  at += 46 + nameLength + extraLength + commentLength;
}

const required = [
  "extension/dist/extension.js",
  "extension/package.json",
  "extension/readme.md",
  "extension/LICENSE.txt",
];
const missing = required.filter((name) => !names.includes(name));
const modules = names.filter((name) => name.includes("node_modules/"));
if (missing.length > 0 || modules.length > 0) {
  console.error(`${file}: missing ${missing.join(", ") || "nothing"}; node_modules files: ${modules.length}`);
  process.exit(1);
}
console.log(`${file}: ${names.length} files: ${names.join(", ")}`);
