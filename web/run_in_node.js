// Runs a program of the WebAssembly build (a lesson, translate) under node,
// as the page runs it (web/page/program.js), and copies what it wrote to a
// folder on disk:
//
//   node web/run_in_node.js build/web/lessons/04_scoring_functions.js DIR [flags…]
//
// DIR gets its out/ folder (results.json, transcript.txt, the pictures); the
// transcript goes to this terminal as it prints. Exits with the program's
// exit code, after a line on stderr with the time main took.
"use strict";
const fs = require("fs");
const path = require("path");
const { runProgram } = require("./page/program.js");

const [program, outDir, ...flags] = process.argv.slice(2);
if (!program || !outDir) {
  console.error("usage: node web/run_in_node.js PROGRAM.js OUT_DIR [flags…]");
  process.exit(2);
}

// The program's file hands its factory to qkvProgram(name, wrapper) (lessons/CMakeLists.txt).
let made = null;
globalThis.qkvProgram = (name, wrapper) => { made = { name, factory: wrapper() }; };
require(path.resolve(program));
if (!made) {
  console.error(`${program}: not a program of the WebAssembly build (it did not call qkvProgram)`);
  process.exit(2);
}

(async () => {
  const run = await runProgram(made.factory, flags, {
    line: (text, stream) => (stream === "stderr" ? process.stderr : process.stdout).write(text + "\n"),
    picture: () => {},
  });
  for (const [file, bytes] of Object.entries(run.files)) {
    const to = path.join(path.resolve(outDir), file);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.writeFileSync(to, bytes);
  }
  process.stderr.write(`${made.name}: exit ${run.status}, ${run.seconds.toFixed(3)} s\n`);
  process.exit(run.status);
})();
