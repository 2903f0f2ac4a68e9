// The grader's machinery (grader.hpp): the checks, the feedback, the
// pictures and the verdict.
#include "grader.hpp"

#include <qkv/viz.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string_view>

#include "catalog.hpp"
#include "progress.hpp"

#ifndef QKV_EXERCISE_REFERENCE
#error "the build passes QKV_EXERCISE_REFERENCE, the file of PyTorch's values (tests/reference/exercises.txt)"
#endif
#ifndef QKV_SOURCE_DIR
#error "the build passes QKV_SOURCE_DIR, the repository (for the default output folder)"
#endif

namespace qkv::exercises {

namespace fs = std::filesystem;

namespace {

// The width a terminal gives `line`: escape sequences take none, and each
// UTF-8 code point (the heatmaps' block characters too) takes one column.
size_t display_width(std::string_view line) {
  size_t width = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {  // ESC [ … letter
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i])) && line[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++width;  // not a continuation byte
  }
  return width;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Two heatmaps side by side, the left one padded to its widest line; their
// colour scales (lines starting "scale:"), which can be wider than the
// picture, go underneath, one a line.
std::string side_by_side(const std::string& left, const std::string& right) {
  auto split = [](const std::string& text, std::vector<std::string>& body, std::vector<std::string>& scales) {
    for (const std::string& line : lines_of(text))
      (line.find_first_not_of(' ') != std::string::npos && line.compare(line.find_first_not_of(' '), 6, "scale:") == 0
           ? scales
           : body)
          .push_back(line);
  };
  std::vector<std::string> a, b, scales_a, scales_b;
  split(left, a, scales_a);
  split(right, b, scales_b);
  size_t width = 0;
  for (const std::string& line : a) width = std::max(width, display_width(line));
  std::string out;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    std::string l = i < a.size() ? a[i] : "";
    out += "    " + l + std::string(width - display_width(l) + 4, ' ') + (i < b.size() ? b[i] : "") + "\n";
  }
  for (const std::string& line : scales_a) out += "    left:  " + line.substr(line.find_first_not_of(' ')) + "\n";
  for (const std::string& line : scales_b) out += "    right: " + line.substr(line.find_first_not_of(' ')) + "\n";
  return out;
}

std::string index_text(const std::vector<int64_t>& index) {
  std::string text;
  for (size_t i = 0; i < index.size(); ++i) text += (i ? ", " : "") + std::to_string(index[i]);
  return text;
}

// Row-major index of flat position `flat` in `shape`.
std::vector<int64_t> unflatten(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(static_cast<size_t>(shape.ndim()));
  for (int64_t d = shape.ndim() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

bool close(float g, float w, float rtol, float atol) {
  if (std::isnan(w)) return std::isnan(g);
  if (std::isinf(w)) return g == w;
  return std::fabs(g - w) <= atol + rtol * std::fabs(w);
}

// The first element of got that is not close to want's, or -1.
int64_t first_wrong(const Tensor& got, const Tensor& want, float rtol, float atol) {
  const float* g = got.data();
  const float* w = want.data();
  for (int64_t i = 0; i < got.numel(); ++i)
    if (!close(g[i], w[i], rtol, atol)) return i;
  return -1;
}

int64_t count_wrong(const Tensor& got, const Tensor& want, float rtol, float atol) {
  int64_t n = 0;
  const float* g = got.data();
  const float* w = want.data();
  for (int64_t i = 0; i < got.numel(); ++i) n += close(g[i], w[i], rtol, atol) ? 0 : 1;
  return n;
}

// The 2-D picture of x around element `index`: the last two dims at the
// leading index (a 1-D x as one row; a 0-D x has none).
Tensor matrix_at(const Tensor& x, const std::vector<int64_t>& index) {
  if (x.dim() == 1) return x.reshape({1, x.size(0)});
  std::vector<int64_t> lead(index.begin(), index.end() - 2);
  return at(x, lead);
}

std::string file_stem(const std::string& step) {
  std::string stem;
  for (char c : step) stem += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return stem;
}

// tests/reference/exercises.txt, read once: the format of tools/reference/common.py.
std::vector<TorchCase> load_torch_cases() {
  const std::string path = QKV_EXERCISE_REFERENCE;
  std::ifstream in(path);
  if (!in) qkv::fail("grader: cannot open PyTorch's values {}", path);
  std::vector<TorchCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream header(line);
    std::string kind, key;
    header >> kind >> key;
    if (kind == "case") {
      cases.push_back({key, {}, {}});
    } else if (kind == "float" || kind == "int") {
      if (cases.empty()) qkv::fail("grader: {}: '{}' outside a case", path, line);
      int64_t ndim = 0;
      header >> ndim;
      std::vector<int64_t> dims(static_cast<size_t>(ndim));
      for (int64_t& d : dims) header >> d;
      Shape shape(dims);
      std::getline(in, line);
      std::istringstream numbers(line);
      if (kind == "float") {
        std::vector<float> v(static_cast<size_t>(shape.numel()));
        for (float& x : v) {
          std::string word;
          if (!(numbers >> word)) qkv::fail("grader: {}: {}.{}: too few values", path, cases.back().name, key);
          x = std::strtof(word.c_str(), nullptr);
        }
        cases.back().floats[key] = Tensor(std::move(v), shape);
      } else {
        std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
        for (int64_t& x : v) numbers >> x;
        cases.back().ints[key] = IntTensor(std::move(v), shape);
      }
    }
  }
  return cases;
}

}  // namespace

// --- TorchCase ---------------------------------------------------------------------

Tensor TorchCase::f(const std::string& key) const {
  auto it = floats.find(key);
  if (it == floats.end()) qkv::fail("grader: PyTorch case {} has no float '{}'", name, key);
  return Tensor(it->second.to_vector(), it->second.shape());
}

IntTensor TorchCase::i(const std::string& key) const {
  auto it = ints.find(key);
  if (it == ints.end()) qkv::fail("grader: PyTorch case {} has no int '{}'", name, key);
  return IntTensor(it->second.to_vector(), it->second.shape());
}

// --- helpers ---------------------------------------------------------------------------

std::string values(const Tensor& x) {
  std::vector<float> v = x.to_vector();
  std::string text = "[";
  for (size_t i = 0; i < std::min<size_t>(v.size(), 8); ++i) text += fmt::format("{}{:.4f}", i ? ", " : "", v[i]);
  return text + (v.size() > 8 ? ", …]" : "]");
}

std::string values(const IntTensor& x) {
  std::vector<int64_t> v = x.to_vector();
  if (x.dim() == 2 && v.size() <= 16) {  // valid lengths (B, Q): row by row
    std::string text = "[";
    for (int64_t r = 0; r < x.size(0); ++r) {
      text += r ? ", [" : "[";
      for (int64_t c = 0; c < x.size(1); ++c)
        text += fmt::format("{}{}", c ? ", " : "", v[static_cast<size_t>(r * x.size(1) + c)]);
      text += "]";
    }
    return text + "]";
  }
  std::string text = "[";
  for (size_t i = 0; i < std::min<size_t>(v.size(), 8); ++i) text += fmt::format("{}{}", i ? ", " : "", v[i]);
  return text + (v.size() > 8 ? ", …]" : "]");
}

Tensor at(const Tensor& x, const std::vector<int64_t>& index) {
  Tensor t = x.detach();
  for (int64_t i : index) t = t.slice(0, i, i + 1).squeeze(0);
  return t.clone();
}

float element(const Tensor& x, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  for (size_t d = 0; d < index.size(); ++d) flat = flat * x.size(static_cast<int64_t>(d)) + index[d];
  return x.data()[flat];
}

Tensor compared(const Input& in) {
  if (in.value.defined()) return in.value.detach();
  if (!in.ints.defined()) return Tensor();
  const std::vector<int64_t> v = in.ints.to_vector();
  return Tensor(std::vector<float>(v.begin(), v.end()), in.ints.shape());
}

Inputs with_parameters(Inputs inputs, const nn::Module& m, const std::string& prefix) {
  for (const auto& [name, p] : m.named_parameters()) inputs.push_back({prefix + "." + name, p});
  return inputs;
}

// --- the bytes of a tensor --------------------------------------------------------------------

namespace {

Graph graph_of(const Tensor& t) {
  Graph g;
  std::vector<const Node*> queue;
  std::set<const Node*> seen;
  if (t.grad_fn()) queue.push_back(t.grad_fn().get());
  for (size_t i = 0; i < queue.size() && i < 100000; ++i) {
    const Node* node = queue[i];
    if (!seen.insert(node).second) continue;
    ++g.nodes;
    if (std::find(g.ops.begin(), g.ops.end(), node->name) == g.ops.end()) g.ops.push_back(node->name);
    for (const Edge& e : node->edges)
      if (e.node) queue.push_back(e.node.get());
  }
  return g;
}

}  // namespace

void put(Writer& w, const Tensor& t) {
  w.u64(t.defined() ? 1 : 0);
  if (!t.defined()) return;
  w.u64(static_cast<uint64_t>(t.dim()));
  for (int64_t d : t.shape()) w.u64(static_cast<uint64_t>(d));
  w.floats(t.detach().to_vector());
  const bool graph = t.requires_grad();
  w.u64(graph ? 1 : 0);
  if (!graph) return;
  Graph g = graph_of(t);
  w.u64(static_cast<uint64_t>(g.nodes));
  w.u64(g.ops.size());
  for (const std::string& op : g.ops) w.text(op);
}

void get(Reader& r, Tensor& t, std::vector<Graph>& graphs) {
  if (r.u64() == 0) {
    t = Tensor();
    return;
  }
  std::vector<int64_t> dims(r.u64());
  if (dims.size() > 16)
    throw std::runtime_error(fmt::format("a tensor of {} dimensions (the grader reads at most 16)", dims.size()));
  for (int64_t& d : dims) d = static_cast<int64_t>(r.u64());
  std::vector<float> v = r.floats();
  const Shape shape(dims);
  if (static_cast<int64_t>(v.size()) != shape.numel())
    throw std::runtime_error(fmt::format("{} values for a tensor of shape {}", v.size(), shape));
  t = Tensor(std::move(v), shape);
  if (r.u64() == 0) return;
  Graph g;
  g.nodes = static_cast<int64_t>(r.u64());
  const uint64_t n = r.u64();
  for (uint64_t i = 0; i < n; ++i) g.ops.push_back(r.text());
  graphs.push_back(g);
}

// --- Grader ------------------------------------------------------------------------------

namespace {

// The program's own path: /proc/self/exe where there is one (Linux), else argv[0].
fs::path own_path(const char* argv0) {
  std::error_code no_proc;
  fs::path self = fs::read_symlink("/proc/self/exe", no_proc);
  return no_proc ? fs::absolute(argv0) : self;
}

uint64_t fresh_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32 | device()) % 1000000000;  // short enough to type
}

}  // namespace

Grader::Grader(int number, int argc, char** argv)
    : number_(number), out_(fs::path(QKV_SOURCE_DIR) / "out/exercises"), program_(own_path(argv[0])) {
  std::string color = "auto";
  std::optional<uint64_t> seed;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--out" && i + 1 < argc) {
      out_ = argv[++i];
    } else if (flag == "--color" && i + 1 < argc) {
      color = argv[++i];
      if (color != "auto" && color != "always" && color != "never") {
        fmt::print(stderr, "exercise {}: --color takes auto, always or never, not '{}'\n", number, color);
        throw StopGrading{Status::bad_flag};
      }
    } else if (flag == "--seconds" && i + 1 < argc) {
      const std::string word = argv[++i];
      char* end = nullptr;
      const double seconds = std::strtod(word.c_str(), &end);
      if (end == word.c_str() || *end != '\0' || !(seconds > 0) || seconds > 3600) {
        fmt::print(stderr, "exercise {}: --seconds takes a time limit per call in seconds, above 0, not '{}'\n", number,
                   word);
        throw StopGrading{Status::bad_flag};
      }
      limits.seconds = seconds;
    } else if (flag == "--seed" && i + 1 < argc) {
      const std::string word = argv[++i];
      size_t used = 0;
      try {
        seed = std::stoull(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != word.size()) {
        fmt::print(stderr, "exercise {}: --seed takes a whole number (the one a grading printed), not '{}'\n", number,
                   word);
        throw StopGrading{Status::bad_flag};
      }
    } else {
      fmt::print(stderr,
                 "exercise {}: unknown flag '{}'\n"
                 "usage: {} [--seed S] [--seconds S] [--out DIR] [--color auto|always|never]   (./qkv.sh exercise {} "
                 "builds and runs "
                 "this)\n",
                 number, flag, argv[0], number);
      throw StopGrading{Status::bad_flag};
    }
  }
  seed_ = seed ? *seed : fresh_seed();
  // The progress as it is before any of the learner's code runs: finish()
  // writes this exercise's verdict into it, so that nothing the learner's
  // code writes into progress.json survives the grading.
  try {
    progress_ = read_progress(out_);
  } catch (const std::exception& error) {
    progress_error_ = error.what();
  }
  color_ = viz::use_color(color == "always"  ? viz::Color::Always
                          : color == "never" ? viz::Color::Never
                                             : viz::Color::Auto);
  std::optional<ExerciseEntry> e = find_exercise(number);
  if (!e) qkv::fail("grader: no exercise {} in catalog.hpp", number);
  print(fmt::format("exercise {:02d} · {}\n", number, e->title));
  print(fmt::format("  lesson {:02d}, {}\n", e->lesson, e->sections));
  print(fmt::format("  your file: lessons/exercises/{}.cpp\n", e->program));
  print(fmt::format("  random cases from seed {} (./qkv.sh exercise {} --seed {} grades the same cases again)\n", seed_,
                    number, seed_));
}

void Grader::print(const std::string& text) {
  fmt::print("{}", text);
  std::fflush(stdout);
}

void Grader::begin_case(const std::string& name, const std::string& inputs) {
  case_name_ = name;
  case_inputs_ = inputs;
  ++cases_;
  print(fmt::format("case {}: {}   {}\n", cases_, name, inputs));
}

void Grader::fail(const std::string& headline) {
  verdict_ = cases_ == 0 ? fmt::format("{}: {}", case_name_, headline)
                         : fmt::format("case {} ({}): {}", cases_, case_name_, headline);
  throw StopGrading{Status::failing};
}

std::string Grader::in_child(const std::function<std::string()>& body) {
  ChildOutcome o = run_in_child(body, limits);
  // What the learner's code printed: at most 40 lines of the first
  // shown_bytes, each marked, and how much more there was.
  if (o.printed_bytes > 0) {
    std::vector<std::string> lines = lines_of(o.printed);
    size_t cut_lines = o.cut_lines, shown = std::min<size_t>(lines.size(), 40);
    size_t cut_bytes = o.cut_bytes;
    for (size_t i = shown; i < lines.size(); ++i) cut_bytes += lines[i].size() + 1, ++cut_lines;
    std::string text = "  your code printed:\n";
    for (size_t i = 0; i < shown; ++i) text += "    │ " + lines[i] + "\n";
    if (cut_bytes > 0)
      text += fmt::format(
          "    │ … {} more bytes ({} more lines) not shown: what your code prints is cut at 40 lines a call\n",
          cut_bytes, cut_lines);
    print(text);
  }
  const std::string where = fmt::format("case {} ({})", cases_, case_name_);
  switch (o.ending) {
    case Ending::returned:
      return o.result;
    case Ending::not_written:
      verdict_ = fmt::format("{} is not written yet", o.result);
      print(fmt::format("\n{} is not written yet: its body still calls not_written_yet(…).\n", o.result));
      throw StopGrading{Status::not_written};
    case Ending::threw:
      print(fmt::format("  ✗ your code threw {} on this case ({}){}\n", o.detail, case_inputs_,
                        o.result.empty() ? "" : ":\n      " + o.result));
      fail(fmt::format("your code threw {}{}", o.detail, o.result.empty() ? "" : ": " + o.result));
    case Ending::out_of_memory:
      print(fmt::format("  ✗ your code ran out of memory on {} (a call may use {} GB): {}\n", where,
                        limits.memory_bytes >> 30, o.result));
      fail("your code ran out of memory");
    case Ending::exited:
      print(fmt::format(
          "  ✗ your code ended the program ({}) on {} instead of returning: exit() has no place in the function\n",
          o.detail, where));
      fail(fmt::format("your code ended the program ({})", o.detail));
    case Ending::crashed:
      print(fmt::format("  ✗ your code crashed on {}: {}\n", where, o.detail));
      fail(fmt::format("your code crashed: {}", o.detail.substr(0, o.detail.find(':'))));
    case Ending::timed_out:
      print(fmt::format("  ✗ your code took more than {:g} s on {}: an endless loop? It was stopped.\n", limits.seconds,
                        where));
      fail(fmt::format("took more than {:g} s: an endless loop?", limits.seconds));
    case Ending::flooded:
      print(fmt::format("  ✗ your code printed more than {} MB on {}, and was stopped (a print inside a loop?)\n",
                        limits.max_output_bytes >> 20, where));
      fail(fmt::format("printed more than {} MB", limits.max_output_bytes >> 20));
    case Ending::garbled:
      break;
  }
  unreadable("it wrote on, or closed, the grader's pipe");
}

void Grader::read_back(const std::function<void()>& decode) {
  try {
    decode();
  } catch (const std::exception& e) {
    unreadable(e.what());
  }
}

void Grader::unreadable(const std::string& why) {
  print(
      fmt::format("  ✗ the result of your code on case {} ({}) could not be read back: {}\n", cases_, case_name_, why));
  fail("the result of your code could not be read back");
}

void Grader::unchanged(const Inputs& inputs, Reader& r) {
  std::vector<Graph> ignored;
  for (const Input& in : inputs) {
    Tensor after;
    read_back([&] { get(r, after, ignored); });
    const Tensor before = compared(in);
    if (!before.defined()) continue;
    int64_t changed = after.defined() && after.shape() == before.shape() ? first_wrong(after, before, 0.0f, 0.0f) : 0;
    if (changed < 0) continue;
    const std::vector<int64_t> index = unflatten(std::max<int64_t>(changed, 0), before.shape());
    print(fmt::format("  ✗ you changed an input in place: {} {} is not what it was before your call", in.name,
                      before.shape()));
    if (after.defined() && after.shape() == before.shape())
      print(fmt::format(" ({}[{}] was {:.6g}, is now {:.6g})", in.name, index_text(index), before.data()[changed],
                        after.data()[changed]));
    print(fmt::format(
        ".\n    A function must leave its inputs as they are: make new tensors (x * 0.5, not x.mul_(0.5)).\n"));
    fail(fmt::format("you changed an input in place ({})", in.name));
  }
}

void Grader::forbid(const std::vector<Forbidden>& rules) {
  forbidden_.insert(forbidden_.end(), rules.begin(), rules.end());
  check_calls();
}

void Grader::check_calls() {
  // The build lists the calls of the learner's compiled file beside the
  // program (<program>.calls, `nm -C` of its object file): what the linker
  // resolves, whatever the source's spelling (a macro, an alias, a using).
  const fs::path file = program_.string() + ".calls";
  std::ifstream in(file);
  if (!in) qkv::fail("grader: cannot check the exercise's rules: {} is missing (the build writes it)", file.string());
  for (std::string line; std::getline(in, line);) {
    refuse_definition(line);
    if (line.find(" U ") == std::string::npos) continue;  // only what the file calls, not what it defines
    for (const Forbidden& f : forbidden_) {
      if (f.function.empty() || line.find(f.function) == std::string::npos) continue;
      cases_ = 0;
      case_name_ = "the rules";
      print(fmt::format("  ✗ a rule of this exercise is broken: your file calls {}…\n    {}\n", f.function, f.rule));
      fail(fmt::format("rule broken: your file calls {}…", f.function));
    }
  }
}

// A function the learner's file defines that another part of the program
// already has would replace it, where it comes from a library: the
// library's own (qkv::data::bleu, whose value the grader expects), listed by
// the build as "redefines <symbol>", or a C function (pow, strtof: nm shows
// a T, W or i with a plain name) that the C and maths libraries would
// otherwise give every caller, the grader's code too.
void Grader::refuse_definition(const std::string& line) {
  std::string symbol, what;
  if (line.rfind("redefines ", 0) == 0) {
    symbol = line.substr(10);
    what = "a function of the library";
  } else if (const size_t space = line.find(' ');  // "<address> <type> <symbol>"
             space != std::string::npos && space > 0 && line.size() > space + 3 && line[space + 2] == ' ' &&
             std::string_view("TWi").find(line[space + 1]) != std::string_view::npos) {
    symbol = line.substr(space + 3);
    if (symbol.find('(') != std::string::npos || symbol.rfind("__", 0) == 0) return;  // C++, or the compiler's own
    what = "a function of the C library";
  } else {
    return;
  }
  cases_ = 0;
  case_name_ = "the rules";
  print(
      fmt::format("  ✗ your file defines {},\n    {}: yours would replace it for the whole program, the grader's own\n"
                  "    answers too. Give your functions names of their own (helpers go in an anonymous namespace).\n",
                  symbol, what));
  fail(fmt::format("your file defines {}, {}", symbol.substr(0, symbol.find('(')), what));
}

void Grader::obeys_rules(const std::vector<Graph>& graphs) {
  for (const Graph& g : graphs)
    for (const std::string& op : g.ops)
      for (const Forbidden& f : forbidden_) {
        if (f.op.empty() || op != f.op) continue;
        print(fmt::format("  ✗ a rule of this exercise is broken: your result is made by {} (qkv's {})\n    {}\n", op,
                          f.function.empty() ? op : f.function + "…", f.rule));
        fail(fmt::format("rule broken: your result is made by {}", op));
      }
}

void Grader::require(bool ok, const Step& step, const std::string& problem) {
  ++checks_;
  if (ok) return;
  print(fmt::format("  ✗ step {} ({}): {}\n", step.name, step.formula, problem));
  fail(fmt::format("step {}: {}", step.name, problem));
}

void Grader::check(const Step& step, const Tensor& got, const Tensor& want, const Explain& explain,
                   const std::vector<Mistake>& mistakes, float rtol, float atol) {
  ++checks_;
  print(fmt::format("  step {} = {}", step.name, step.formula));
  if (!got.defined()) {
    print(fmt::format("\n  ✗ your {} is an undefined Tensor (nothing was returned); expected shape {}\n", step.name,
                      want.shape()));
    fail(fmt::format("step {}: undefined", step.name));
  }
  // Which known mistake gives exactly the learner's numbers on these inputs?
  auto recognise = [&]() {
    for (const Mistake& m : mistakes) {
      Tensor v;
      try {
        NoGradGuard no_grad;
        v = m.output();
      } catch (const std::exception&) {
        continue;  // the variant cannot run on these inputs: not this one
      }
      if (v.defined() && v.shape() == got.shape() && first_wrong(got.detach(), v, rtol, atol) < 0) {
        print(fmt::format("  This is a known mistake: {}.\n    {}\n", m.name, m.fix));
        return m.name;
      }
    }
    return std::string();
  };
  if (got.shape() != want.shape()) {
    print(fmt::format("\n  ✗ wrong shape at step {}: yours is {}, expected {}\n      (inputs: {})\n", step.name,
                      got.shape(), want.shape(), case_inputs_));
    std::string known = recognise();
    fail(fmt::format("step {}: shape {}, expected {}{}", step.name, got.shape(), want.shape(),
                     known.empty() ? "" : " (" + known + ")"));
  }
  Tensor g = got.detach(), w = want.detach();
  int64_t wrong = first_wrong(g, w, rtol, atol);
  if (wrong < 0) {
    print("   ✓\n");
    return;
  }
  std::vector<int64_t> index = unflatten(wrong, g.shape());
  print(fmt::format("\n  ✗ wrong values at step {}: {} of {} elements differ\n", step.name,
                    count_wrong(g, w, rtol, atol), g.numel()));
  print(fmt::format("    first wrong element: {}[{}] = {:.6g}, expected {:.6g}\n", step.name, index_text(index),
                    g.data()[wrong], w.data()[wrong]));
  if (explain) print(fmt::format("    its inputs: {}\n", explain(index)));
  std::string known = recognise();
  if (g.dim() >= 1) pictures(step, g, w, index);
  fail(fmt::format("step {}: wrong values{}", step.name, known.empty() ? "" : " (" + known + ")"));
}

void Grader::pictures(const Step& step, const Tensor& got, const Tensor& want, const std::vector<int64_t>& index) {
  Tensor expected = matrix_at(want, index), yours = matrix_at(got, index);
  Tensor difference = yours - expected;
  std::vector<int64_t> lead(index.begin(), index.end() - std::min<size_t>(index.size(), 2));
  std::string where = lead.empty() ? "" : "[" + index_text(lead) + "]";
  viz::TextOptions text{.max_rows = 16, .max_cols = 24, .color = color_ ? viz::Color::Always : viz::Color::Never};
  std::string left = viz::heatmap_text(expected, {.title = fmt::format("expected {}{}", step.name, where)}, text);
  std::string right = viz::heatmap_text(difference, {.title = fmt::format("yours - expected{}", where)}, text);
  print(side_by_side(left, right));
  const fs::path folder = out_ / fmt::format("{:02d}", number_);
  const std::string stem = file_stem(step.name);
  try {
    viz::save_heatmap_svg(folder / (stem + "_expected.svg"), expected,
                          {.title = fmt::format("exercise {}: expected {}{}", number_, step.name, where)});
    viz::save_heatmap_svg(folder / (stem + "_yours.svg"), yours,
                          {.title = fmt::format("exercise {}: your {}{}", number_, step.name, where)});
    viz::save_heatmap_svg(folder / (stem + "_difference.svg"), difference,
                          {.title = fmt::format("exercise {}: yours - expected, {}{}", number_, step.name, where)});
    print(fmt::format("    pictures: {}/{}_{{expected,yours,difference}}.svg\n", folder.string(), stem));
  } catch (const std::exception& e) {
    print(fmt::format("    (the pictures could not be saved: {})\n", e.what()));
  }
}

void Grader::check_scalar(const Step& step, double got, double want, const std::vector<ScalarMistake>& mistakes,
                          double tol) {
  ++checks_;
  print(fmt::format("  step {} = {}", step.name, step.formula));
  if (std::fabs(got - want) <= tol) {
    print("   ✓\n");
    return;
  }
  print(fmt::format("\n  ✗ wrong value: yours is {:.6g}, expected {:.6g}\n      (inputs: {})\n", got, want,
                    case_inputs_));
  std::string known;
  for (const ScalarMistake& m : mistakes) {
    double v = 0;
    try {
      v = m.output();
    } catch (const std::exception&) {
      continue;
    }
    if (std::fabs(got - v) <= tol) {
      print(fmt::format("  This is a known mistake: {}.\n    {}\n", m.name, m.fix));
      known = m.name;
      break;
    }
  }
  fail(
      fmt::format("step {}: {:.6g}, expected {:.6g}{}", step.name, got, want, known.empty() ? "" : " (" + known + ")"));
}

namespace {

// The opening trace() and differences() share, in the child: f on copies of
// the inputs that record gradients; f's output, then the copies as f left
// them, then the captured values, written. Returns the copies.
std::vector<Tensor> run_on_copies(Writer& w, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                  const std::vector<Tensor>& inputs, const Inputs& captured, Tensor& out) {
  std::vector<Tensor> xs;
  for (const Tensor& x : inputs) xs.push_back(x.detach().clone().requires_grad_());
  out = f(xs);
  put(w, out);
  for (const Tensor& x : xs) put(w, x.detach());  // as f left them: unchanged, or the checks after mislead
  for (const Input& in : captured) put(w, compared(in));
  return xs;
}

}  // namespace

// The same opening read back in the parent: f's output and its graph, and
// each input and captured value held to what it was before the call.
void Grader::read_run(Reader& r, const std::vector<Tensor>& inputs, const Inputs& captured, Traced& t,
                      std::vector<Graph>& graphs) {
  read_back([&] { get(r, t.out, graphs); });
  Inputs named;
  for (size_t i = 0; i < inputs.size(); ++i) named.push_back({fmt::format("input {}", i), inputs[i]});
  named.insert(named.end(), captured.begin(), captured.end());
  unchanged(named, r);
  t.has_graph = !graphs.empty();
  if (t.has_graph) t.graph = graphs[0];
}

Traced Grader::trace(const std::vector<Tensor>& inputs, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                     const Tensor& grad_out) {
  const std::string bytes = in_child([&] {
    Writer w;
    Tensor out;
    const std::vector<Tensor> xs = run_on_copies(w, f, inputs, {}, out);
    const bool backward = grad_out.defined() && out.defined() && out.requires_grad();
    w.u64(backward ? 1 : 0);
    if (backward) {
      out.backward(grad_out);
      for (const Tensor& x : xs) put(w, x.grad().defined() ? x.grad() : zeros(x.shape()));
    }
    return w.bytes();
  });
  Reader r(bytes);
  Traced t;
  std::vector<Graph> graphs;
  read_run(r, inputs, {}, t, graphs);
  obeys_rules(graphs);
  read_back([&] {
    if (r.u64() == 1) {
      for (size_t i = 0; i < inputs.size(); ++i) {
        Tensor grad;
        get(r, grad, graphs);
        t.grads.push_back(grad);
      }
    }
  });
  return t;
}

// Backward against finite differences for L = Σ w ⊙ f(x), w fixed and random:
// what the child returns, and how the grader reads it.
struct Differences {
  Traced traced;  // f at the inputs, its graph, and backward's dL/dx
  // Per input, for its first elements, dL/dx by differences at two step sizes:
  // eps, and eps / 8 where a step of eps crosses a kink (a ReLU's 0) that a
  // step of eps / 8 does not.
  std::vector<std::vector<double>> numeric, numeric_narrow;
};
namespace {

constexpr float kEps = 1e-2f;
constexpr int64_t kProbed = 64;  // elements probed per input

bool agrees(double analytic, double numeric) {
  return std::fabs(analytic - numeric) <= 2e-3 + 2e-2 * std::fabs(numeric);
}

}  // namespace

// The learner's f and its backward, and the finite differences, in one child.
Differences Grader::differences(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                const std::vector<Tensor>& inputs, const Inputs& captured) {
  const std::string bytes = in_child([&] {
    Writer w;
    Tensor out;
    const std::vector<Tensor> xs = run_on_copies(w, f, inputs, captured, out);
    const bool graph = out.defined() && out.requires_grad();
    if (!graph) return w.bytes();
    Generator gen(7);
    const Tensor weights = randn(out.shape(), gen);
    const std::vector<float> wv = weights.to_vector();
    (out * weights).sum().backward();
    for (const Tensor& x : xs) put(w, x.grad().defined() ? x.grad() : zeros(x.shape()));
    auto loss = [&](const std::vector<Tensor>& at_x) {
      NoGradGuard no_grad;
      std::vector<float> y = f(at_x).to_vector();
      double l = 0;
      for (size_t i = 0; i < y.size() && i < wv.size(); ++i) l += static_cast<double>(y[i]) * wv[i];
      return l;
    };
    std::vector<Tensor> probe;
    for (const Tensor& x : inputs) probe.push_back(x.detach().clone());
    for (Tensor& p : probe) {
      std::vector<float> numeric, narrow;
      for (int64_t j = 0; j < p.numel() && j < kProbed; ++j) {
        float* data = p.data();
        const float original = data[j];
        auto central = [&](float h) {  // (L(x + h) - L(x - h)) / 2h
          data[j] = original + h;
          const double up = loss(probe);
          data[j] = original - h;
          const double down = loss(probe);
          data[j] = original;
          return (up - down) / (2.0 * h);
        };
        // Richardson's extrapolation: the central difference's error is c·h² + O(h⁴),
        // so (4·D(h/2) - D(h)) / 3 cancels the h² term (layer norm's curvature needs it).
        auto extrapolated = [&](float h) { return (4.0 * central(h / 2) - central(h)) / 3.0; };
        numeric.push_back(static_cast<float>(extrapolated(kEps)));
        narrow.push_back(static_cast<float>(extrapolated(kEps / 8)));
      }
      w.floats(numeric);
      w.floats(narrow);
    }
    return w.bytes();
  });
  Reader r(bytes);
  Differences d;
  std::vector<Graph> graphs;
  read_run(r, inputs, captured, d.traced, graphs);
  if (!d.traced.has_graph) return d;
  read_back([&] {
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor grad;
      get(r, grad, graphs);
      d.traced.grads.push_back(grad);
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<float> v = r.floats();
      d.numeric.emplace_back(v.begin(), v.end());
      std::vector<float> narrow = r.floats();
      d.numeric_narrow.emplace_back(narrow.begin(), narrow.end());
    }
  });
  return d;
}

namespace {

// The table of backward against finite differences, from the first element
// that disagrees, for the first input with one; "" if all agree.
std::string difference_table(const Differences& d, const std::vector<Tensor>& inputs) {
  for (size_t n = 0; n < inputs.size() && n < d.numeric.size(); ++n) {
    const Tensor& grad = d.traced.grads[n];
    const std::vector<float> x = inputs[n].to_vector();
    std::string table;
    int rows = 0;
    bool bad = false;
    for (size_t j = 0; j < d.numeric[n].size() && rows < 8; ++j) {
      const double analytic = grad.defined() && grad.numel() == inputs[n].numel() ? grad.data()[j] : 0.0;
      // The step that agrees better: a kink near x spoils only one of them.
      const double wide = d.numeric[n][j], narrow = d.numeric_narrow[n][j];
      const double numeric = std::fabs(analytic - narrow) < std::fabs(analytic - wide) ? narrow : wide;
      const bool ok = agrees(analytic, numeric);
      bad = bad || !ok;
      if (!bad) continue;  // from the first disagreement on
      table += fmt::format("    {:>10}  {:>10.4f}  {:>12.6f}  {:>12.6f}  {}\n",
                           fmt::format("[{}]", index_text(unflatten(static_cast<int64_t>(j), inputs[n].shape()))), x[j],
                           analytic, numeric, ok ? "" : "✗");
      ++rows;
    }
    if (!table.empty())
      return fmt::format("    input {} {}: L = Σ w ⊙ f(inputs) with fixed random w\n", n, inputs[n].shape()) +
             fmt::format("    {:>10}  {:>10}  {:>12}  {:>12}\n{}", "element", "x", "backward", "finite diff", table);
  }
  return "";
}

}  // namespace

void Grader::check_gradients(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                             const std::vector<Tensor>& inputs, const Inputs& captured) {
  ++checks_;
  print(fmt::format("  gradients: {}", what));
  Differences d = differences(f, inputs, captured);
  obeys_rules({d.traced.graph});
  if (!d.traced.has_graph) {
    print(
        "\n  ✗ your output has no gradient: it is not part of a graph. Compute it with qkv's ops on the inputs\n"
        "    (not through data(), to_vector() or detach()), so that backward() reaches them.\n");
    fail("no gradient: the output is not part of a graph");
  }
  const std::string table = difference_table(d, inputs);
  if (table.empty()) {
    print("   ✓ (backward agrees with finite differences)\n");
    return;
  }
  print("\n  ✗ backward disagrees with finite differences\n" + table);
  fail("gradients: backward disagrees with finite differences");
}

void Grader::gradient_table(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                            const std::vector<Tensor>& inputs) {
  Differences d = differences(f, inputs);
  if (d.traced.has_graph) print(difference_table(d, inputs));
}

void Grader::check_torch(const Step& step, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                         const TorchCase& c, const Explain& explain, float rtol, float atol) {
  std::vector<Tensor> xs;
  for (int i = 0; c.has(fmt::format("x{}", i)); ++i) xs.push_back(c.f(fmt::format("x{}", i)));
  bool any = false;
  for (size_t i = 0; i < xs.size(); ++i) any = any || c.has(fmt::format("grad_x{}", i));
  Traced t = trace(xs, f, any ? c.f("grad_out") : Tensor());
  check(step, t.out, c.f("out"), explain, {}, rtol, atol);
  if (!any) return;
  if (!t.has_graph)
    require(false, {"the gradient of " + step.name, "backward with PyTorch's grad_out"},
            "your output has no gradient: it is not part of a graph (compute it with qkv's ops, not through data() "
            "or detach())");
  for (size_t i = 0; i < xs.size(); ++i) {
    const std::string key = fmt::format("grad_x{}", i);
    if (!c.has(key)) continue;
    check({fmt::format("d{}/dx{}", step.name, i), "backward with PyTorch's grad_out, against PyTorch's gradient"},
          t.grads[i], c.f(key), {}, {}, rtol, atol);
  }
}

std::vector<TorchCase> Grader::torch_cases(const std::string& prefix) const {
  static const std::vector<TorchCase> all = load_torch_cases();
  std::vector<TorchCase> cases;
  for (const TorchCase& c : all)
    if (c.name.compare(0, prefix.size(), prefix) == 0) cases.push_back(c);
  if (cases.empty()) qkv::fail("grader: {} has no case named {}…", QKV_EXERCISE_REFERENCE, prefix);
  return cases;
}

int Grader::finish(Status status) {
  std::optional<ExerciseEntry> e = find_exercise(number_);
  if (status == Status::passed) {
    print(fmt::format("\nPASSED: exercise {}, {} cases and {} checks agree with qkv's own code and PyTorch's values.\n",
                      number_, cases_, checks_));
  } else if (status == Status::not_written) {
    print(fmt::format(
        "NOT WRITTEN YET: open lessons/exercises/{}.cpp, write the function, and run ./qkv.sh exercise {} again.\n"
        "  (./qkv.sh exercise {} --hint gives a hint.)\n",
        e->program, number_, number_));
  } else {
    // The verdict in one line (what progress.json keeps), then what to do.
    print(fmt::format(
        "\nFAILED {}{}.\n  Fix lessons/exercises/{}.cpp and run ./qkv.sh exercise {} again; ./qkv.sh exercise {} "
        "--hint "
        "gives a hint;\n  ./qkv.sh exercise {} --seed {} grades the same cases again.\n",
        cases_ == 0 ? "before the first case, " : "at ", verdict_, e->program, number_, number_, number_, seed_));
  }
  try {
    if (!progress_error_.empty()) qkv::fail("{}", progress_error_);
    ExerciseProgress& p = progress_[number_];
    p.state = status == Status::passed ? "passed" : status == Status::not_written ? "not started" : "failing";
    p.detail = status == Status::passed ? fmt::format("{} cases, {} checks", cases_, checks_) : verdict_;
    p.graded = now_text();
    write_progress(out_, progress_);
  } catch (const std::exception& error) {
    fmt::print(stderr, "exercise {}: the progress was not saved: {}\n", number_, error.what());
  }
  return static_cast<int>(status);
}

int grade(int number, int argc, char** argv, const std::function<void(Grader&)>& body) {
  std::unique_ptr<Grader> grader;
  try {
    grader = std::make_unique<Grader>(number, argc, argv);
  } catch (const StopGrading& stop) {
    return static_cast<int>(stop.status);  // a bad flag: nothing graded
  } catch (const std::exception& e) {
    fmt::print(stderr, "exercise {}: the grader cannot start: {}\n", number, e.what());
    return static_cast<int>(Status::grader_failed);
  }
  try {
    grader->forbid({});  // no rules yet: the definitions of the learner's file alone, checked before any case
    body(*grader);
  } catch (const StopGrading& stop) {
    return grader->finish(stop.status);
  } catch (const std::exception& e) {
    // An error outside the learner's code (which runs in child processes): the grader's own.
    fmt::print(stderr, "exercise {}: the grader failed: {}\n", number, e.what());
    return static_cast<int>(Status::grader_failed);
  }
  return grader->finish(Status::passed);
}

}  // namespace qkv::exercises
