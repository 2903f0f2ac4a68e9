// The live course page. course-data.js (written by web/assemble.js) lists the
// lessons with their flags, the build and the trained models; this file
// draws a section per lesson and runs what the learner asks for:
//
//   a lesson   its program (programs/NN_name.js) in a Web Worker, a fresh
//              instance per run: the transcript streams into the terminal
//              panel as it prints, each SVG appears once written;
//   a panel    programs/panels.js, one instance in the page, called again on
//              every change of a knob (web/panels.hpp: a request as JSON in,
//              SVG pictures and numbers out);
//   translate  lessons/translate with a model lesson 08 or 11 trained natively
//              (embedded in programs/translate.js), in a Worker like a lesson.
//
// A page opened from file:// may load a <script> but not fetch a file, and a
// Worker needs a script it can fetch: so each program's file hands its factory
// function to qkvProgram(), and a Worker is started from a Blob holding that
// function's own source text (Function.prototype.toString) and runProgram's.
"use strict";

const programs = {};  // name -> the function that returns the program's factory
function qkvProgram(name, wrapper) {
  programs[name] = wrapper;
}

const $ = (tag, attributes = {}, ...children) => {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "class") element.className = value;
    else if (key in element && typeof value !== "string") element[key] = value;
    else element.setAttribute(key, value);
  }
  element.append(...children);
  return element;
};

// ---- loading and running programs ---------------------------------------------------

function loadProgram(name) {
  if (programs[name]) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const script = $("script", { src: `programs/${name}.js` });
    script.onload = () =>
      programs[name] ? resolve() : reject(new Error(`programs/${name}.js did not define the program ${name}`));
    script.onerror = () => reject(new Error(`programs/${name}.js could not be loaded`));
    document.head.append(script);
  });
}

// The Worker's side: run the program once with the flags it is sent.
function workerMain() {
  self.onmessage = async (event) => {
    const run = await runProgram(factory, event.data.args, {
      line: (text, stream) => postMessage({ kind: "line", text, stream }),
      picture: (file, svg) => postMessage({ kind: "picture", file, svg }),
    });
    const text = (file) => (run.files[file] ? new TextDecoder().decode(run.files[file]) : null);
    postMessage({ kind: "done", status: run.status, seconds: run.seconds, results: text("results.json") });
  };
}

// Runs program `name` with `args` in a Worker of its own. on.line(text, stream)
// and on.picture(file, svg) as it goes; resolves to {status, seconds, results}.
async function runInWorker(name, args, on) {
  await loadProgram(name);
  const source = [
    '"use strict";',
    runProgram.toString(),
    filesUnder.toString(),
    `const factory = (${programs[name].toString()})();`,
    `(${workerMain.toString()})();`,
  ].join("\n");
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const worker = new Worker(url);
  return new Promise((resolve, reject) => {
    worker.onmessage = (event) => {
      const message = event.data;
      if (message.kind === "line") on.line(message.text, message.stream);
      else if (message.kind === "picture") on.picture(message.file, message.svg);
      else {
        worker.terminate();
        URL.revokeObjectURL(url);
        resolve({ status: message.status, seconds: message.seconds, results: message.results });
      }
    };
    worker.onerror = (event) => {
      worker.terminate();
      URL.revokeObjectURL(url);
      reject(new Error(event.message || "the program's worker failed"));
    };
    worker.postMessage({ args });
  });
}

// ---- pictures -----------------------------------------------------------------------

// An SVG written by qkv's viz, shown inline (so its cells can be hovered).
function figure(file, svg, caption) {
  const holder = $("div", { class: "svg" });
  holder.innerHTML = svg.replace(/^<\?xml[^>]*>\s*/, "");
  return $("figure", { "data-file": file }, holder, $("figcaption", {}, caption || file));
}

// Hovering a heatmap cell: its row, column and value (each cell's <title> is "row, col: value");
// hovering a block of a model picture: its shapes.
function followHover() {
  const box = document.getElementById("hover");
  document.addEventListener("mousemove", (event) => {
    const cell = event.target.closest && event.target.closest("rect.cell");
    const title = cell && cell.querySelector("title");
    const match = title && /^(.*), (.*): (.*)$/.exec(title.textContent);
    // A block of a model picture: its name, shapes in and out, parameters (its <title>'s lines).
    const block = !match && event.target.closest && event.target.closest("g.module");
    if (!match && !block) {
      box.hidden = true;
      return;
    }
    box.textContent = match
      ? `row ${match[1]}, column ${match[2]}: ${match[3]}`
      : block.querySelector("title").textContent.replace(/\n/g, " · ");
    box.style.left = `${event.clientX + 12}px`;
    box.style.top = `${event.clientY + 12}px`;
    box.hidden = false;
  });
}

// ---- a lesson's section ---------------------------------------------------------------

const lastResults = {};  // program -> the results.json of its last run here (the browser test reads it)
window.qkvResults = lastResults;

function lessonSection(lesson) {
  const number = String(lesson.number).padStart(2, "0");
  const form = $("form", { class: "flags" });
  const inputs = [];
  for (const flag of lesson.flags) {
    const input = $("input", { name: flag.flag, value: String(flag.default) });
    if (flag.type === "float") Object.assign(input, { type: "text", inputMode: "decimal" });
    else Object.assign(input, { type: "number", step: "1", min: String(flag.type === "seed" ? 0 : flag.min) });
    input.title = flag.help;
    inputs.push(input);
    form.append($("label", {}, flag.flag, input));
  }
  const button = $("button", { type: "submit" }, "Run");
  form.append(button);
  const status = $("p", { class: "status run-status" }, "Not run yet in this page.");
  const terminal = $("pre", { class: "terminal" });
  const pictures = $("div", { class: "pictures run-pictures" });
  const section = $("section", { class: "lesson", id: `lesson-${number}`, "data-program": lesson.program },
                    $("h2", {}, `Lesson ${number} · ${lesson.title}`),
                    $("p", { class: "sections", lang: "zh" }, `Sections of the notes: ${lesson.sections}`));
  for (const panel of livePanels.filter((p) => p.lessons.includes(lesson.number))) {
    const element = panelElement(panel);
    section.append(element);
    // Lesson 03's panel moves to the w lesson 03 learned, once it has run here.
    if (panel.panel === "kernel" && lesson.number === 3)
      section.addEventListener("results", (event) => {
        if (typeof event.detail.results.w === "number") element.setKnob("w", event.detail.results.w);
      });
  }
  if (course.models.some((m) => m.lesson === lesson.number)) section.append(translateBox(lesson));
  section.append(form, status, terminal, pictures);

  form.onsubmit = async (event) => {
    event.preventDefault();
    const args = [];
    inputs.forEach((input, i) => {
      if (input.value !== String(lesson.flags[i].default)) args.push(input.name, input.value);
    });
    button.disabled = true;
    terminal.textContent = "";
    pictures.textContent = "";
    status.className = "status run-status";
    status.textContent = `Running ${lesson.program} ${args.join(" ")}…`;
    const shown = new Map();
    try {
      const run = await runInWorker(lesson.program, args, {
        line: (text, stream) => {
          terminal.append(stream === "stderr" ? $("span", { class: "stderr" }, text + "\n") : text + "\n");
          terminal.scrollTop = terminal.scrollHeight;
        },
        picture: (file, svg) => {
          const shownFigure = figure(file, svg);
          if (shown.has(file)) shown.get(file).replaceWith(shownFigure);
          else pictures.append(shownFigure);
          shown.set(file, shownFigure);
        },
      });
      if (run.results) {
        const results = JSON.parse(run.results);
        lastResults[lesson.program] = results;
        for (const picture of results.pictures || []) {  // the caption: what the lesson says it shows
          const caption = shown.get(picture.file) && shown.get(picture.file).querySelector("figcaption");
          if (caption) caption.textContent = `${picture.file}: ${picture.shows}`;
        }
        section.dispatchEvent(new CustomEvent("results", { detail: results }));
      }
      status.className = `status run-status ${run.status === 0 ? "finished" : "failed"}`;
      status.textContent = run.status === 0
        ? `Finished in ${run.seconds.toFixed(2)} s (in this page: scalar kernels, one thread).`
        : `Failed (exit status ${run.status}) after ${run.seconds.toFixed(2)} s: the terminal says why.`;
      section.dataset.runs = String(Number(section.dataset.runs || 0) + 1);
    } catch (error) {
      status.className = "status run-status failed";
      status.textContent = `Could not run ${lesson.program}: ${error.message}`;
    }
    button.disabled = false;
  };
  return section;
}

// ---- live panels ------------------------------------------------------------------------
// Each knob becomes a field of the request (web/panels.hpp has the panels' math).

const livePanels = [
  {
    panel: "kernel", lessons: [2, 3], title: "Live: the kernel's w",
    about: "Nadaraya–Watson weighs each training point by exp(-((x - xᵢ)·w)²/2): w = 1 is lesson 02; lesson 03 " +
           "learns w. A larger w is a narrower kernel: sharper weights, a curve that follows the nearest points.",
    knobs: [{ name: "w", label: "w", kind: "range", min: 0.1, max: 40, step: 0.1, value: 1 }],
  },
  {
    panel: "scoring", lessons: [4], title: "Live: the query, the valid length, the scale",
    about: "One query scored against lesson 04's three keys, q·k/√d (or q·k without the scale), then the " +
           "masked softmax over the first valid_len keys. Without the scale a long query makes the softmax nearly one-hot.",
    knobs: [
      { name: "query", label: "query (4 numbers)", kind: "vector", length: 4 },
      { name: "valid_len", label: "valid_len", kind: "range", min: 1, max: 3, step: 1, value: 3 },
      { name: "scale", label: "divide by √d", kind: "checkbox", value: true },
    ],
  },
  {
    panel: "heads", lessons: [9], title: "Live: the number of heads",
    about: "Lesson 09's layer (num_hiddens 100) split into h heads, each scoring with 100/h features of the same " +
           "projections: every head's weights, one column of the grid per head.",
    knobs: [{ name: "num_heads", label: "heads", kind: "select", options: [1, 2, 4, 5, 10, 20, 25], value: 5 }],
  },
  {
    panel: "positional", lessons: [10], title: "Live: positions, dimensions and the shift δ",
    about: "P[i, 2j] = sin(i/10000^(2j/d)), P[i, 2j+1] = cos(i/10000^(2j/d)); the check: P[i+δ] = R(δ)·P[i] " +
           "for every i, R(δ) a rotation of each column pair.",
    knobs: [
      { name: "positions", label: "positions", kind: "range", min: 2, max: 128, step: 1, value: 60 },
      { name: "dims", label: "dims", kind: "range", min: 2, max: 64, step: 2, value: 32 },
      { name: "shift", label: "shift δ", kind: "range", min: 0, max: 40, step: 1, value: 5 },
    ],
  },
];

// qkv_panel(request) of the one instance of programs/panels.js, once it is loaded: one
// promise, which every panel's first draw waits on (they start together).
let panelsCall = null;
async function callPanel(request) {
  if (!panelsCall)
    panelsCall = loadProgram("panels")
                     .then(() => programs.panels()({}))
                     .then((instance) => instance.cwrap("qkv_panel", "string", ["string"]));
  const call = await panelsCall;
  return JSON.parse(call(JSON.stringify(request)));
}

function formatValue(value) {
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  if (Array.isArray(value)) return `[${value.map(formatValue).join(", ")}]`;
  if (value && typeof value === "object") return JSON.stringify(value);
  return String(value);
}

function panelElement(spec) {
  const knobs = $("div", { class: "knobs" });
  const controls = {};
  for (const knob of spec.knobs) {
    let control;
    const shown = $("output");
    if (knob.kind === "range") {
      control = $("input", { type: "range", min: String(knob.min), max: String(knob.max), step: String(knob.step),
                             value: String(knob.value) });
      shown.textContent = String(knob.value);
      control.addEventListener("input", () => (shown.textContent = control.value));
    } else if (knob.kind === "checkbox") {
      control = $("input", { type: "checkbox" });
      control.checked = knob.value;
    } else if (knob.kind === "select") {
      control = $("select", {}, ...knob.options.map((o) => $("option", { value: String(o) }, String(o))));
      control.value = String(knob.value);
    } else {  // a vector: its numbers, separated by spaces or commas (the lesson's query until changed)
      control = $("input", { type: "text", size: "28", placeholder: "lesson 04's query" });
    }
    control.name = knob.name;
    controls[knob.name] = { knob, control };
    knobs.append($("label", {}, knob.label, control, shown));
  }
  const note = $("p", { class: "status" });
  const values = $("table", { class: "values" });
  const pictures = $("div", { class: "pictures" });
  const element = $("div", { class: "panel", "data-panel": spec.panel },
                    $("h3", {}, spec.title), $("p", {}, spec.about), knobs, note, values, pictures);

  const request = () => {
    const r = { panel: spec.panel };
    for (const { knob, control } of Object.values(controls)) {
      if (knob.kind === "checkbox") r[knob.name] = control.checked;
      else if (knob.kind === "vector") {
        if (control.value.trim() !== "") r[knob.name] = control.value.trim().split(/[\s,]+/).map(Number);
      } else r[knob.name] = Number(control.value);
    }
    return r;
  };
  let pending = false, busy = false;
  const redraw = async () => {
    if (busy) {
      pending = true;  // a knob moved while computing: once more when done, with where it is now
      return;
    }
    busy = true;
    const started = performance.now();
    try {
      const answer = await callPanel(request());
      const ms = performance.now() - started;
      if (answer.error) {
        note.className = "status error";
        note.textContent = answer.error;
      } else {
        note.className = "status";
        note.textContent = `Computed in ${ms.toFixed(0)} ms.`;
        values.textContent = "";
        for (const [key, value] of Object.entries(answer.values || {})) {
          const count = Array.isArray(value) ? value.flat(Infinity).length : 1;
          if (count <= 16) values.append($("tr", {}, $("td", {}, key), $("td", {}, formatValue(value))));
        }
        pictures.textContent = "";
        for (const [name, svg] of Object.entries(answer.svg || {})) pictures.append(figure(name, svg));
        if (controls.query && !controls.query.control.value && answer.request && answer.request.query)
          controls.query.control.placeholder = answer.request.query.flat().map((x) => x.toFixed(3)).join(" ");
        element.dataset.draws = String(Number(element.dataset.draws || 0) + 1);
      }
    } catch (error) {
      note.className = "status error";
      note.textContent = `The panel could not be computed: ${error.message}`;
    }
    busy = false;
    if (pending) {
      pending = false;
      redraw();
    }
  };
  for (const { control } of Object.values(controls)) control.addEventListener(control.type === "text" ? "change" : "input", redraw);

  element.setKnob = (name, value) => {  // moves a knob (widening a range to hold it) and redraws
    const { knob, control } = controls[name];
    if (knob.kind === "range") control.max = String(Math.max(Number(control.max), Math.ceil(value)));
    control.value = String(value);
    control.dispatchEvent(new Event("input"));
  };
  // Drawn first as soon as the page is built, not when it comes into view: a first draw
  // makes the panel taller, which would move a Run button the learner is about to press.
  setTimeout(redraw);
  return element;
}

// ---- translating a sentence --------------------------------------------------------------

function translateBox(lesson) {
  const model = course.models.find((m) => m.lesson === lesson.number);
  const input = $("input", { type: "text", size: "40", value: "i'm home .", name: "sentence" });
  const button = $("button", { type: "submit" }, "Translate");
  const form = $("form", { class: "knobs" }, $("label", {}, "an English sentence", input), button);
  const result = $("p", { class: "translation" });
  const note = $("p", { class: "status" });
  const pictures = $("div", { class: "pictures" });
  const element = $("div", { class: "panel", "data-panel": `translate-${lesson.number}` },
                    $("h3", {}, `Live: translate with lesson ${String(lesson.number).padStart(2, "0")}'s model`),
                    $("p", {}, `The model ${model.trained} trained natively and saved (model.safetensors), ` +
                               "embedded in this page and run here: greedy decoding, and where the decoder looked. " +
                               "Words it never saw are read as <unk>."),
                    form, result, note, pictures);
  form.onsubmit = async (event) => {
    event.preventDefault();
    button.disabled = true;
    note.className = "status";
    note.textContent = "Translating…";
    const lines = [];
    try {
      const run = await runInWorker("translate", ["--model", model.file, "--", input.value], {
        line: (text) => lines.push(text),
        picture: (file, svg) => {
          pictures.textContent = "";
          pictures.append(figure(file, svg));
        },
      });
      if (run.status !== 0) throw new Error(lines.join("\n"));
      const answer = JSON.parse(run.results).translations[0];
      result.textContent = `${answer.source_tokens.join(" ")}  ⟶  ${answer.translation}`;
      result.dataset.translation = answer.translation;
      note.textContent = `Translated in ${run.seconds.toFixed(2)} s.`;
      element.dataset.draws = String(Number(element.dataset.draws || 0) + 1);
    } catch (error) {
      note.className = "status error";
      note.textContent = error.message;
    }
    button.disabled = false;
  };
  return element;
}

// ---- the page -------------------------------------------------------------------------------

const course = window.qkvCourse;

function buildLine() {
  const b = course.build;
  return `This page runs qkv ${b.commit} (built ${b.date}) compiled to WebAssembly by emscripten ${b.emscripten}: ` +
         "scalar kernels (plain loops, no hand-written SIMD), one thread. The native build is several times " +
         "faster; the numbers are the same to within float rounding (docs/web.md).";
}

document.getElementById("build").textContent = buildLine();
const contents = document.getElementById("contents");
const main = document.getElementById("lessons");
for (const lesson of course.lessons) {
  const number = String(lesson.number).padStart(2, "0");
  contents.append($("li", {}, $("a", { href: `#lesson-${number}` }, lesson.title)));
  main.append(lessonSection(lesson));
}
followHover();
window.qkvReady = true;  // (the browser test waits for it)
