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
    // Every file of out/ goes back too (the page offers each as a download), its bytes moved, not copied.
    postMessage({ kind: "done", status: run.status, seconds: run.seconds, results: text("results.json"),
                  files: run.files }, Object.values(run.files).map((bytes) => bytes.buffer));
  };
}

// Runs program `name` with `args` in a Worker of its own. on.line(text, stream)
// and on.picture(file, svg) as it goes; resolves to {status, seconds, results, files}
// (files: every file of the run's out/, by path, as bytes).
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
        resolve({ status: message.status, seconds: message.seconds, results: message.results, files: message.files });
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

// A picture's title longer than kTitleCharacters (a translated sentence of 2,000
// characters is in its title) would make the picture as wide as the title, and
// the page shows it shrunk to a sliver. The title is cut with "…" (all of it
// stays in a tooltip), and the picture is cropped to what its other parts and the
// cut title need (viz centres them under the title). Called once the figure is in
// the page: the browser measures what it lays out.
const kTitleCharacters = 90;
function shortenTitle(figureElement) {
  const svg = figureElement.querySelector("svg");
  const title = svg && svg.querySelector(".title");
  if (!title || title.textContent.length <= kTitleCharacters || !svg.getBoundingClientRect().width) return;
  const whole = title.textContent;
  title.textContent = `${whole.slice(0, kTitleCharacters - 1)}…`;
  title.append(document.createElementNS("http://www.w3.org/2000/svg", "title"));
  title.lastChild.textContent = whole;
  // Where the other parts are (the white background, the whole picture's size, aside),
  // in the picture's own units.
  const frame = svg.getBoundingClientRect();
  const [, , oldWidth, height] = svg.getAttribute("viewBox").split(/\s+/).map(Number);
  const scale = oldWidth / frame.width;
  let left = oldWidth, right = 0;
  const background = [...svg.children].find((part) => part.tagName === "rect" && part.getAttribute("width") === "100%");
  for (const part of svg.children) {
    if (part === background || part === title) continue;
    const box = part.getBoundingClientRect();
    if (box.width === 0) continue;
    left = Math.min(left, (box.left - frame.left) * scale);
    right = Math.max(right, (box.right - frame.left) * scale);
  }
  if (right <= left) return;
  const centre = (left + right) / 2, half = title.getComputedTextLength() / 2;
  title.setAttribute("x", centre.toFixed(1));
  left = Math.max(0, Math.floor(Math.min(left, centre - half) - 10));
  right = Math.min(oldWidth, Math.ceil(Math.max(right, centre + half) + 10));
  svg.setAttribute("viewBox", `${left} 0 ${right - left} ${height}`);
  svg.setAttribute("width", String(right - left));
  if (background) background.setAttribute("x", String(left));
  figureElement.dataset.titleCut = String(whole.length);
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

// ---- a lesson's flags, checked in the page -------------------------------------------------
// A lesson checks its flags itself and says what is wrong; but a form that sent `--seed ''`
// would get CLI's "Run with --help", which a page cannot do. So the page checks each field
// as the lesson reads it (lessons/support/lesson.cpp: parse_integer, parse_float) and says
// what is wrong beside the field, before anything runs.
const kSeedMax = 2n ** 64n - 1n;  // --seed is a 64-bit unsigned integer
const kFloatMax = 3.4028234663852886e38;

// What is wrong with `text` for `flag` (from --describe), or null when the lesson will read it.
function fieldProblem(flag, text) {
  const name = flag.flag;
  if (text === "") return `${name} is empty: give a value (the lesson's is ${flag.default})`;
  if (flag.type === "seed" || flag.type === "int") {
    const [min, max] = flag.type === "seed" ? [0n, kSeedMax] : [BigInt(flag.min), BigInt(flag.max)];
    const range = `a whole number from ${min} to ${max}`;
    if (!/^-?[0-9]+$/.test(text)) return `${name} must be ${range}, not "${text}"`;
    const value = BigInt(text);
    if (value < min) return `${name} = ${text} is too small: it must be ${range}`;
    if (value > max) return `${name} = ${text} is too large: it must be ${range}`;
    return null;
  }
  // A float: a decimal number, as strtof reads it with nothing left over (no leading space or +).
  if (!/^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/.test(text)) return `${name} must be a number, not "${text}"`;
  if (!(Math.abs(Number(text)) <= kFloatMax)) return `${name} = ${text} is out of a float's range (about 3.4e38)`;
  return null;
}

// A flag's field: a text box (the browser's number box would accept 1e3 for a whole number,
// and stop -1 with a bubble the page cannot read), checked as it is typed.
function flagField(flag) {
  const input = $("input", { type: "text", name: flag.flag, value: String(flag.default), spellcheck: "false",
                             autocomplete: "off", inputMode: flag.type === "float" ? "decimal" : "numeric" });
  input.title = flag.help;
  const problem = $("span", { class: "field-error", "aria-live": "polite" });
  const label = $("label", {}, flag.flag, input, problem);
  const check = () => {
    const found = fieldProblem(flag, input.value);
    problem.textContent = found || "";
    input.classList.toggle("invalid", Boolean(found));
    input.setAttribute("aria-invalid", found ? "true" : "false");
    return found;
  };
  input.addEventListener("input", check);
  return { flag, input, label, check };
}

// The files of a run, each a download: the pictures, transcript.txt, results.json.
function downloadList(files, previous) {
  for (const url of previous) URL.revokeObjectURL(url);
  previous.length = 0;
  const names = Object.keys(files).sort((a, b) => {
    const rank = (n) => (n === "transcript.txt" ? 0 : n === "results.json" ? 1 : 2);
    return rank(a) - rank(b) || a.localeCompare(b);
  });
  const links = names.map((name) => {
    const type = name.endsWith(".svg") ? "image/svg+xml" : name.endsWith(".json") ? "application/json" : "text/plain";
    const url = URL.createObjectURL(new Blob([files[name]], { type }));
    previous.push(url);
    return $("a", { href: url, download: name.replace(/\//g, "_"), "data-file": name }, name);
  });
  if (!links.length) return [];
  const list = $("p", { class: "downloads" }, "This run's files (the transcript's /out), to download: ");
  links.forEach((link, i) => list.append(...(i ? [" · ", link] : [link])));
  return [list];
}

// What a failed run's terminal says went wrong: from its error stream, the lines from
// "error: …" on (the lesson's message, and the flags it ran with), else the last line.
function lastError(terminal) {
  const lines = [...terminal.querySelectorAll(".stderr")].map((e) => e.textContent.trim())
                    .filter((l) => l && !/^Run with --help/.test(l));
  const first = lines.findIndex((l) => /^error:/.test(l));
  return first >= 0 ? lines.slice(first).join(" ") : lines.length ? lines[lines.length - 1] : "";
}

function lessonSection(lesson) {
  const number = String(lesson.number).padStart(2, "0");
  const form = $("form", { class: "flags", novalidate: "" });
  const fields = lesson.flags.map(flagField);
  for (const field of fields) form.append(field.label);
  const button = $("button", { type: "submit" }, "Run");
  form.append(button);
  const status = $("p", { class: "status run-status" }, "Not run yet in this page.");
  const terminal = $("pre", { class: "terminal" });
  const downloads = $("div", { class: "run-downloads" });
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
  section.append(form, status, terminal, downloads, pictures);

  const urls = [];  // the download links' object URLs, let go at the next run
  form.onsubmit = async (event) => {
    event.preventDefault();
    // A field the lesson would refuse: said beside it and in the status, and nothing runs.
    // What the last run showed stays, marked as not this form's.
    const problems = fields.map((f) => f.check()).filter(Boolean);
    if (problems.length) {
      status.className = "status run-status failed";
      status.textContent = `Not run: ${problems.join("; ")}.` +
                           (section.dataset.runs ? " The output below is the last run's, with other flags." : "");
      section.classList.add("stale");
      section.dataset.refused = String(Number(section.dataset.refused || 0) + 1);
      return;
    }
    const args = [];
    for (const { flag, input } of fields)
      if (input.value !== String(flag.default)) args.push(flag.flag, input.value);
    button.disabled = true;
    terminal.textContent = "";
    pictures.textContent = "";
    downloads.textContent = "";
    section.classList.remove("stale");
    delete lastResults[lesson.program];  // no earlier run's numbers stand for this one's
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
          shortenTitle(shownFigure);
        },
      });
      downloads.append(...downloadList(run.files || {}, urls));
      if (run.results) {
        const results = JSON.parse(run.results);
        lastResults[lesson.program] = results;
        for (const picture of results.pictures || []) {  // the caption: what the lesson says it shows
          const caption = shown.get(picture.file) && shown.get(picture.file).querySelector("figcaption");
          if (caption) caption.textContent = `${picture.file}: ${picture.shows}`;
        }
        section.dispatchEvent(new CustomEvent("results", { detail: results }));
      }
      const why = run.status === 0 ? "" : lastError(terminal);
      status.className = `status run-status ${run.status === 0 ? "finished" : "failed"}`;
      status.textContent = run.status === 0
        ? `Finished in ${run.seconds.toFixed(2)} s (in this page: scalar kernels, one thread).`
        : `Failed (exit status ${run.status}) after ${run.seconds.toFixed(2)} s: ${why || "the terminal says why."}`;
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
           "learns w. A larger w is a narrower kernel: sharper weights, a curve that follows the nearest points. " +
           "The slider is logarithmic: each step multiplies w.",
    knobs: [{ name: "w", label: "w", kind: "log", min: 0.1, max: 100, value: 1 }],
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
           "projections: every head's weights, one row of the grid per head, one column per example. The " +
           "examples' valid lengths are 3 and 2: keys past them weigh 0.",
    knobs: [{ name: "num_heads", label: "heads", kind: "select", options: [1, 2, 4, 5, 10, 20, 25], value: 5 }],
  },
  {
    panel: "positional", lessons: [10], title: "Live: positions, dimensions and the shift δ",
    about: "P[i, 2j] = sin(i/10000^(2j/d)), P[i, 2j+1] = cos(i/10000^(2j/d)); the check: P[i+δ] = R(δ)·P[i] " +
           "for every i, R(δ) a rotation of each column pair. The second picture shows it on row 0: R(δ)·P[0] " +
           "(points) lands on P[δ] (a line).",
    knobs: [
      { name: "positions", label: "positions", kind: "range", min: 2, max: 128, step: 1, value: 60 },
      { name: "dims", label: "dims", kind: "range", min: 2, max: 64, step: 2, value: 32 },
      { name: "shift", label: "shift δ", kind: "range", min: 0, max: 40, step: 1, value: 5 },
    ],
    // The panel draws at most 4096 cells and needs δ < positions (web/panels.hpp): the knob
    // that moved stays where it was put, and the other one is brought back, with a word why.
    constrain(values, moved) {
      const changes = [];
      const cells = 4096;
      if (values.positions * values.dims > cells) {
        if (moved === "dims") {
          values.positions = Math.floor(cells / values.dims);
          changes.push(`positions lowered to ${values.positions}: positions × dims is at most ${cells}`);
        } else {
          values.dims = 2 * Math.floor(cells / values.positions / 2);
          changes.push(`dims lowered to ${values.dims}: positions × dims is at most ${cells}`);
        }
      }
      if (values.shift >= values.positions) {
        if (moved === "shift") {
          values.positions = values.shift + 1;
          changes.push(`positions raised to ${values.positions}: δ must be less than the positions`);
          if (values.positions * values.dims > cells) {
            values.dims = 2 * Math.floor(cells / values.positions / 2);
            changes.push(`dims lowered to ${values.dims}: positions × dims is at most ${cells}`);
          }
        } else {
          values.shift = values.positions - 1;
          changes.push(`δ lowered to ${values.shift}: it must be less than the positions`);
        }
      }
      return changes;
    },
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

// A logarithmic slider: the range input holds log10(w), in steps of 1/100 of a decade;
// w itself is rounded to 3 significant digits, as it is shown.
const fromLog = (position) => Number((10 ** Number(position)).toPrecision(3));
const toLog = (w) => Math.log10(w).toFixed(2);

function panelElement(spec) {
  let setting = false;  // setKnob is moving a knob (not the learner)
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
    } else if (knob.kind === "log") {
      control = $("input", { type: "range", min: toLog(knob.min), max: toLog(knob.max), step: "0.01",
                             value: toLog(knob.value) });
      shown.textContent = String(knob.value);
      // setKnob may put an exact w (lesson 03's learned one) here; the learner's next move lets it go.
      control.addEventListener("input", () => {
        if (!setting) delete control.dataset.exact;
        shown.textContent = control.dataset.exact ? Number(control.dataset.exact).toPrecision(4)
                                                  : String(fromLog(control.value));
      });
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
    controls[knob.name] = { knob, control, shown };
    knobs.append($("label", {}, knob.label, control, shown));
  }
  const adjusted = $("p", { class: "status adjusted" });
  const note = $("p", { class: "status" });
  const values = $("table", { class: "values" });
  const pictures = $("div", { class: "pictures" });
  const element = $("div", { class: "panel", "data-panel": spec.panel },
                    $("h3", {}, spec.title), $("p", {}, spec.about), knobs, adjusted, note, values, pictures);

  // The knobs as numbers; a panel's constrain() may move the ones that do not go with the
  // one just moved (the slider then shows where it went).
  const settle = (moved) => {
    if (!spec.constrain) return;
    const current = {};
    for (const [name, { knob, control }] of Object.entries(controls))
      if (knob.kind === "range") current[name] = Number(control.value);
    const changes = spec.constrain(current, moved);
    for (const [name, value] of Object.entries(current)) {
      const { control, shown } = controls[name];
      if (Number(control.value) !== value) {
        control.value = String(value);
        shown.textContent = control.value;
      }
    }
    adjusted.textContent = changes.length ? `${changes.join("; ")}.` : "";
  };
  const request = () => {
    const r = { panel: spec.panel };
    for (const { knob, control } of Object.values(controls)) {
      if (knob.kind === "checkbox") r[knob.name] = control.checked;
      else if (knob.kind === "log") r[knob.name] = Number(control.dataset.exact || fromLog(control.value));
      else if (knob.kind === "vector") {
        if (control.value.trim() !== "") r[knob.name] = control.value.trim().split(/[\s,]+/).map(Number);
      } else r[knob.name] = Number(control.value);
    }
    return r;
  };
  // A refused setting clears what the panel showed: no picture or number stays on
  // screen beside knobs it was not computed for.
  const clear = (message) => {
    note.className = "status error";
    note.textContent = message;
    values.textContent = "";
    pictures.textContent = "";
    element.dataset.refused = String(Number(element.dataset.refused || 0) + 1);
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
      if (answer.error) clear(answer.error);
      else {
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
      clear(`The panel could not be computed: ${error.message}`);
    }
    busy = false;
    if (pending) {
      pending = false;
      redraw();
    }
  };
  for (const [name, { control }] of Object.entries(controls))
    control.addEventListener(control.type === "text" ? "change" : "input", () => {
      settle(name);
      redraw();
    });

  element.setKnob = (name, value) => {  // moves a knob (widening a range to hold it) and redraws
    const { knob, control } = controls[name];
    if (knob.kind === "range") control.max = String(Math.max(Number(control.max), Math.ceil(value)));
    if (knob.kind === "log") {
      control.max = String(Math.max(Number(control.max), Number(toLog(value))));
      control.value = toLog(value);
      control.dataset.exact = String(value);
    } else control.value = String(value);
    setting = true;
    control.dispatchEvent(new Event("input"));
    setting = false;
  };
  // Drawn first as soon as the page is built, not when it comes into view: a first draw
  // makes the panel taller, which would move a Run button the learner is about to press.
  setTimeout(redraw);
  return element;
}

// ---- translating a sentence --------------------------------------------------------------

// A sentence's words as translate reads them (data::preprocess_nmt, then split on
// spaces): lowercased, a space put before , . ! ? where a letter precedes them.
function sentenceWords(sentence) {
  const text = sentence.replace(/\u202f|\u00a0/g, " ").toLowerCase()
                   .replace(/(?<=[^ ])([,.!?])/g, " $1");
  return text.split(" ").filter((w) => w !== "");
}

// What the model did not read as written: each unknown word, and the words past the
// tokens it reads. translate's results.json names them (unknown_words, cut_tokens);
// from a translate that does not, the page finds them from the sentence's words.
function inputWarnings(answer, numSteps, sentence) {
  const read = answer.source_tokens.filter((t) => t !== "<eos>");
  const words = sentenceWords(sentence);
  const unknown = answer.unknown_words || read.flatMap((t, i) => (t === "<unk>" && words[i] ? [words[i]] : []));
  const cut = answer.cut_tokens || words.slice(read.length);
  const warnings = [];
  if (unknown.length)
    warnings.push(`Not in the model's vocabulary, read as <unk>: ${[...new Set(unknown)].map((w) => `"${w}"`).join(", ")}.`);
  if (cut.length) {
    const dropped = cut.length > 12 ? `${cut.slice(0, 12).join(" ")} … (${cut.length} words in all)` : cut.join(" ");
    warnings.push(`The model reads at most ${numSteps} tokens (<eos> included): the sentence was cut after ` +
                  `"${read.join(" ")}", and it did not read "${dropped}".`);
  }
  return warnings;
}

function translateBox(lesson) {
  const model = course.models.find((m) => m.lesson === lesson.number);
  const input = $("input", { type: "text", size: "40", value: "i'm home .", name: "sentence" });
  const button = $("button", { type: "submit" }, "Translate");
  const form = $("form", { class: "knobs" }, $("label", {}, "an English sentence", input), button);
  const result = $("p", { class: "translation" });
  const warnings = $("ul", { class: "warnings" });
  const note = $("p", { class: "status" });
  const pictures = $("div", { class: "pictures" });
  const element = $("div", { class: "panel", "data-panel": `translate-${lesson.number}` },
                    $("h3", {}, `Live: translate with lesson ${String(lesson.number).padStart(2, "0")}'s model`),
                    $("p", {}, `The model ${model.trained} trained natively and saved (model.safetensors), ` +
                               "embedded in this page and run here: greedy decoding, and where the decoder looked. " +
                               "Words it never saw are read as <unk>."),
                    form, result, warnings, note, pictures);
  form.onsubmit = async (event) => {
    event.preventDefault();
    // Whatever happens next, the last sentence's translation and picture are not this one's.
    result.textContent = "";
    delete result.dataset.translation;
    warnings.textContent = "";
    pictures.textContent = "";
    if (!sentenceWords(input.value).length) {
      note.className = "status error";
      note.textContent = "There is nothing to translate: type an English sentence.";
      element.dataset.refused = String(Number(element.dataset.refused || 0) + 1);
      return;
    }
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
          shortenTitle(pictures.lastChild);
        },
      });
      if (run.status !== 0) throw new Error(lines.filter((l) => l.trim()).slice(-3).join("\n"));
      const results = JSON.parse(run.results);
      const answer = results.translations[0];
      result.textContent = `${answer.source_tokens.join(" ")}  ⟶  ${answer.translation}`;
      result.dataset.translation = answer.translation;
      for (const warning of inputWarnings(answer, results.num_steps, input.value)) warnings.append($("li", {}, warning));
      note.textContent = `Translated in ${run.seconds.toFixed(2)} s.`;
      element.dataset.draws = String(Number(element.dataset.draws || 0) + 1);
    } catch (error) {
      pictures.textContent = "";
      note.className = "status error";
      note.textContent = error.message;
      element.dataset.refused = String(Number(element.dataset.refused || 0) + 1);
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
         "faster. The numbers are those of every same-numbers build, bit for bit: the portable and ARM64 " +
         "builds, and a native one made with `cmake --preset same`; the default native build fuses " +
         "multiply-adds and differs in the last bits (docs/building.md, \"Numbers on another machine\").";
}

document.getElementById("build").textContent = buildLine();
// The first screen is live: lesson 02's kernel panel, drawn as soon as the page is built.
document.getElementById("start-panel").append(panelElement(livePanels.find((p) => p.panel === "kernel")));
const contents = document.getElementById("contents");
const main = document.getElementById("lessons");
for (const lesson of course.lessons) {
  const number = String(lesson.number).padStart(2, "0");
  contents.append($("li", {}, $("a", { href: `#lesson-${number}` }, lesson.title)));
  main.append(lessonSection(lesson));
}
followHover();
window.qkvReady = true;  // (the browser test waits for it)
