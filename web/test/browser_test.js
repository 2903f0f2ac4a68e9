// The browser test of the live course page: headless Chromium (Debian's
// `chromium`), driven by puppeteer-core, opens out/web/index.html from
// file:// with the network unreachable (a proxy at a closed port), and checks:
//
//   - lessons 04, 07 and 09 run in the page and print the numbers the native
//     build's results.json holds at the same seed: every number within 1e-5
//     (relative to the larger, absolute below 1), every other value equal;
//   - each live panel draws, and draws something else after a knob moves;
//   - hovering a heatmap cell shows its row, column and value, and hovering
//     a block of lesson 09's model picture its shapes;
//   - the translation boxes translate "go ." and "i'm home ." as lessons 08
//     and 11 did natively (the results.json in --models, from the run that
//     saved the models the page holds: ./qkv.sh web trains them in the
//     same-numbers build, into out/same);
//   - the browser's console shows no error, and the page asked for nothing
//     but file:, blob: and data: URLs.
//
//   node web/test/browser_test.js --page out/web/index.html --native out/lessons --models out/same
//        [--screenshots docs/web]   the page and each live panel, as PNG
//        [--time-all BUILD/lessons] every lesson timed in the page and natively (a Markdown table)
//
// Exits 1 with the list of what failed, 3 if Chromium went away. ./qkv.sh web-test runs it.
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");
const puppeteer = require("puppeteer-core");

const options = { page: null, native: null, models: null, screenshots: null, timeAll: null };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i += 2) {
  const key = { "--page": "page", "--native": "native", "--models": "models", "--screenshots": "screenshots",
                "--time-all": "timeAll" }[argv[i]];
  if (!key || argv[i + 1] === undefined) {
    console.error(`browser_test.js: unknown flag or missing value: ${argv[i]}\n` +
                  "usage: node web/test/browser_test.js --page out/web/index.html --native out/lessons " +
                  "--models out/same [--screenshots DIR] [--time-all BUILD/lessons]");
    process.exit(2);
  }
  options[key] = argv[i + 1];
}
if (!options.page || !options.native || !options.models) {
  console.error("usage: node web/test/browser_test.js --page out/web/index.html --native out/lessons --models out/same");
  process.exit(2);
}

const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "  ok  " : "  FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

// ---- comparing results.json -----------------------------------------------------------
const RELATIVE = 1e-5;
function* leaves(value, at = "") {
  if (Array.isArray(value)) for (let i = 0; i < value.length; ++i) yield* leaves(value[i], `${at}[${i}]`);
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) yield* leaves(v, `${at}.${k}`);
  else yield [at, value];
}
function compareResults(page, native) {
  const a = new Map(leaves(page.results)), b = new Map(leaves(native.results));
  const problems = [];
  let worst = 0, worstAt = "";
  for (const key of new Set([...a.keys(), ...b.keys()])) {
    if (key.endsWith("_seconds")) continue;  // wall times differ by nature
    if (!a.has(key) || !b.has(key)) {
      problems.push(`${key} only in the ${a.has(key) ? "page's" : "native"} results`);
      continue;
    }
    const x = a.get(key), y = b.get(key);
    if (typeof x === "number" && typeof y === "number") {
      const scale = Math.max(1, Math.abs(x), Math.abs(y));
      const difference = Math.abs(x - y) / scale;
      if (difference > worst) [worst, worstAt] = [difference, key];
      if (!(difference <= RELATIVE)) problems.push(`${key}: page ${x}, native ${y}`);
    } else if (x !== y) problems.push(`${key}: page ${JSON.stringify(x)}, native ${JSON.stringify(y)}`);
  }
  return { problems, worst, worstAt, count: a.size };
}

const readResults = (folder, program) => JSON.parse(fs.readFileSync(path.join(folder, program, "results.json"), "utf8"));
const readNative = (program) => readResults(options.native, program);

// ---- the page ----------------------------------------------------------------------------
// If Chromium goes away mid-test, the test says so and ends with status 3. A signal
// (a timeout's SIGTERM, ^C) kills Chromium and says that instead, status 1: left to
// puppeteer, it would close Chromium and read as the first.
let browser = null, finished = false;
function chromiumGone() {
  console.error("browser_test.js: Chromium exited during the test");
  process.exit(3);
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"])
  process.on(signal, () => {
    finished = true;
    console.error(`browser_test.js: stopped by ${signal}`);
    if (browser && browser.process()) browser.process().kill("SIGKILL");
    process.exit(1);
  });

(async () => {
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false,  // the handlers above
    protocolTimeout: 0,  // a training lesson runs minutes in the page: each wait has its own timeout
    // As root (CI, containers) Chromium refuses to start without --no-sandbox.
    // A container's /dev/shm is often 64 MB, too small for Chromium's shared memory: it uses /tmp then.
    // No network: every http(s) request goes to a proxy at a closed port, and fails.
    args: [...(process.getuid && process.getuid() === 0 ? ["--no-sandbox"] : []), "--disable-gpu",
           "--disable-dev-shm-usage", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"],
  });
  browser.on("disconnected", () => {
    if (!finished) chromiumGone();
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 900 });
  const consoleErrors = [], network = [];
  page.on("console", (message) => { if (message.type() === "error") consoleErrors.push(message.text()); });
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  page.on("workercreated", (worker) => {
    worker.on("console", (message) => { if (message.type() === "error") consoleErrors.push(`worker: ${message.text()}`); });
  });
  // Every request is seen (not intercepted: pausing requests races with the page's
  // Workers and can leave one hanging); the proxy above makes any network one fail.
  page.on("request", (request) => {
    if (!/^(file|blob|data):/.test(request.url())) network.push(request.url());
  });

  const url = "file://" + path.resolve(options.page);
  await page.goto(url, { waitUntil: "load" });
  await page.waitForFunction(() => window.qkvReady === true, { timeout: 30000 });
  const build = await page.$eval("#build", (e) => e.textContent);
  check(/scalar kernels/.test(build) && /one thread/.test(build) && /qkv [0-9a-f]{7}/.test(build) &&
            /bit for bit/.test(build),
        `the page says which build it is: "${build.slice(0, 90)}…"`);

  // Presses a button through the DOM, not with the mouse at its coordinates: whatever
  // moves the page (a panel drawing above it, a picture appearing) between puppeteer
  // computing where the button is and clicking there would make the click miss.
  const press = (selector) => page.$eval(selector, (button) => button.click());

  // Runs lesson `program` in the page with `flags` ({"--seed": "0"}); returns its results.json and time.
  async function runLesson(program, flags = {}) {
    const section = `section[data-program="${program}"]`;
    const runs = await page.$eval(section, (s) => Number(s.dataset.runs || 0));
    for (const [flag, value] of Object.entries(flags))
      await page.$eval(`${section} form.flags input[name="${flag}"]`, (input, v) => (input.value = v), value);
    await press(`${section} form.flags button`);
    await page.waitForFunction((s, n) => Number(document.querySelector(s).dataset.runs || 0) > n,
                               { timeout: 600000, polling: 200 }, section, runs);
    return page.evaluate((s, p) => ({
      results: window.qkvResults[p],
      status: document.querySelector(`${s} .run-status`).textContent,
      pictures: document.querySelectorAll(`${s} .run-pictures figure`).length,
      terminal: document.querySelector(`${s} pre.terminal`).textContent,
    }), section, program);
  }

  for (const program of ["04_scoring_functions", "07_self_attention", "09_multi_head_attention"]) {
    const run = await runLesson(program, { "--seed": "0" });
    const native = readNative(program);
    const header = `Lesson ${String(native.lesson).padStart(2, "0")} · `;
    check(/^Finished in/.test(run.status) && run.terminal.startsWith(header),
          `${program} ran in the page: "${run.status}"`);
    const svgs = native.pictures.filter((p) => p.file.endsWith(".svg")).length;
    const pictures = (n) => `${n} picture${n === 1 ? "" : "s"}`;
    check(run.pictures === svgs, `${program}: ${pictures(run.pictures)} shown, the native run drew ${svgs}`);
    const c = compareResults(run.results, native);
    check(c.problems.length === 0 && native.seed === 0 && run.results.seed === 0,
          `${program} at seed 0: ${c.count} values as native's, the largest difference ${c.worst.toExponential(1)}` +
          (c.worstAt ? ` (${c.worstAt})` : "") + (c.problems.length ? `; differ: ${c.problems.slice(0, 3).join("; ")}` : ""));
  }

  // ---- the live panels ---------------------------------------------------------------------
  // Each panel: drawn once the page is built, then a knob moved and drawn again, differently.
  async function panelState(selector) {
    return page.$eval(selector, (p) => ({
      draws: Number(p.dataset.draws || 0),
      svg: [...p.querySelectorAll(".pictures svg")].map((s) => s.outerHTML).join(""),
      values: p.querySelector("table.values") ? p.querySelector("table.values").textContent : "",
      note: p.querySelector(".status").textContent,
      error: p.querySelector(".status.error") ? p.querySelector(".status.error").textContent : null,
    }));
  }
  async function waitDraws(selector, n) {
    await page.waitForFunction((s, k) => Number(document.querySelector(s).dataset.draws || 0) >= k,
                               { timeout: 60000, polling: 100 }, selector, n);
  }
  const knobChanges = [
    { lesson: "02", panel: "kernel", knob: "w", value: "0.70" },  // the w slider holds log10(w): w = 5.01
    { lesson: "03", panel: "kernel", knob: "w", value: "1.08" },  // w = 12.0
    { lesson: "04", panel: "scoring", knob: "valid_len", value: "1" },
    { lesson: "04", panel: "scoring", knob: "scale", value: false },
    { lesson: "09", panel: "heads", knob: "num_heads", value: "2" },
    { lesson: "10", panel: "positional", knob: "dims", value: "16" },
    { lesson: "10", panel: "positional", knob: "shift", value: "9" },
  ];
  for (const change of knobChanges) {
    const selector = `#lesson-${change.lesson} .panel[data-panel="${change.panel}"]`;
    await page.$eval(selector, (p) => p.scrollIntoView());
    await waitDraws(selector, 1);
    const before = await panelState(selector);
    await page.$eval(`${selector} [name="${change.knob}"]`, (control, value) => {
      if (control.type === "checkbox") control.checked = value;
      else control.value = value;
      control.dispatchEvent(new Event("input", { bubbles: true }));
    }, change.value);
    await waitDraws(selector, before.draws + 1);
    const after = await panelState(selector);
    const ms = /in (\d+) ms/.exec(after.note);
    check(!after.error && after.svg.length > 0 && (after.svg !== before.svg || after.values !== before.values),
          `lesson ${change.lesson}'s ${change.panel} panel redrew after ${change.knob} = ${change.value}` +
          (after.svg === before.svg ? " (its numbers)" : "") +
          (ms ? ` (${ms[1]} ms)` : "") + (after.error ? `: ${after.error}` : ""));
  }
  // A knob out of range gets the panel's error, not a broken page, and the picture and
  // numbers of the last setting leave the screen with it.
  async function setKnob(selector, name, value, event = "input") {
    await page.$eval(`${selector} [name="${name}"]`, (control, v, e) => {
      if (control.type === "checkbox") control.checked = v;
      else control.value = v;
      control.dispatchEvent(new Event(e, { bubbles: true }));
    }, value, event);
  }
  async function waitRefused(selector, n) {
    await page.waitForFunction((s, k) => Number(document.querySelector(s).dataset.refused || 0) >= k,
                               { timeout: 30000, polling: 100 }, selector, n);
  }
  for (const query of ["1 2 3", "101 0 0 0"]) {
    const selector = `#lesson-04 .panel[data-panel="scoring"]`;
    const drawn = (await panelState(selector)).draws;
    await setKnob(selector, "query", "", "change");  // back to the lesson's query: drawn
    await waitDraws(selector, drawn + 1);
    const before = await panelState(selector);
    const refused = await page.$eval(selector, (p) => Number(p.dataset.refused || 0));
    await setKnob(selector, "query", query, "change");
    await waitRefused(selector, refused + 1);
    const after = await panelState(selector);
    check(/query/.test(after.error || "") && after.draws === before.draws && before.svg !== "" &&
          after.svg === "" && after.values === "",
          `the query "${query}" is refused by name, and the last picture and numbers are gone: "${after.error}"`);
  }
  {
    const selector = `#lesson-04 .panel[data-panel="scoring"]`;
    const drawn = (await panelState(selector)).draws;
    await setKnob(selector, "query", "", "change");
    await waitDraws(selector, drawn + 1);
    const label = await page.$eval(`${selector} svg`, (svg) => [...svg.querySelectorAll("text")].map((t) => t.textContent));
    check(!label.some((t) => t.includes("…")) && label.includes("query"),
          `the scoring heatmap's labels are whole: ${JSON.stringify(label.slice(0, 8))}`);
  }

  // Lesson 10's sliders offer only what the panel draws: a knob moved past what goes with
  // the others brings them back (and says so), and the panel draws, never refuses.
  {
    const selector = `#lesson-10 .panel[data-panel="positional"]`;
    const knobs = () => page.$eval(selector, (p) => Object.fromEntries(
        [...p.querySelectorAll("input[type=range]")].map((c) => [c.name, Number(c.value)])));
    for (const [knob, value, expect] of [
      ["dims", "64", (k) => k.dims === 64], ["positions", "128", (k) => k.positions === 128 && k.dims === 32],
      ["shift", "5", (k) => k.shift === 5], ["positions", "2", (k) => k.positions === 2 && k.shift === 1],
      ["shift", "40", (k) => k.shift === 40 && k.positions === 41 && k.positions * k.dims <= 4096],
    ]) {
      const before = await panelState(selector);
      const refused = await page.$eval(selector, (p) => Number(p.dataset.refused || 0));
      await setKnob(selector, knob, value);
      await waitDraws(selector, before.draws + 1);
      const after = await panelState(selector), now = await knobs();
      const adjusted = await page.$eval(`${selector} .adjusted`, (p) => p.textContent);
      const stillRefused = await page.$eval(selector, (p) => Number(p.dataset.refused || 0));
      check(!after.error && stillRefused === refused && expect(now) && after.svg.includes(`${now.positions} positions × ${now.dims} dims`),
            `lesson 10: ${knob} = ${value} draws ${JSON.stringify(now)}` + (adjusted ? ` (${adjusted})` : ""));
    }
    // The shift δ moves what is drawn: R(δ)·P[0] on the line of P[δ].
    const before = await page.$eval(`${selector} figure[data-file="shift"]`, (f) => f.innerHTML);
    const drawn = (await panelState(selector)).draws;
    await setKnob(selector, "shift", "7");
    await waitDraws(selector, drawn + 1);
    const after = await page.$eval(`${selector} figure[data-file="shift"]`, (f) => f.innerHTML);
    check(before !== after && /R\(7\)·P\[0\]/.test(after) && /P\[0\+δ\] = P\[7\]/.test(after),
          "lesson 10: δ = 7 draws R(7)·P[0] beside P[7]");
  }

  // The w slider is logarithmic: w = 1, lesson 02's, sits a third of the way along (0.1 to 100).
  {
    const at = await page.$eval(`#lesson-02 .panel[data-panel="kernel"] [name="w"]`, (c) => {
      c.value = "0";
      return (Number(c.value) - Number(c.min)) / (Number(c.max) - Number(c.min));
    });
    check(Math.abs(at - 1 / 3) < 0.01, `the w slider is logarithmic: w = 1 sits at ${(100 * at).toFixed(0)} % of it`);
  }

  // The heads' labels stay readable: every text of the grid at least 8 px on screen, at 25
  // heads in the page's column and at 5 on a phone's screen.
  async function smallestText(selector, on = page) {
    return on.$eval(`${selector} svg`, (svg) => {
      const scale = svg.getBoundingClientRect().width / Number(svg.getAttribute("viewBox").split(/\s+/)[2]);
      return Math.min(...[...svg.querySelectorAll("text")].map((t) => Number(t.getAttribute("font-size")) * scale));
    });
  }
  {
    const selector = `#lesson-09 .panel[data-panel="heads"]`;
    const draws = (await panelState(selector)).draws;
    await setKnob(selector, "num_heads", "25");
    await waitDraws(selector, draws + 1);
    const px = await smallestText(selector);
    check(px >= 8, `25 heads: the smallest text of the grid is ${px.toFixed(1)} px on screen`);
    await setKnob(selector, "num_heads", "5");
    await waitDraws(selector, draws + 2);
    // A phone's screen, in a page of its own (a mobile viewport reloads the page), at the panel's 5 heads.
    const phone = await browser.newPage();
    phone.on("console", (message) => { if (message.type() === "error") consoleErrors.push(`phone: ${message.text()}`); });
    phone.on("pageerror", (error) => consoleErrors.push(`phone: ${error}`));
    phone.on("request", (request) => { if (!/^(file|blob|data):/.test(request.url())) network.push(request.url()); });
    await phone.setViewport({ width: 390, height: 844, isMobile: true, hasTouch: true });
    await phone.goto(url, { waitUntil: "load" });
    await phone.waitForFunction((s) => Number((document.querySelector(s) || { dataset: {} }).dataset.draws || 0) >= 1,
                                { timeout: 60000, polling: 100 }, selector);
    const small = await smallestText(selector, phone);
    const fits = await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
    if (options.screenshots) {
      fs.mkdirSync(options.screenshots, { recursive: true });
      const heads = await phone.$(selector);
      await heads.screenshot({ path: path.join(options.screenshots, "panel-heads-phone.png") });
    }
    await phone.close();
    check(small >= 8 && fits, `5 heads on a phone (390 px): the smallest text is ${small.toFixed(1)} px, ` +
                           `and the page is no wider than the screen`);
  }

  // Hovering a heatmap cell.
  {
    const cell = await page.$(`#lesson-04 .panel[data-panel="scoring"] rect.cell`);
    await cell.hover();
    const hover = await page.$eval("#hover", (h) => (h.hidden ? "" : h.textContent));
    const title = await cell.$eval("title", (t) => t.textContent);
    const [row, col, value] = /^(.*), (.*): (.*)$/.exec(title).slice(1);
    check(hover === `row ${row}, column ${col}: ${value}`, `hovering a cell shows "${hover}"`);
  }
  // Hovering a block of a model picture (lesson 09's, from its run above): its name, shapes and parameters.
  // The pointer is moved onto the last block drawn (the mouse event sent to it: where the
  // block lies under arrows and labels is the picture's business, not the hover's).
  {
    const [hover, title] = await page.evaluate(() => {
      const blocks = document.querySelectorAll(`#lesson-09 figure[data-file="model.svg"] g.module`);
      const block = blocks[blocks.length - 1];
      if (!block) return ["", ""];
      const shape = block.querySelector("rect, text");
      const box = shape.getBoundingClientRect();
      shape.dispatchEvent(new MouseEvent("mousemove", { bubbles: true, clientX: box.x + 2, clientY: box.y + 2 }));
      const h = document.getElementById("hover");
      return [h.hidden ? "" : h.textContent, block.querySelector("title").textContent];
    });
    check(/in: /.test(hover) && /out: /.test(hover) && hover === title.replace(/\n/g, " · "),
          `hovering a block of lesson 09's model shows "${hover}"`);
  }

  // ---- translating ---------------------------------------------------------------------------
  for (const lesson of ["08_seq2seq_attention", "11_transformer"]) {
    const native = readResults(options.models, lesson).results;
    const selector = `#lesson-${lesson.slice(0, 2)} .panel[data-panel="translate-${Number(lesson.slice(0, 2))}"]`;
    for (const sentence of ["go .", "i'm home ."]) {
      let k = 0;
      while (native[`d2l_${k}_source`] !== undefined && native[`d2l_${k}_source`] !== sentence) ++k;
      const expected = native[`d2l_${k}_translation`];
      const draws = (await panelState(selector)).draws;
      await page.$eval(`${selector} input[name="sentence"]`, (input, s) => (input.value = s), sentence);
      await press(`${selector} button`);
      await waitDraws(selector, draws + 1);
      const shown = await page.$eval(`${selector} .translation`, (p) => p.dataset.translation);
      const picture = await page.$$eval(`${selector} .pictures svg rect.cell`, (cells) => cells.length);
      check(expected !== undefined && shown === expected && picture > 0,
            `${lesson}'s model in the page: "${sentence}" => "${shown}" (native: "${expected}"), with its attention`);
    }
  }
  {
    const selector = `#lesson-08 .panel[data-panel="translate-8"]`;
    const draws = (await panelState(selector)).draws;
    await page.$eval(`${selector} input[name="sentence"]`, (input) => (input.value = "go zorblax ."));
    await press(`${selector} button`);
    await waitDraws(selector, draws + 1);
    const shown = await page.$eval(`${selector} .translation`, (p) => p.textContent);
    check(shown.startsWith("go <unk> ."), `a word outside the vocabulary is read as <unk>: "${shown}"`);
  }

  // The translation of the last sentence leaves with it: an empty box is refused in the page.
  {
    const selector = `#lesson-08 .panel[data-panel="translate-8"]`;
    const refused = await page.$eval(selector, (p) => Number(p.dataset.refused || 0));
    await page.$eval(`${selector} input[name="sentence"]`, (input) => (input.value = "   "));
    await press(`${selector} button`);
    await waitRefused(selector, refused + 1);
    const state = await panelState(selector);
    const shown = await page.$eval(`${selector} .translation`, (p) => p.textContent);
    check(shown === "" && state.svg === "" && /nothing to translate/.test(state.error || ""),
          `an empty sentence: the last translation and picture are gone, and "${state.error}"`);
  }
  // A sentence of 2,000 characters: its picture is no wider than its cells and labels need
  // (the title cut, whole in a tooltip), and the page says which words the model did not read.
  {
    const selector = `#lesson-08 .panel[data-panel="translate-8"]`;
    const sentence = Array.from({ length: 400 }, (_, i) => ["go", "home", "now", "i'm", "tom"][i % 5]).join(" ").slice(0, 2000);
    const draws = (await panelState(selector)).draws;
    await page.$eval(`${selector} input[name="sentence"]`, (input, s) => (input.value = s), sentence);
    await press(`${selector} button`);
    await waitDraws(selector, draws + 1);
    const picture = await page.$eval(`${selector} figure`, (f) => {
      const svg = f.querySelector("svg"), box = svg.getBoundingClientRect();
      return { width: Number(svg.getAttribute("width")), shown: [box.width, box.height],
               title: svg.querySelector(".title").firstChild.textContent, cut: f.dataset.titleCut };
    });
    const warnings = await page.$eval(`${selector} .warnings`, (u) => u.textContent);
    check(picture.width < 1200 && picture.shown[1] > 100 && picture.title.length <= 90 && picture.title.endsWith("…"),
          `a 2,000-character sentence: its picture is ${picture.width} px wide, shown ${picture.shown.map(Math.round).join(" × ")}, ` +
          `its title cut to ${picture.title.length} characters of ${picture.cut}`);
    check(/reads at most \d+ tokens/.test(warnings) && /did not read "[a-z' ]+ … \(\d+ words in all\)"/.test(warnings),
          `the page says what was cut: "${warnings.slice(0, 160)}…"`);
  }

  // ---- the lessons' flags, checked in the page --------------------------------------------
  // A float flag shows what the lesson declares (0.01), not its float32 (0.009999999776482582).
  {
    const floats = await page.$$eval("form.flags input", (inputs) =>
        inputs.filter((i) => /lr|dropout|smoothing|decay/.test(i.name)).map((i) => `${i.closest("section").id} ${i.name} ${i.value}`));
    const noisy = floats.filter((f) => f.split(" ")[2].replace(/^-?0*\.?0*/, "").replace(/e.*$/, "").replace(".", "").length > 6);
    check(floats.length > 0 && noisy.length === 0,
          `float flags show their declared values: ${floats.filter((f) => f.startsWith("lesson-08")).join(", ")}` +
          (noisy.length ? `; with float32 noise: ${noisy.join(", ")}` : ""));
  }
  // A field the lesson would refuse is said in the page, beside it, and nothing runs.
  for (const [flag, value, said] of [["--seed", "", /--seed is empty/], ["--seed", "1e3", /--seed must be a whole number/],
                                     ["--seed", "-1", /--seed = -1 is too small/], ["--seed", "1.5", /--seed must be a whole number/],
                                     ["--n-train", "10001", /--n-train = 10001 is too large: it must be a whole number from 2 to 10000/]]) {
    const section = `section[data-program="01_average_pooling"]`;
    const runs = await page.$eval(section, (s) => Number(s.dataset.runs || 0));
    const refused = await page.$eval(section, (s) => Number(s.dataset.refused || 0));
    await page.$eval(`${section} input[name="${flag}"]`, (input, v) => (input.value = v), value);
    await press(`${section} form.flags button`);
    await page.waitForFunction((s, n) => Number(document.querySelector(s).dataset.refused || 0) > n,
                               { timeout: 10000, polling: 100 }, section, refused);
    const state = await page.$eval(section, (s, f) => ({
      status: s.querySelector(".run-status").textContent, failed: s.querySelector(".run-status.failed") !== null,
      beside: s.querySelector(`input[name="${f}"]`).parentElement.querySelector(".field-error").textContent,
      runs: Number(s.dataset.runs || 0),
    }), flag);
    check(state.failed && said.test(state.status) && said.test(state.beside) && state.runs === runs,
          `${flag} "${value}" is refused in the page, beside the field: "${state.beside}"`);
    await page.$eval(`${section} input[name="${flag}"]`, (input) => {
      input.value = input.name === "--seed" ? "0" : "50";
      input.dispatchEvent(new Event("input"));
    });
  }
  // A run the lesson refuses says why in its status, and no earlier run's results stand for it.
  {
    const run = await runLesson("03_parametric_pooling", { "--lr": "-1" });
    check(/^Failed \(exit status 1\) after [0-9.]+ s: error: .*lr/.test(run.status) && run.results === undefined,
          `lesson 03 with --lr -1: "${run.status}"`);
    await page.$eval(`section[data-program="03_parametric_pooling"] input[name="--lr"]`, (input) => (input.value = "0.5"));
  }

  // ---- downloads ----------------------------------------------------------------------------
  // Lesson 04's run above: each picture, the transcript and results.json, each a download
  // holding what the run wrote.
  {
    const native = readNative("04_scoring_functions");
    const links = await page.$$eval(`section[data-program="04_scoring_functions"] .downloads a`, async (as) =>
      Promise.all(as.map(async (a) => ({ file: a.dataset.file, download: a.download,
                                         text: await (await fetch(a.href)).text() }))));
    const byName = Object.fromEntries(links.map((l) => [l.file, l]));
    const wanted = ["transcript.txt", "results.json", ...native.pictures.map((p) => p.file).filter((f) => f.endsWith(".svg"))];
    const missing = wanted.filter((f) => !byName[f] || !byName[f].download);
    const results = byName["results.json"] ? JSON.parse(byName["results.json"].text) : {};
    check(missing.length === 0 && results.lesson === 4 && byName["transcript.txt"].text.startsWith("Lesson 04 · ") &&
          wanted.filter((f) => f.endsWith(".svg")).every((f) => byName[f].text.includes("<svg")),
          `lesson 04's files are downloads: ${links.map((l) => l.file).join(", ")}` +
          (missing.length ? `; missing: ${missing.join(", ")}` : ""));
  }

  // ---- the first screen, and the notes' Chinese ---------------------------------------------
  {
    await page.evaluate(() => window.scrollTo(0, 0));
    const start = await page.$eval("#start .panel", (p) => ({
      draws: Number(p.dataset.draws || 0), top: p.querySelector("svg") ? p.querySelector("svg").getBoundingClientRect().top : 1e9 }));
    check(start.draws >= 1 && start.top < 900, `the first screen opens on a live panel (its picture ${Math.round(start.top)} px down)`);
    // The fonts Chromium drew a section name with (CDP): a CJK one drew its Chinese.
    const client = await page.target().createCDPSession();
    await client.send("DOM.enable");
    await client.send("CSS.enable");
    const { root } = await client.send("DOM.getDocument");
    const { nodeId } = await client.send("DOM.querySelector", { nodeId: root.nodeId, selector: "#lesson-01 p.sections" });
    const { fonts } = await client.send("CSS.getPlatformFontsForNode", { nodeId });
    const cjk = fonts.filter((f) => /CJK|Han Sans|Hei|PingFang|YaHei|WenQuanYi/i.test(f.familyName) && f.glyphCount > 0);
    check(cjk.length > 0, `the notes' Chinese section names are drawn in a CJK font: ${fonts.map((f) => `${f.familyName} (${f.glyphCount})`).join(", ")}`);
    await client.detach();
  }

  // ---- screenshots ---------------------------------------------------------------------------
  // Of a fresh page: lesson 04 run, each panel at a setting that shows its point.
  if (options.screenshots) {
    fs.mkdirSync(options.screenshots, { recursive: true });
    await page.reload({ waitUntil: "load" });
    await page.waitForFunction(() => window.qkvReady === true, { timeout: 30000 });
    await runLesson("04_scoring_functions");
    const settings = [
      ["02", "kernel", "w", "0.48"] /* log10(w): w = 3.02 */, ["04", "scoring", "valid_len", "3"], ["09", "heads", "num_heads", "4"],
      ["10", "positional", "shift", "5"],
    ];
    for (const [lesson, panel, knob, value] of settings) {
      const selector = `#lesson-${lesson} .panel[data-panel="${panel}"]`;
      await page.$eval(selector, (p) => p.scrollIntoView());
      await waitDraws(selector, 1);
      const draws = (await panelState(selector)).draws;
      await page.$eval(`${selector} [name="${knob}"]`, (control, v) => {
        control.value = v;
        control.dispatchEvent(new Event("input", { bubbles: true }));
      }, value);
      await waitDraws(selector, draws + 1);
    }
    const translate = `#lesson-08 .panel[data-panel="translate-8"]`;
    await page.$eval(`${translate} input[name="sentence"]`, (input) => (input.value = "i'm home ."));
    await press(`${translate} button`);
    await waitDraws(translate, 1);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(options.screenshots, "page.png") });
    for (const [name, selector] of [
      ["panel-kernel.png", "#lesson-02 .panel"], ["panel-scoring.png", "#lesson-04 .panel"],
      ["panel-heads.png", "#lesson-09 .panel"], ["panel-positional.png", "#lesson-10 .panel"],
      ["panel-translate.png", translate], ["lesson-04-run.png", "#lesson-04"],
    ]) {
      const element = await page.$(selector);
      await element.screenshot({ path: path.join(options.screenshots, name) });
    }
    console.log(`  screenshots in ${options.screenshots}`);
  }

  // ---- timing every lesson --------------------------------------------------------------------
  if (options.timeAll) {
    const programs = await page.$$eval("section.lesson", (s) => s.map((e) => e.dataset.program));
    console.log("\n| lesson | native (s) | in the page (s) | page / native |\n|---|---:|---:|---:|");
    for (const program of programs) {
      const started = process.hrtime.bigint();
      execFileSync(path.join(options.timeAll, program), ["--out", path.join(require("os").tmpdir(), "qkv-time", program)],
                   { stdio: "ignore" });
      const native = Number(process.hrtime.bigint() - started) / 1e9;
      const run = await runLesson(program, { "--seed": "0" });
      const inPage = Number(/Finished in ([\d.]+) s/.exec(run.status)[1]);
      console.log(`| ${program} | ${native.toFixed(2)} | ${inPage.toFixed(2)} | ${(inPage / native).toFixed(1)}× |`);
    }
  }

  check(network.length === 0, `no request left the computer${network.length ? `: ${network.slice(0, 3).join(", ")}` : ""}`);
  check(consoleErrors.length === 0, `no error in the browser's console${consoleErrors.length ? `: ${consoleErrors.slice(0, 3).join(" | ")}` : ""}`);
  finished = true;
  await browser.close();
  console.log(failures.length ? `\n${failures.length} check(s) failed` : "\nevery check passed");
  process.exit(failures.length ? 1 : 0);
})().catch((error) => {
  if (browser && !browser.connected) chromiumGone();  // an error because Chromium went away
  console.error(`browser_test.js: ${error.stack || error}`);
  process.exit(1);
});
