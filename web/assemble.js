// Assembles the live course page: one static folder that works from file://
// and from any static web server.
//
//   node web/assemble.js BUILD_DIR OUT_DIR SOURCE_DIR EMSCRIPTEN_VERSION
//
// OUT_DIR/index.html, style.css, course.js, program.js   from web/page/
// OUT_DIR/programs/NN_name.js, translate.js, panels.js    the WebAssembly build's programs
// OUT_DIR/course-data.js   the lessons (each one's --describe), the models
//                          translate.js holds (BUILD_DIR/web/models.json), the build
// (CMake's `web_page` target runs this; ./qkv.sh web builds that target.)
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const { runProgram } = require("./page/program.js");

const [buildDir, outDir, sourceDir, emscriptenVersion] = process.argv.slice(2);
if (!emscriptenVersion) {
  console.error("usage: node web/assemble.js BUILD_DIR OUT_DIR SOURCE_DIR EMSCRIPTEN_VERSION");
  process.exit(2);
}

// The program in `file`: its factory, as the page gets it through qkvProgram().
function factoryOf(file) {
  let made = null;
  globalThis.qkvProgram = (name, wrapper) => { made = wrapper(); };
  require(path.resolve(file));
  if (!made) throw new Error(`${file}: not a program of the WebAssembly build (it did not call qkvProgram)`);
  return made;
}

// A float flag's value as the lesson's source declares it: `--describe` writes the
// float32 as a double (0.01f is 0.009999999776482582), and the shortest decimal
// that reads back as the same float32 is what the source wrote (0.01).
function declaredFloat(value) {
  for (let digits = 1; digits <= 9; ++digits) {
    const shortest = Number(value.toPrecision(digits));
    if (Math.fround(shortest) === Math.fround(value)) return shortest;
  }
  return value;  // (9 significant digits always read back: not reached)
}

// A lesson's catalogue row and flags, from `--describe`.
async function describe(file) {
  let text = "";
  const run = await runProgram(factoryOf(file), ["--describe"], { line: (line) => (text += line), picture: () => {} });
  if (run.status !== 0) throw new Error(`${file} --describe: exit status ${run.status}`);
  const lesson = JSON.parse(text);
  lesson.flags = lesson.flags.filter((f) => f.flag !== "--data");  // the page's data are embedded
  for (const flag of lesson.flags)
    if (flag.type === "float") flag.default = declaredFloat(flag.default);
  return lesson;
}

function commit() {
  try {
    const id = execFileSync("git", ["-C", sourceDir, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["-C", sourceDir, "status", "--porcelain", "--untracked-files=no"],
                               { encoding: "utf8" }).trim();
    return dirty ? `${id} (with uncommitted changes)` : id;
  } catch {
    return "(not a git checkout)";
  }
}

// Every instance of a program adds its own process listeners under node: 13 here, once each.
process.setMaxListeners(0);

(async () => {
  const programsDir = path.join(outDir, "programs");
  fs.mkdirSync(programsDir, { recursive: true });
  for (const file of ["index.html", "style.css", "course.js", "program.js"])
    fs.copyFileSync(path.join(__dirname, "page", file), path.join(outDir, file));

  const lessonFiles = fs.readdirSync(path.join(buildDir, "lessons")).filter((f) => /^\d\d_.*\.js$/.test(f)).sort();
  const lessons = [];
  for (const file of lessonFiles) {
    lessons.push(await describe(path.join(buildDir, "lessons", file)));
    fs.copyFileSync(path.join(buildDir, "lessons", file), path.join(programsDir, file));
  }
  fs.copyFileSync(path.join(buildDir, "lessons", "translate.js"), path.join(programsDir, "translate.js"));
  fs.copyFileSync(path.join(buildDir, "web", "panels.js"), path.join(programsDir, "panels.js"));
  // Each model as the page names it: its file inside translate.js, and who trained it how
  // (the trained_by of the native file's metadata: a safetensors file starts with its JSON header).
  const models = JSON.parse(fs.readFileSync(path.join(buildDir, "web", "models.json"), "utf8")).map((m) => {
    const bytes = fs.readFileSync(m.native);
    const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString("utf8"));
    return { lesson: m.lesson, file: m.file, trained: header.__metadata__.trained_by };
  });

  const course = {
    build: { commit: commit(), date: new Date().toISOString().slice(0, 10), emscripten: emscriptenVersion },
    lessons,
    models,
  };
  fs.writeFileSync(path.join(outDir, "course-data.js"),
                   `// Written by web/assemble.js: the lessons, the models and the build.\n` +
                   `window.qkvCourse = ${JSON.stringify(course, null, 1)};\n`);
  console.log(`${outDir}: ${lessons.length} lessons, ${models.length} models: open ${path.join(outDir, "index.html")}`);
})().catch((error) => {
  console.error(`web/assemble.js: ${error.message}`);
  process.exit(1);
});
