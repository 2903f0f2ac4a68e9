// The course page (course_page.hpp): reads what each lesson left in its
// folder (results.json, transcript.txt, the pictures) and writes one XHTML
// page beside the folders.
#include "course_page.hpp"

#include <fmt/format.h>
#include <qkv/core/error.hpp>

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <system_error>

#include <qkv/viz/xml.hpp>

#include "catalog.hpp"
#include "exercises/catalog.hpp"
#include "exercises/grader/progress.hpp"

namespace qkv::lesson {

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A relative URL to `file` in lesson folder `program`: the two path parts
// percent-encoded outside the unreserved characters (names are plain ASCII in
// practice; this keeps any other name a valid link).
std::string href(std::string_view program, std::string_view file) {
  auto encode = [](std::string_view part) {
    std::string encoded;
    for (char c : part) {
      auto b = static_cast<unsigned char>(c);
      bool plain = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || c == '-' || c == '_' ||
                   c == '.' || c == '~';
      encoded += plain ? std::string(1, c) : fmt::format("%{:02X}", b);
    }
    return encoded;
  };
  return encode(program) + "/" + encode(file);
}

// What a lesson's folder holds, read from its results.json.
struct Output {
  struct Picture {
    std::string file, shows;
  };
  std::vector<Picture> pictures;  // those listed that exist, in the lesson's order
  std::optional<std::string> transcript;
  std::string problem;  // a results.json that could not be read
};

std::optional<Output> read_output(const fs::path& folder) {
  fs::path results = folder / "results.json";
  std::error_code ec;
  if (!fs::is_regular_file(results, ec)) return std::nullopt;
  Output output;
  try {
    nlohmann::json doc = nlohmann::json::parse(read_file(results));
    for (const nlohmann::json& p : doc.value("pictures", nlohmann::json::array())) {
      Output::Picture picture{p.at("file").get<std::string>(), p.value("shows", std::string())};
      if (fs::is_regular_file(folder / picture.file, ec)) output.pictures.push_back(std::move(picture));
    }
  } catch (const nlohmann::json::exception& e) {
    output.problem = fmt::format("results.json cannot be read: {}", e.what());
  }
  if (fs::is_regular_file(folder / "transcript.txt", ec)) output.transcript = read_file(folder / "transcript.txt");
  return output;
}

// Copies the lesson's source into its folder; whether the copy is there.
bool copy_source(const fs::path& sources, const fs::path& folder, std::string_view program) {
  std::error_code ec;
  fs::path from = sources / (std::string(program) + ".cpp");
  if (!fs::is_regular_file(from, ec)) return false;
  fs::create_directories(folder, ec);
  if (ec) return false;
  fs::copy_file(from, folder / source_copy_name, fs::copy_options::overwrite_existing, ec);
  return !ec;
}

// --- the story first, the listing folded ------------------------------------------
// A transcript opens with what the lesson will show (the lines between its
// header, which ends with the "Arithmetic:" line, and its first "== " section)
// and ends with "What to remember:" (up to "== Summary =="). The page shows
// both as paragraphs beside the pictures, and the whole transcript below them,
// folded when it is longer than a screen.
constexpr size_t fold_above_lines = 40;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The lines [from, to) joined into one paragraph ("" if none).
std::string paragraph(const std::vector<std::string>& lines, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    out += (out.empty() ? "" : " ") + lines[i];
  }
  return out;
}

struct Story {
  std::string opening, remember;  // "" where the transcript has none
  size_t lines = 0;
};
Story story_of(const std::string& transcript) {
  const std::vector<std::string> lines = lines_of(transcript);
  Story story;
  story.lines = lines.size();
  auto starts = [&](size_t i, std::string_view prefix) { return lines[i].rfind(prefix, 0) == 0; };
  size_t header = lines.size(), first_section = lines.size(), remember = lines.size(), summary = lines.size();
  for (size_t i = 0; i < lines.size(); ++i) {
    if (header == lines.size() && starts(i, "Arithmetic:")) header = i;
    if (starts(i, "== Summary =="))
      summary = i;
    else if (first_section == lines.size() && starts(i, "== "))
      first_section = i;
    if (starts(i, "What to remember:")) remember = i;
  }
  if (header < first_section && first_section < lines.size())
    story.opening = paragraph(lines, header + 1, first_section);
  if (remember < summary && summary < lines.size()) story.remember = paragraph(lines, remember, summary);
  return story;
}

// One plain stylesheet: a readable column, the contents as a table, pictures
// no wider than the page, long transcripts in a scrolling box. The fonts name
// CJK ones after the Latin ones (Debian's, macOS's, Windows's), so that the
// notes' Chinese section names show wherever one of them is installed.
constexpr std::string_view style = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", "Noto Sans CJK SC",
              "Source Han Sans SC", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "WenQuanYi Micro Hei",
              sans-serif;
       line-height: 1.5; color: #222; background: #fff;
       max-width: 62em; margin: 0 auto; padding: 1em 1.5em 4em; }
h1 { margin-bottom: 0.2em; }
h2 { margin-top: 0; }
a { color: #1a55a0; }
table.contents { border-collapse: collapse; width: 100%; font-size: 0.95em; }
table.contents th, table.contents td { text-align: left; vertical-align: top; padding: 0.3em 0.6em;
                                       border-bottom: 1px solid #ddd; }
table.contents th { border-bottom: 2px solid #bbb; }
.state-finished { color: #26712b; }
.state-failed { color: #b00020; font-weight: bold; }
.state-planned, .state-not-run { color: #777; }
section.lesson { border-top: 3px solid #ccc; margin-top: 2.5em; padding-top: 1em; }
section.failed { border-top-color: #b00020; }
p.sections { color: #444; }
figure { margin: 1.2em 0; }
figure img, figure object { display: block; max-width: 100%; height: auto; border: 1px solid #e4e4e4; }
figcaption { font-size: 0.9em; color: #555; margin-top: 0.3em; }
pre { background: #f6f6f6; border: 1px solid #e4e4e4; padding: 0.7em; overflow: auto;
      font-size: 0.82em; line-height: 1.3; }
pre.transcript { max-height: 40em; }
details.transcript > summary { cursor: pointer; color: #1a55a0; margin: 0.8em 0 0.4em; }
p.opening, p.remember { background: #f3f7fc; border-left: 4px solid #9bb8dc; padding: 0.5em 0.8em; }
pre.error { background: #fdecee; border-color: #f0b8c0; color: #8a0018; }
.exercise-passed { color: #1a7f37; } .exercise-open { color: #8a6d00; }
)";

// The exercises of lesson `lesson` (lessons/exercises/), each linked to the
// learner's file and given its state from <sources>/../out/exercises/progress.json
// (read_progress, exercises/grader/progress.hpp, the one reader of that file),
// where the grader writes it: "exercise 4 · scaled dot-product attention with a mask: passed".
// Each state is a span the page's script updates from progress.js when it is opened.
std::string exercises_of(int lesson, const fs::path& sources, const fs::path& out) {
  exercises::Progress progress;
  try {
    progress = exercises::read_progress(sources.parent_path() / "out/exercises");
  } catch (const std::exception&) {
    // an unreadable file: every exercise shows as not started (the grader and the tool name the file)
  }
  std::string items;
  for (const exercises::ExerciseEntry& x : exercises::catalog) {
    const fs::path blank = sources / "exercises/blanks" / (std::string(x.program) + ".cpp");
    std::error_code ec;
    if (x.lesson != lesson || !fs::exists(blank, ec)) continue;
    fs::path file = sources / "exercises" / (std::string(x.program) + ".cpp");
    if (!fs::exists(file, ec)) file = blank;
    auto it = progress.find(x.number);
    const std::string state = it != progress.end() ? it->second.state : "not started";
    const std::string link = fs::relative(file, out, ec).generic_string();
    items +=
        fmt::format("{}<a href=\"{}\">exercise {} · {}</a>: <span class=\"exercise-{}\" data-exercise=\"{}\">{}</span>",
                    items.empty() ? "" : "; ", viz::xml_escape(ec ? file.generic_string() : link), x.number,
                    viz::xml_escape(x.title), state == "passed" ? "passed" : "open", x.number, viz::xml_escape(state));
  }
  return items;
}

// The script that shows the exercises' states as the grader last wrote them
// (progress.js, written with progress.json), so a grading shows on the page
// without rebuilding it; a page opened from file:// may load a script beside it.
std::string exercise_state_script(const fs::path& sources, const fs::path& out) {
  std::error_code ec;
  const fs::path script = fs::relative(sources.parent_path() / "out/exercises/progress.js", out, ec);
  if (ec) return "";
  return fmt::format(
      "<script src=\"{}\"></script>\n<script>//<![CDATA[\n"
      "(function () {{\n"
      "  var states = window.qkvExerciseStates;\n"
      "  if (!states) return;\n"
      "  document.querySelectorAll('span[data-exercise]').forEach(function (span) {{\n"
      "    var state = states[span.getAttribute('data-exercise')] || 'not started';\n"
      "    span.textContent = state;\n"
      "    span.className = state === 'passed' ? 'exercise-passed' : 'exercise-open';\n"
      "  }});\n"
      "}})();\n//]]></script>\n",
      viz::xml_escape(script.generic_string()));
}
}  // namespace

fs::path write_course_page(const fs::path& out, const fs::path& sources, const std::vector<LessonOutcome>& run) {
  enum class State { Finished, Failed, Earlier, NotRun, Planned };
  struct Row {
    CatalogEntry entry;
    State state;
    std::string error;
    std::optional<Output> output;
    bool source = false;
    bool earlier = false;  // failed: in an earlier run, as its folder's unfinished.txt says
  };
  std::vector<Row> rows;
  for (const CatalogEntry& e : catalog) {
    Row row{e, State::Planned, {}, {}, false, false};
    fs::path folder = out / std::string(e.program);
    const LessonOutcome* outcome = nullptr;
    for (const LessonOutcome& o : run)
      if (o.number == e.number) outcome = &o;
    std::error_code ec;
    const fs::path unfinished = folder / std::string(unfinished_name);
    if (outcome && !outcome->ok) {
      row.state = State::Failed;
      row.error = outcome->error;
    } else if (e.written && fs::is_regular_file(unfinished, ec)) {
      // The folder's own mark: the run (this one, or an earlier one) did not finish.
      row.state = State::Failed;
      row.error = read_file(unfinished);
      row.earlier = outcome == nullptr;
    } else if (e.written) {
      row.output = read_output(folder);
      row.state = outcome ? State::Finished : row.output ? State::Earlier : State::NotRun;
      if (outcome && !row.output) row.output = Output{{}, {}, "it finished but left no results.json"};
    }
    if (row.state == State::Finished || row.state == State::Failed || row.state == State::Earlier)
      row.source = copy_source(sources, folder, e.program);
    rows.push_back(std::move(row));
  }

  std::string page;
  auto add = [&page](fmt::string_view format, auto&&... args) {
    fmt::format_to(std::back_inserter(page), fmt::runtime(format), args...);
  };
  auto anchor = [](const CatalogEntry& e) { return fmt::format("lesson-{:02d}", e.number); };
  // The notes' headings are Chinese: marked so, a browser picks a Chinese font for them.
  constexpr std::string_view chinese = "lang=\"zh-Hans\" xml:lang=\"zh-Hans\"";
  auto shown = [](State s) { return s == State::Finished || s == State::Failed || s == State::Earlier; };

  add("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n");
  add("<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\" xml:lang=\"en\">\n<head>\n");
  add("<meta charset=\"UTF-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n");
  add("<title>The qkv course</title>\n<style>{}</style>\n</head>\n<body>\n", style);
  add("<h1>The qkv course</h1>\n");
  add("<p>Attention, one lesson at a time, following the five study notes (documents 000–004). Each lesson "
      "below shows what its program printed, the pictures it drew and its source; its folder beside this page "
      "also holds <code>results.json</code>, the numbers the tests check. Run a lesson again with "
      "<code>build/release/lessons/lessons N</code>.</p>\n");

  // The contents: every lesson of the catalogue, with where it stands.
  add("<h2 id=\"contents\">Contents</h2>\n<table class=\"contents\">\n");
  add("<tr><th>#</th><th>lesson</th><th>sections of the notes</th><th>state</th><th>exercises</th></tr>\n");
  for (const Row& r : rows) {
    std::string title = viz::xml_escape(r.entry.title);
    if (shown(r.state)) title = fmt::format("<a href=\"#{}\">{}</a>", anchor(r.entry), title);
    std::string_view state = r.state == State::Finished  ? "finished"
                             : r.state == State::Failed  ? (r.earlier ? "failed (an earlier run)" : "failed")
                             : r.state == State::Earlier ? "from an earlier run"
                             : r.state == State::NotRun  ? "not run yet"
                                                         : "planned";
    std::string_view css = r.state == State::Failed    ? "failed"
                           : r.state == State::Planned ? "planned"
                           : r.state == State::NotRun  ? "not-run"
                                                       : "finished";
    add("<tr id=\"contents-{:02d}\"><td>{:02d}</td><td>{}</td><td {}>{}</td><td "
        "class=\"state-{}\">{}</td><td>{}</td></tr>\n",
        r.entry.number, r.entry.number, title, chinese, viz::xml_escape(r.entry.sections), css, state,
        exercises_of(r.entry.number, sources, out));
  }
  add("</table>\n");

  // One section per lesson that ran or left output.
  for (const Row& r : rows) {
    if (!shown(r.state)) continue;
    const CatalogEntry& e = r.entry;
    add("<section class=\"lesson{}\" id=\"{}\">\n", r.state == State::Failed ? " failed" : "", anchor(e));
    add("<h2>{:02d} · {}</h2>\n", e.number, viz::xml_escape(e.title));
    add("<p class=\"sections\">Sections of the notes: <span {}>{}</span></p>\n", chinese, viz::xml_escape(e.sections));
    add("<p>Program <code>{}</code>", viz::xml_escape(e.program));
    if (r.source)
      add(": <a class=\"source\" href=\"{}\">its source, lessons/{}.cpp</a>", href(e.program, source_copy_name),
          viz::xml_escape(e.program));
    add(" · <a href=\"#contents\">contents</a></p>\n");
    if (std::string exercises = exercises_of(e.number, sources, out); !exercises.empty())
      add("<p class=\"exercises\">Write it yourself (<code>./qkv.sh exercise N</code> grades it): {}</p>\n", exercises);
    if (r.state == State::Failed) {
      add("<p class=\"state-failed\">{}</p>\n", r.earlier
                                                    ? "This lesson did not finish when it last ran (not run this time):"
                                                    : "This lesson failed in this run:");
      add("<pre class=\"error\">{}</pre>\n", viz::xml_escape(r.error));
    } else {
      if (r.state == State::Earlier)
        add("<p class=\"state-not-run\">Not run this time: what an earlier run left in its folder.</p>\n");
      if (!r.output->problem.empty()) add("<pre class=\"error\">{}</pre>\n", viz::xml_escape(r.output->problem));
      const Story story = r.output->transcript ? story_of(*r.output->transcript) : Story{};
      if (!story.opening.empty()) add("<p class=\"opening\">{}</p>\n", viz::xml_escape(story.opening));
      for (const Output::Picture& p : r.output->pictures) {
        std::string caption = viz::xml_escape(p.shows.empty() ? p.file : p.shows);
        // An <object>, not an <img>: the SVG stays a document, so hovering a block of a model or a heatmap's cell
        // shows its <title>. The caption links the picture at full size (a wide graph).
        if (fs::path(p.file).extension() == ".svg")
          add("<figure><object type=\"image/svg+xml\" data=\"{0}\"><img src=\"{0}\" alt=\"{1}\"/></object>"
              "<figcaption>{1} (<a href=\"{0}\"><code>{2}</code></a> at full size)</figcaption></figure>\n",
              viz::xml_escape(href(e.program, p.file)), caption, viz::xml_escape(p.file));
        else  // the graphs' Graphviz sources
          add("<p>{}: <a href=\"{}\">{}</a></p>\n", caption, viz::xml_escape(href(e.program, p.file)),
              viz::xml_escape(p.file));
      }
      if (!story.remember.empty()) add("<p class=\"remember\">{}</p>\n", viz::xml_escape(story.remember));
      if (r.output->transcript) {
        // Folded when long, open when short; the summary line names the lesson and counts the lines.
        add("<details class=\"transcript\"{}>\n<summary>Transcript of lesson {:02d} · {} ({} lines)</summary>\n",
            story.lines > fold_above_lines ? "" : " open=\"open\"", e.number, viz::xml_escape(e.title), story.lines);
        // (An HTML parser drops a newline right after <pre>: a transcript starts with its header line.)
        add("<pre class=\"transcript\">{}</pre>\n</details>\n", viz::xml_escape(*r.output->transcript));
      }
    }
    add("</section>\n");
  }
  // The script only where the page lists exercises: a page without them stays script-free.
  if (page.find("data-exercise=") != std::string::npos) add("{}", exercise_state_script(sources, out));
  add("</body>\n</html>\n");

  std::error_code ec;
  fs::create_directories(out, ec);
  fs::path file = out / "index.html";
  std::ofstream stream(file, std::ios::binary);
  stream << page;
  stream.close();
  if (!stream) fail("course page: cannot write {}", file.string());
  return file;
}

}  // namespace qkv::lesson
