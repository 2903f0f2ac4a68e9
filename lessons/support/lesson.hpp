// The lessons' shared machinery, so that a lesson's file holds only the
// lesson: flags, the output folder, the transcript, the results file, the
// list of pictures, the closing summary and a progress line.
//
//   int main(int argc, char** argv) {
//     qkv::lesson::Lesson lesson(argc, argv, 2);   // lesson 02 of catalog.hpp
//     int64_t n = 50;
//     lesson.option("--n-train", n, "training points", {.max = 10'000});  // --help: (from 1 to 10000)
//     lesson.start();                              // parse flags, make the folder, print the header
//     lesson.section("2、非参数注意力汇聚");
//     lesson.print("weights {}\n", w.shape());
//     lesson.result("test_mse", mse.item());
//     viz::save_heatmap_svg(lesson.picture("attention_weights.svg", "…"), w, opt);
//     return lesson.finish("Nadaraya–Watson weighs each training value by …");  // the summary, results.json
//   }
//
// Everything printed goes to the terminal and, without escape codes, into
// <out>/transcript.txt. Results go into <out>/results.json as
//   {"lesson": 2, "program": "02_nadaraya_watson", "seed": 0,
//    "results": {"test_mse": 0.123, "weights": {"shape": [50, 50], "values": […]}, …},
//    "pictures": [{"file": "attention_weights.svg", "shows": "…"}], "sections": […]}
// which the tests read instead of the prose.
//
// Flags are checked before anything runs: a value that is empty, not a
// number, out of its range (an integer flag is a count or a size: at least 1
// unless the lesson says otherwise, and at most the bound the lesson gives
// it, which --help states) or not finite is refused with a message naming
// the flag, and the program exits non-zero without touching its folder.
//
// `--describe` prints the lesson's catalogue row and its flags (name, type,
// default, help, range) as one line of JSON and exits: the live course page
// (web/) makes each lesson's form from it.
//
// A run completes its folder or leaves it marked unfinished: start() removes
// the old results.json and writes <out>/unfinished.txt; finish() writes the
// new results.json and removes the mark. An error (or a kill) in between
// leaves the mark, with the error in it, and the course page shows the
// lesson as failed. An error names the number flags the run was given, so
// a size too large to allocate points at the flag that asked for it (the
// library's own out-of-memory errors name the shape and the bytes). The
// error is reported without allocating: when memory has run out, the model
// that took it is still held (an uncaught exception does not unwind), and a
// report that needed memory would itself fail.
#pragma once
#include <qkv/qkv.hpp>
#include <qkv/viz.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "catalog.hpp"

namespace qkv::lesson {

// `text` without ANSI escape sequences (ESC [ … letter): the plain copy.
std::string strip_escape_codes(std::string_view text);

// Where printed text goes: a terminal (or pipe) and, once open, a plain copy
// in a file.
class Transcript {
 public:
  Transcript(std::FILE* terminal, bool is_tty);  // terminal is not owned
  ~Transcript();
  void open(const std::filesystem::path& file);  // start copying into `file`
  void write(std::string_view text);             // to both; the copy without escape codes
  // A line that replaces the previous in-place line on a terminal ("\r"),
  // and is an ordinary line when piped. The copy keeps only ordinary lines.
  void write_in_place(std::string_view line);
  void end_in_place();  // close an in-place line: on a terminal, the last one stays (and is copied)
  bool is_tty() const { return is_tty_; }

 private:
  std::FILE* terminal_;
  bool is_tty_;
  std::FILE* copy_ = nullptr;
  std::string last_in_place_;  // on a terminal: the line showing now, copied when it ends
};

// A progress line for long work: step k of n, named numbers (the loss; a
// whole number without decimals), the rate and the time left.
//   epoch 3/5  loss 12.3456  41.2 epoch/s  0.0 s left
class Progress {
 public:
  Progress(Transcript& out, std::string unit, int64_t total);
  void update(int64_t done, const std::vector<std::pair<std::string, double>>& values);
  void finish();  // end the line (on a terminal the last update stays)

 private:
  Transcript& out_;
  std::string unit_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_;
};

// Training stops at the first loss that is not a finite number: after a NaN
// or an infinity every weight it reaches is NaN too, and nothing after it
// would mean anything. Throws qkv::Error: "training stopped at epoch 3
// (batch 7): the loss is nan, not a finite number …".
void check_finite_loss(double loss, std::string_view unit, int64_t step, std::string_view detail = "");

// The range an integer flag must be in. A count or a size is at least 1
// unless the lesson says otherwise, and every integer flag states its upper
// bound (there is no default): far above what a learner would ask for, and
// low enough that the flag alone, the others at their defaults, stays within
// a laptop's memory. --help shows the range beside the flag's help.
//   lesson.option("--n-train", n_train, "training points", {.max = 1'000'000});
struct Range {
  int64_t min = 1;
  int64_t max;
};

class Lesson {
 public:
  // The common flags (--out, --seed, --color) are registered here; a lesson
  // adds its own with option() before start().
  Lesson(int argc, char** argv, int number);
  ~Lesson();

  void option(const std::string& flag, int64_t& value, const std::string& help, Range range);
  void option(const std::string& flag, float& value, const std::string& help);  // any finite float
  void option(const std::string& flag, std::filesystem::path& value, const std::string& help);
  // --data: the folder a lesson reads its files from (default: the repository's data/).
  void data_option();

  // Parse the flags (on --help or a bad flag: print and exit), create the
  // output folder, open the transcript and print the lesson's header.
  void start();

  uint64_t seed() const { return seed_; }
  const std::filesystem::path& out() const { return out_; }
  const std::filesystem::path& data() const { return data_; }
  // How the terminal pictures are drawn (--color auto|always|never).
  viz::TextOptions text_options() const;

  // --- printing -----------------------------------------------------------
  template <class... Args>
  void print(fmt::format_string<Args...> format, Args&&... args) {
    transcript_->write(fmt::format(format, std::forward<Args>(args)...));
  }
  void section(const std::string& title);  // a numbered title: "== 2. title =="
  // One of the notes' mistakes, where it comes up: what they say, what is right.
  void erratum(const std::string& text);
  Transcript& transcript() { return *transcript_; }
  Progress progress(std::string unit, int64_t total) { return Progress(*transcript_, std::move(unit), total); }

  // --- results.json ---------------------------------------------------------
  void result(const std::string& key, double value);
  void result(const std::string& key, int64_t value);
  void result(const std::string& key, bool value);
  void result(const std::string& key, const std::string& value);
  void result(const std::string& key, const std::vector<double>& values);
  void result(const std::string& key, const Shape& shape);   // [2, 4, 10]
  void result(const std::string& key, const Tensor& value);  // {"shape": […], "values": [… row-major]}

  // The path of picture `file` in the output folder, recorded for the
  // summary and results.json with what it shows.
  std::filesystem::path picture(const std::string& file, const std::string& shows);

  // --- pictures, each shown twice: in the terminal and as an SVG file --------
  // A heatmap of the 2-D `m`, titled opt.title (which also says what the file shows).
  void heatmap(const std::string& file, const Tensor& m, const viz::HeatmapOptions& opt);
  // A grid of heatmaps, m (rows, cols, H, W): one SVG, and each cell in the terminal.
  void heatmap_grid(const std::string& file, const Tensor& m, const viz::GridOptions& opt);
  void line_plot(const std::string& file, const std::vector<viz::Series>& series, const viz::PlotOptions& opt);
  // The model drawn from itself: `forward` (a call of `model` on the
  // lesson's inputs) runs once under nn::trace, in evaluation mode (the
  // mode is restored; no dropout draws from the generator), so drawing
  // changes no number of the run. The autograd graph nn::trace records to
  // see which module read which is freed with the trace. Prints viz::model_summary (rows down to `summary_depth`),
  // saves viz::model_svg as `file`, and records <file's stem>_parameters.
  void draw_model(const std::string& file, nn::Module& model, const std::function<void()>& forward,
                  const viz::ModelPictureOptions& opt, int summary_depth = 100);
  // The autograd graph that made `root`: <stem>.dot, and <stem>.svg when Graphviz's
  // `dot` is on the PATH (otherwise the lesson says how to render the DOT file).
  void graph(const std::string& stem, const Tensor& root, const std::string& shows);

  // The closing summary (what was shown, where the pictures are); writes
  // results.json and removes unfinished.txt. Returns main's exit code.
  int finish(const std::string& summary);

 private:
  struct Impl;  // the flag parser and the JSON document, kept out of this header
  std::unique_ptr<Impl> impl_;
  int argc_;
  char** argv_;
  CatalogEntry entry_;
  uint64_t seed_ = 0;
  std::filesystem::path out_, data_;
  std::string color_ = "auto";
  std::unique_ptr<Transcript> transcript_;
  int sections_ = 0;
  std::chrono::steady_clock::time_point start_;
  bool started_ = false, finished_ = false;
};

}  // namespace qkv::lesson
