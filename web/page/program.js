// Runs one program of the WebAssembly build (a lesson, translate) in an
// instance of its own: the same code in the page's Web Worker and under node
// (web/run_in_node.js).
//
//   const run = await runProgram(factory, ["--seed", "0"], {
//     line: (text, stream) => …,        // each line it prints, as it prints it
//     picture: (file, svg) => …,        // each SVG in out/, once written (and again if rewritten)
//   });
//   run.status, run.seconds, run.files  // exit code, time in main, every file of out/ by path
//
// The program writes its folder at /out, in the instance's memory. Its
// standard output is not a terminal there (as when piped): progress lines
// come as ordinary lines, with no escape codes.
"use strict";

async function runProgram(factory, args, on) {
  // Bytes to lines: the program writes UTF-8, a byte at a time.
  const decoder = new TextDecoder();
  function lineWriter(stream) {
    let bytes = [];
    const flush = () => {
      on.line(decoder.decode(new Uint8Array(bytes)), stream);
      bytes = [];
    };
    const write = (byte) => {
      if (byte === null) return;  // end of stream
      if (byte === 10) flush();
      else bytes.push(byte < 0 ? byte + 256 : byte);
    };
    write.rest = () => { if (bytes.length) flush(); };
    return write;
  }
  const stdout = lineWriter("stdout"), stderr = lineWriter("stderr");

  // The pictures of out/ seen so far, by path, and their size and time.
  const seen = new Map();
  let module = null;
  let lastLook = 0;
  function lookForPictures(force) {
    const now = Date.now();
    if (!module || (!force && now - lastLook < 200)) return;
    lastLook = now;
    for (const file of filesUnder(module.FS, "/out")) {
      if (!file.endsWith(".svg")) continue;
      const stat = module.FS.stat(file);
      const stamp = `${stat.size}/${stat.mtime.getTime()}`;
      if (seen.get(file) === stamp) continue;
      seen.set(file, stamp);
      on.picture(file.slice("/out/".length), module.FS.readFile(file, { encoding: "utf8" }));
    }
  }

  let status = 0;
  module = await factory({
    preRun: [(m) => m.FS.init(null, (byte) => { stdout(byte); if (byte === 10) lookForPictures(false); }, stderr)],
    // exit(code): keep the code, and throw what emscripten would (an ExitStatus), which
    // unwinds the program; a quit that returned would go on running after exit().
    quit: (code, toThrow) => {
      status = code;
      throw toThrow;
    },
  });
  const started = Date.now();
  try {
    const returned = module.callMain(["--out", "/out", "--color", "never", ...args]);
    if (typeof returned === "number") status = returned;
  } catch (error) {
    if (!(error && error.name === "ExitStatus")) {
      on.line(`the program stopped: ${error}`, "stderr");
      status = status || 1;
    }
  }
  const seconds = (Date.now() - started) / 1000;
  stdout.rest();
  stderr.rest();
  lookForPictures(true);
  const files = {};
  for (const file of filesUnder(module.FS, "/out")) files[file.slice("/out/".length)] = module.FS.readFile(file);
  return { status, seconds, files };
}

// Every file under `folder` of the instance's file system, by full path.
function filesUnder(FS, folder) {
  if (!FS.analyzePath(folder).exists) return [];
  const found = [];
  for (const name of FS.readdir(folder)) {
    if (name === "." || name === "..") continue;
    const path = `${folder}/${name}`;
    if (FS.isDir(FS.stat(path).mode)) found.push(...filesUnder(FS, path));
    else found.push(path);
  }
  return found;
}

if (typeof module !== "undefined" && module.exports) module.exports = { runProgram };
