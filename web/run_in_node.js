// Runs a program of the WebAssembly build (a lesson) under node, as the page
// runs it, and copies what it wrote in its memory to a folder on disk:
//
//   node web/run_in_node.js build/web/lessons/04_scoring_functions.js DIR [flags…]
//
// The program writes to out/ in its own file system; DIR gets that folder's
// contents (results.json, transcript.txt, the pictures). The transcript goes
// to this terminal as it prints. Exits with the program's exit code.
"use strict";
const fs = require("fs");
const path = require("path");

const [program, outDir, ...flags] = process.argv.slice(2);
if (!program || !outDir) {
  console.error("usage: node web/run_in_node.js PROGRAM.js OUT_DIR [flags…]");
  process.exit(2);
}

// The program's file calls qkvProgram(name, factory) (lessons/CMakeLists.txt).
let made = null;
globalThis.qkvProgram = (name, wrapper) => { made = { name, factory: wrapper() }; };
require(path.resolve(program));
if (!made) {
  console.error(`${program}: not a program of the WebAssembly build (it did not call qkvProgram)`);
  process.exit(2);
}

// Copies the folder `from` of the program's memory to `to` on disk.
function copyOut(FS, from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const name of FS.readdir(from)) {
    if (name === "." || name === "..") continue;
    const source = `${from}/${name}`;
    if (FS.isDir(FS.stat(source).mode)) copyOut(FS, source, path.join(to, name));
    else fs.writeFileSync(path.join(to, name), FS.readFile(source));
  }
}

(async () => {
  let status = 0;
  const module = await made.factory({
    print: (line) => process.stdout.write(line + "\n"),
    printErr: (line) => process.stderr.write(line + "\n"),
    quit: (code) => { status = code; },
  });
  const started = process.hrtime.bigint();
  const returned = module.callMain(["--out", "/out", ...flags]);
  if (typeof returned === "number") status = returned;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (module.FS.analyzePath("/out").exists) copyOut(module.FS, "/out", path.resolve(outDir));
  process.stderr.write(`${made.name}: exit ${status}, ${seconds.toFixed(3)} s\n`);
  process.exit(status);
})();
