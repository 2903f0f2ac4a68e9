// The lessons' shared machinery (lesson.hpp): flags through CLI11, the
// transcript, results.json through nlohmann-json, the progress line.
#include "lesson.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/chrono.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "course_page.hpp"  // unfinished_name

#ifndef QKV_DATA_DIR
#error "the build passes QKV_DATA_DIR, the repository's data/ folder"
#endif

namespace qkv::lesson {

// --- transcript ----------------------------------------------------------------

std::string strip_escape_codes(std::string_view text) {
  // An ANSI escape sequence is ESC '[' parameters, ending in a byte in '@'…'~' (the 'm' of a colour).
  std::string plain;
  plain.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      i += 2;
      while (i < text.size() && !(text[i] >= '@' && text[i] <= '~')) ++i;
      continue;  // skips the final byte too
    }
    plain += text[i];
  }
  return plain;
}

Transcript::Transcript(std::FILE* terminal, bool is_tty) : terminal_(terminal), is_tty_(is_tty) {}

Transcript::~Transcript() {
  end_in_place();
  if (copy_) std::fclose(copy_);
}

void Transcript::open(const std::filesystem::path& file) {
  if (copy_) std::fclose(copy_);
  copy_ = std::fopen(file.c_str(), "w");
  if (!copy_) fail("lesson: cannot write the transcript {}", file.string());
}

void Transcript::write(std::string_view text) {
  end_in_place();
  std::fwrite(text.data(), 1, text.size(), terminal_);
  std::fflush(terminal_);
  if (copy_) {
    std::string plain = strip_escape_codes(text);
    std::fwrite(plain.data(), 1, plain.size(), copy_);
    std::fflush(copy_);
  }
}

void Transcript::write_in_place(std::string_view line) {
  if (!is_tty_) {
    write(std::string(line) + "\n");
    return;
  }
  // "\r" back to the line's start, the new text, ESC[K clears what the old line had beyond it.
  fmt::print(terminal_, "\r{}\x1b[K", line);
  std::fflush(terminal_);
  last_in_place_ = line;
}

void Transcript::end_in_place() {
  if (last_in_place_.empty()) return;
  std::string line = std::move(last_in_place_);
  last_in_place_.clear();
  std::fputc('\n', terminal_);
  if (copy_) fmt::print(copy_, "{}\n", strip_escape_codes(line));
}

// --- progress --------------------------------------------------------------------

Progress::Progress(Transcript& out, std::string unit, int64_t total)
    : out_(out), unit_(std::move(unit)), total_(total), start_(std::chrono::steady_clock::now()) {}

void Progress::update(int64_t done, const std::vector<std::pair<std::string, double>>& values) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = fmt::format("{} {}/{}", unit_, done, total_);
  for (const auto& [name, value] : values)  // a whole number as one ("n 64"), others to 4 decimals
    line += std::abs(value) < 1e15 && value == std::round(value) ? fmt::format("  {} {:.0f}", name, value)
                                                                 : fmt::format("  {} {:.4f}", name, value);
  if (done > 0 && seconds > 0) {
    double rate = static_cast<double>(done) / seconds;  // steps per second
    line += fmt::format("  {:.1f} {}/s  {:.1f} s left", rate, unit_, static_cast<double>(total_ - done) / rate);
  }
  out_.write_in_place(line);
}

void Progress::finish() { out_.end_in_place(); }

void check_finite_loss(double loss, std::string_view unit, int64_t step, std::string_view detail) {
  if (std::isfinite(loss)) return;
  fail(
      "training stopped at {} {}{}: the loss is {}, not a finite number, and every weight it reaches would be NaN "
      "from here on (a smaller --lr may help)",
      unit, step, detail, loss);
}

// --- flags -------------------------------------------------------------------------
// CLI11's own conversions are not used for numbers: they read "" as 0, clamp
// what overflows to the largest value, and read "010" as octal.

namespace {

// `text` as a whole decimal number ('-' first if negative, then digits) in
// [min, max]; a CLI::ValidationError naming `flag` otherwise.
template <class Int>
Int parse_integer(const std::string& flag, const std::string& text, Int min, Int max) {
  const bool negative = !text.empty() && text[0] == '-';
  const bool digits = text.size() > (negative ? 1u : 0u) && std::all_of(text.begin() + (negative ? 1 : 0), text.end(),
                                                                        [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) throw CLI::ValidationError(flag, fmt::format("'{}' is not a whole number", text));
  Int value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool fits = error == std::errc() && end == text.data() + text.size();  // unsigned: "-1" does not fit
  if (fits && value >= min && value <= max) return value;
  const bool low = fits ? value < min : negative;
  throw CLI::ValidationError(flag, low ? fmt::format("{} is too small: it must be at least {}", text, min)
                                       : fmt::format("{} is too large: it must be at most {}", text, max));
}

// `text` as a finite float; a CLI::ValidationError naming `flag` otherwise.
// std::strtof, as std::from_chars would not be: libc++ (clang on macOS,
// emscripten) has no from_chars for float. Like from_chars, it takes no
// leading space or '+'.
float parse_float(const std::string& flag, const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const float value = std::strtof(begin, &end);
  const bool whole = !text.empty() && text[0] != '+' && !std::isspace(static_cast<unsigned char>(text[0])) &&
                     end == begin + text.size();
  if (!whole) throw CLI::ValidationError(flag, fmt::format("'{}' is not a number", text));
  if (errno == ERANGE)
    throw CLI::ValidationError(flag, fmt::format("{} is out of a float's range (about 1e-38 to 3.4e38)", text));
  if (!std::isfinite(value)) throw CLI::ValidationError(flag, fmt::format("{} is not a finite number", text));
  return value;
}

// --- a run that fails ----------------------------------------------------------------

// What the terminate handler needs to report a failed run and mark its
// folder; filled in by start(), cleared by finish().
struct RunState {
  std::string program;
  std::filesystem::path marker;  // <out>/unfinished.txt while the run has not finished
  std::string flags;             // the number flags given: "--n-train 3000000000 --lr 0.1"
};
RunState& run_state() {
  static RunState state;
  return state;
}

// All `size` bytes of `text` to the file descriptor `fd`, as far as it takes them.
void write_all(int fd, const char* text, size_t size) noexcept {
  while (size > 0) {
    const ssize_t wrote = ::write(fd, text, size);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    text += wrote;
    size -= static_cast<size_t>(wrote);
  }
}

// Best effort, and never throws: it runs while a lesson is failing.
void write_text(const std::filesystem::path& file, const std::string& text) noexcept {
  if (std::FILE* f = std::fopen(file.c_str(), "w")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

// Print the error, name the flags, mark the folder, and end the process with
// status 1. `prefix` and `what` make the message ("out of memory", then the
// library's message). Nothing here allocates: when memory has run out, the
// model that took it is still held (an exception no one catches does not
// unwind the stack), so a std::string or an fopen (which mallocs its buffer)
// could fail in turn, and a second exception in the terminate handler aborts
// the process. The report is formatted into a fixed buffer and written with
// write(2).
[[noreturn]] void fail_run(std::string_view prefix, const char* what, bool memory) {
  static char report[8192];  // "<program> failed:\n" (the marker's first line), then what the terminal gets
  const RunState& run = run_state();
  const size_t room = sizeof report - 1;  // one byte kept for the closing '\n'
  const size_t header = std::min(room, fmt::format_to_n(report, room, "{} failed:\n", run.program).size);
  size_t used = header;
  used += fmt::format_to_n(report + used, room - used, "error: {}{}", prefix, what).size;
  used = std::min(used, room);
  if (!run.flags.empty())
    used += fmt::format_to_n(report + used, room - used, "\n  with the flags {}{}", run.flags,
                             memory ? ": smaller values need less memory" : "")
                .size;
  used = std::min(used, room);
  report[used++] = '\n';
  std::fflush(stdout);
  write_all(STDERR_FILENO, report + header, used - header);
  if (!run.marker.empty()) {
    const int fd = ::open(run.marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      write_all(fd, report, used);
      ::close(fd);
    }
  }
  std::_Exit(1);
}

}  // namespace

// --- lesson ------------------------------------------------------------------------

struct Lesson::Impl {
  CLI::App app;
  std::vector<std::string> numbers_given;  // "--n-train 3000000000", "--lr 0.1": the number flags given
  nlohmann::json results = nlohmann::json::object();
  nlohmann::json pictures = nlohmann::json::array();
  nlohmann::json sections = nlohmann::json::array();
  nlohmann::json flags = nlohmann::json::array();  // what --describe prints of each flag
  bool describe = false;
};

Lesson::Lesson(int argc, char** argv, int number)
    : impl_(std::make_unique<Impl>()), argc_(argc), argv_(argv), start_(std::chrono::steady_clock::now()) {
  // A lesson is a straight script with no try/catch: an error it does not catch
  // (a qkv::Error, memory that cannot be had) ends it with the message, the
  // flags it was given, its folder marked unfinished, and exit status 1.
  std::set_terminate([] {
    // No std::string here either (fail_run says why): the messages are the
    // exception's own text and string literals.
    if (std::exception_ptr error = std::current_exception()) {
      try {
        std::rethrow_exception(error);
      } catch (const std::bad_alloc&) {
        fail_run("out of memory (std::bad_alloc)", "", true);
      } catch (const std::length_error& e) {
        fail_run("a size too large to allocate: ", e.what(), true);
      } catch (const std::exception& e) {  // the library's errors say "out of memory allocating shape …"
        fail_run("", e.what(), std::strstr(e.what(), "out of memory") != nullptr);
      } catch (...) {
      }
    }
    fail_run("an unknown exception", "", false);
  });
  std::optional<CatalogEntry> entry = find_lesson(number);
  if (!entry) fail("lesson: the catalogue has no lesson {}", number);
  entry_ = *entry;
  out_ = std::filesystem::path("out") / "lessons" / std::string(entry_.program);
  CLI::App& app = impl_->app;
  app.description(fmt::format("Lesson {:02d}: {}\n  ({})", entry_.number, entry_.title, entry_.sections));
  app.name(std::string(entry_.program));
  option("--out", out_, "folder for the pictures, transcript.txt and results.json");
  app.add_option_function<std::string>(
         "--seed",
         [this](const std::string& text) {
           seed_ = parse_integer<uint64_t>("--seed", text, 0, std::numeric_limits<uint64_t>::max());
         },
         "seed of the random numbers (same seed, same numbers)")
      ->type_name("UINT")
      ->default_str(std::to_string(seed_));
  app.add_option("--color", color_, "colour in the terminal pictures")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_flag("--describe", impl_->describe,
               "print the lesson and its flags as JSON (what the course page makes its form from), and exit");
  impl_->flags.push_back(
      {{"flag", "--seed"}, {"type", "seed"}, {"default", seed_}, {"help", "seed of the random numbers"}});
}

Lesson::~Lesson() {
  // main returned without finish(): the folder is not complete, and says so.
  if (started_ && !finished_)
    write_text(out_ / std::string(unfinished_name),
               fmt::format("{} ended without finishing (main returned before lesson.finish())\n", entry_.program));
  if (started_) run_state() = RunState{};
}

void Lesson::option(const std::string& flag, int64_t& value, const std::string& help, Range range) {
  if (range.min > range.max) fail("lesson: {}: the range [{}, {}] is empty", flag, range.min, range.max);
  impl_->app
      .add_option_function<std::string>(
          flag,
          [&value, flag, range, impl = impl_.get()](const std::string& text) {
            value = parse_integer<int64_t>(flag, text, range.min, range.max);
            impl->numbers_given.push_back(fmt::format("{} {}", flag, text));
          },
          fmt::format("{} (from {} to {})", help, range.min, range.max))
      ->type_name("INT")
      ->default_str(std::to_string(value));
  impl_->flags.push_back(
      {{"flag", flag}, {"type", "int"}, {"default", value}, {"help", help}, {"min", range.min}, {"max", range.max}});
}
void Lesson::option(const std::string& flag, float& value, const std::string& help) {
  impl_->app
      .add_option_function<std::string>(
          flag,
          [&value, flag, impl = impl_.get()](const std::string& text) {
            value = parse_float(flag, text);
            impl->numbers_given.push_back(fmt::format("{} {}", flag, text));
          },
          help)
      ->type_name("FLOAT")
      ->default_str(fmt::format("{}", value));
  impl_->flags.push_back({{"flag", flag}, {"type", "float"}, {"default", value}, {"help", help}});
}
void Lesson::option(const std::string& flag, std::filesystem::path& value, const std::string& help) {
  impl_->app
      .add_option_function<std::string>(
          flag,
          [&value, flag](const std::string& text) {
            if (text.empty()) throw CLI::ValidationError(flag, "an empty path");
            value = text;
          },
          help)
      ->type_name("PATH")
      ->default_str(value.string());
}
void Lesson::data_option() {
  data_ = QKV_DATA_DIR;
  option("--data", data_, "folder the lesson reads its files from");
}

void Lesson::start() {
  try {
    impl_->app.parse(argc_, argv_);
  } catch (const CLI::ParseError& e) {
    std::exit(impl_->app.exit(e));  // --help prints and exits 0; a bad flag says why and exits non-zero
  }
  if (impl_->describe) {  // the number flags: --out, --color and --data are the page's own business
    nlohmann::json lesson = {{"number", entry_.number},
                             {"program", entry_.program},
                             {"title", entry_.title},
                             {"sections", entry_.sections},
                             {"flags", impl_->flags}};
    fmt::print("{}\n", lesson.dump());
    std::exit(0);
  }
  // From here the folder is this run's: an earlier run's results must not
  // read as this run's, and until finish() the folder says it is unfinished.
  std::filesystem::create_directories(out_);
  std::filesystem::remove(out_ / "results.json");
  RunState& run = run_state();
  run.program = entry_.program;
  run.marker = out_ / std::string(unfinished_name);
  run.flags = fmt::format("{}", fmt::join(impl_->numbers_given, " "));
  write_text(run.marker, fmt::format("{} started at {:%Y-%m-%d %H:%M:%S} (process {}) and has not finished: it is "
                                     "still running, or it was stopped (killed, out of memory)\n",
                                     entry_.program, fmt::localtime(std::time(nullptr)), getpid()));
  started_ = true;
  transcript_ = std::make_unique<Transcript>(stdout, isatty(fileno(stdout)) != 0);
  transcript_->open(out_ / "transcript.txt");
  std::string title = fmt::format("Lesson {:02d} · {}", entry_.number, entry_.title);
  size_t width = 0;  // characters, not bytes: count the bytes that start a UTF-8 character
  for (char c : title) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  print("{}\n{}\n", title, std::string(width, '='));
  print("Sections of the notes: {}\n", entry_.sections);
  print("Output folder: {}   (seed {})\n", out_.string(), seed_);
  // Which arithmetic this build computes in (QKV_SAME_NUMBERS, docs/building.md).
  print("Arithmetic: {}\n", QKV_SAME_NUMBERS ? "the same numbers as every build (QKV_SAME_NUMBERS; the course's)"
                                             : "this machine's fastest (fused multiply-adds where the CPU has them)");
}

viz::TextOptions Lesson::text_options() const {
  viz::TextOptions text;
  text.color = color_ == "always" ? viz::Color::Always : color_ == "never" ? viz::Color::Never : viz::Color::Auto;
  return text;
}

void Lesson::section(const std::string& title) {
  ++sections_;
  std::string line = fmt::format("== {}. {} ==", sections_, title);
  print("\n{}\n", line);
  impl_->sections.push_back(line);
}

void Lesson::erratum(const std::string& text) { print("Erratum: {}\n", text); }

void Lesson::result(const std::string& key, double value) { impl_->results[key] = value; }
void Lesson::result(const std::string& key, int64_t value) { impl_->results[key] = value; }
void Lesson::result(const std::string& key, bool value) { impl_->results[key] = value; }
void Lesson::result(const std::string& key, const std::string& value) { impl_->results[key] = value; }
void Lesson::result(const std::string& key, const std::vector<double>& values) { impl_->results[key] = values; }
void Lesson::result(const std::string& key, const Shape& shape) { impl_->results[key] = shape.dims(); }
void Lesson::result(const std::string& key, const Tensor& value) {
  impl_->results[key] = {{"shape", value.shape().dims()}, {"values", value.to_vector()}};
}

std::filesystem::path Lesson::picture(const std::string& file, const std::string& shows) {
  impl_->pictures.push_back({{"file", file}, {"shows", shows}});
  return out_ / file;
}

void Lesson::draw_model(const std::string& file, nn::Module& model, const std::function<void()>& forward,
                        const viz::ModelPictureOptions& opt, int summary_depth) {
  const bool training = model.is_training();
  model.eval();  // no dropout: nothing is drawn from the generator
  viz::ModelTrace trace = nn::trace(model, forward);
  model.train(training);
  print("{} drawn from one forward of it ({}):\n{}", model.type_name(), file, viz::model_summary(trace, summary_depth));
  viz::save_model_svg(picture(file, opt.title), trace, opt);
  result(std::filesystem::path(file).stem().string() + "_parameters", trace.calls[0].parameters);
}

void Lesson::heatmap(const std::string& file, const Tensor& m, const viz::HeatmapOptions& opt) {
  print("{}\n", viz::heatmap_text(m, opt, text_options()));
  viz::save_heatmap_svg(picture(file, opt.title), m, opt);
}

void Lesson::heatmap_grid(const std::string& file, const Tensor& m, const viz::GridOptions& opt) {
  if (m.dim() != 4) fail("lesson: heatmap_grid wants (rows, cols, H, W), got {}", m.shape());
  for (int64_t r = 0; r < m.size(0); ++r)
    for (int64_t c = 0; c < m.size(1); ++c) {
      viz::HeatmapOptions cell = opt.cell;
      std::vector<std::string> parts = {opt.title};
      if (static_cast<size_t>(r) < opt.row_titles.size()) parts.push_back(opt.row_titles[static_cast<size_t>(r)]);
      if (static_cast<size_t>(c) < opt.col_titles.size()) parts.push_back(opt.col_titles[static_cast<size_t>(c)]);
      cell.title = fmt::format("{}", fmt::join(parts, ", "));
      Tensor one = reshape(slice(slice(m, 0, r, r + 1), 1, c, c + 1), {m.size(2), m.size(3)});  // (H, W)
      print("{}\n", viz::heatmap_text(one, cell, text_options()));
    }
  viz::save_heatmap_grid_svg(picture(file, opt.title), m, opt);
}

void Lesson::line_plot(const std::string& file, const std::vector<viz::Series>& series, const viz::PlotOptions& opt) {
  print("{}\n", viz::line_plot_text(series, opt, text_options()));
  viz::save_line_plot_svg(picture(file, opt.title), series, opt);
}

void Lesson::graph(const std::string& stem, const Tensor& root, const std::string& shows) {
  viz::GraphFiles files = viz::save_graph(out_ / stem, root);
  impl_->pictures.push_back({{"file", files.dot.filename().string()}, {"shows", shows + " (Graphviz DOT)"}});
  if (!files.svg.empty()) {
    impl_->pictures.push_back({{"file", files.svg.filename().string()}, {"shows", shows}});
    print("{}: {} and {}\n", shows, files.dot.string(), files.svg.string());
  } else {
    print("{}: {}\nGraphviz's `dot` is not on the PATH, so there is no SVG. To draw it:\n", shows, files.dot.string());
    print("  apt-get install graphviz\n  dot -Tsvg {} -o {}\n", files.dot.string(),
          files.dot.parent_path().string() + "/" + stem + ".svg");
  }
}

int Lesson::finish(const std::string& summary) {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  print("\n== Summary ==\n{}\n", summary);
  if (!impl_->pictures.empty()) {
    print("\nPictures, in {}:\n", out_.string());
    for (const auto& p : impl_->pictures)
      print("  {:<28} {}\n", p["file"].get<std::string>(), p["shows"].get<std::string>());
  }
  print("Transcript: {}   Results: {}   ({:.2f} s)\n", (out_ / "transcript.txt").string(),
        (out_ / "results.json").string(), seconds);
  nlohmann::json doc = {
      {"lesson", entry_.number},   {"program", entry_.program},   {"title", entry_.title},      {"seed", seed_},
      {"results", impl_->results}, {"pictures", impl_->pictures}, {"sections", impl_->sections}};
  // Written whole beside it, then renamed into place: never a half results.json.
  const std::filesystem::path results = out_ / "results.json", partial = out_ / "results.json.partial";
  {
    std::ofstream file(partial);
    file << doc.dump(2) << "\n";
    if (!file) fail("lesson: cannot write {}", partial.string());
  }
  std::filesystem::rename(partial, results);
  std::filesystem::remove(out_ / std::string(unfinished_name));
  run_state().marker.clear();
  finished_ = true;
  return 0;
}

}  // namespace qkv::lesson
