// The grader's machinery (grader.hpp): the checks, the feedback, the
// pictures and the verdict.
#include "grader.hpp"

#include <qkv/viz.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
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

// --- Grader ------------------------------------------------------------------------------

Grader::Grader(int number, int argc, char** argv) : number_(number), out_(fs::path(QKV_SOURCE_DIR) / "out/exercises") {
  std::string color = "auto";
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--out" && i + 1 < argc) {
      out_ = argv[++i];
    } else if (flag == "--color" && i + 1 < argc) {
      color = argv[++i];
      if (color != "auto" && color != "always" && color != "never") {
        fmt::print(stderr, "exercise {}: --color takes auto, always or never, not '{}'\n", number, color);
        throw StopGrading{2};
      }
    } else {
      fmt::print(stderr,
                 "exercise {}: unknown flag '{}'\n"
                 "usage: {} [--out DIR] [--color auto|always|never]   (./qkv.sh exercise {} builds and runs this)\n",
                 number, flag, argv[0], number);
      throw StopGrading{2};
    }
  }
  color_ = viz::use_color(color == "always"  ? viz::Color::Always
                          : color == "never" ? viz::Color::Never
                                             : viz::Color::Auto);
  std::optional<ExerciseEntry> e = find_exercise(number);
  if (!e) qkv::fail("grader: no exercise {} in catalog.hpp", number);
  print(fmt::format("exercise {:02d} · {}\n", number, e->title));
  print(fmt::format("  lesson {:02d}, {}\n", e->lesson, e->sections));
  print(fmt::format("  your file: lessons/exercises/{}.cpp\n", e->program));
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

void Grader::not_written(const std::string& function) {
  verdict_ = fmt::format("{} is not written yet", function);
  print(fmt::format("\n{} is not written yet: its body still calls not_written_yet(…).\n", function));
  throw StopGrading{3};
}

void Grader::threw(const std::string& what) {
  print(fmt::format("  ✗ your code threw an error on this case ({}):\n      {}\n", case_inputs_, what));
  verdict_ = fmt::format("case {} ({}): your code threw: {}", cases_, case_name_, what);
  throw StopGrading{1};
}

void Grader::fail(const std::string& headline) {
  verdict_ = fmt::format("case {} ({}): {}", cases_, case_name_, headline);
  throw StopGrading{1};
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

void Grader::check_gradients(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                             const std::vector<Tensor>& inputs) {
  ++checks_;
  print(fmt::format("  gradients: {}", what));
  std::vector<Tensor> xs;
  for (const Tensor& x : inputs) xs.push_back(x.detach().clone().requires_grad_());
  Tensor out = call([&] { return f(xs); });
  if (!out.requires_grad()) {
    print(
        "\n  ✗ your output has no gradient: it is not part of a graph. Compute it with qkv's ops on the inputs\n"
        "    (not through data(), to_vector() or detach()), so that backward() reaches them.\n");
    fail("no gradient: the output is not part of a graph");
  }
  GradcheckResult verdict = call([&] { return gradcheck(f, inputs); });
  if (verdict.ok) {
    print("   ✓ (gradcheck: backward agrees with finite differences)\n");
    return;
  }
  print(fmt::format("\n  ✗ {}\n", verdict.message));
  gradient_table(f, inputs);
  fail(fmt::format("gradients: {}", verdict.message));
}

void Grader::gradient_table(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                            const std::vector<Tensor>& inputs) {
  std::vector<Tensor> xs;
  for (const Tensor& x : inputs) xs.push_back(x.detach().clone().requires_grad_());
  Tensor out = call([&] { return f(xs); });
  if (!out.requires_grad()) return;
  // L = Σ w ⊙ f(x) with fixed weights w; backward's dL/dx against central
  // differences (L(x + eps) - L(x - eps)) / 2eps, for the first input that disagrees.
  Generator gen(7);
  Tensor w = randn(out.shape(), gen);
  std::vector<float> wv = w.to_vector();
  auto loss = [&](const std::vector<Tensor>& at_x) {
    NoGradGuard no_grad;
    std::vector<float> y = f(at_x).to_vector();
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += static_cast<double>(y[i]) * wv[i];
    return l;
  };
  Tensor l = (out * w).sum();
  call([&] {
    l.backward();
    return 0;
  });
  const float eps = 1e-2f;
  for (size_t n = 0; n < xs.size(); ++n) {
    Tensor grad = xs[n].grad();
    std::vector<Tensor> probe;
    for (const Tensor& x : inputs) probe.push_back(x.detach().clone());
    std::string table;
    int rows = 0;
    bool bad = false;
    for (int64_t j = 0; j < probe[n].numel() && rows < 8; ++j) {
      float* p = probe[n].data();
      const float original = p[j];
      p[j] = original + eps;
      double up = loss(probe);
      p[j] = original - eps;
      double down = loss(probe);
      p[j] = original;
      double numeric = (up - down) / (2.0 * eps);
      double analytic = grad.defined() ? grad.data()[j] : 0.0;
      bool ok = std::fabs(analytic - numeric) <= 1e-3 + 1e-2 * std::fabs(numeric);
      bad = bad || !ok;
      if (bad) {  // from the first disagreement on
        table += fmt::format("    {:>10}  {:>10.4f}  {:>12.6f}  {:>12.6f}  {}\n",
                             fmt::format("[{}]", index_text(unflatten(j, probe[n].shape()))), original, analytic,
                             numeric, ok ? "" : "✗");
        ++rows;
      }
    }
    if (!table.empty()) {
      print(fmt::format("    input {} {}: L = Σ w ⊙ f(inputs) with fixed random w\n", n, inputs[n].shape()));
      print(fmt::format("    {:>10}  {:>10}  {:>12}  {:>12}\n{}", "element", "x", "backward", "finite diff", table));
      break;
    }
  }
}

void Grader::check_torch(const Step& step, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                         const TorchCase& c, const Explain& explain, float rtol, float atol) {
  std::vector<Tensor> xs;
  for (int i = 0; c.has(fmt::format("x{}", i)); ++i) xs.push_back(c.f(fmt::format("x{}", i)).requires_grad_());
  Tensor out = call([&] { return f(xs); });
  check(step, out, c.f("out"), explain, {}, rtol, atol);
  bool any = false;
  for (size_t i = 0; i < xs.size(); ++i) any = any || c.has(fmt::format("grad_x{}", i));
  if (!any) return;
  if (!out.requires_grad())
    require(false, {"the gradient of " + step.name, "backward with PyTorch's grad_out"},
            "your output has no gradient: it is not part of a graph (compute it with qkv's ops, not through data() "
            "or detach())");
  call([&] {
    out.backward(c.f("grad_out"));
    return 0;
  });
  for (size_t i = 0; i < xs.size(); ++i) {
    const std::string key = fmt::format("grad_x{}", i);
    if (!c.has(key)) continue;
    Tensor grad = xs[i].grad().defined() ? xs[i].grad() : zeros(xs[i].shape());
    check({fmt::format("d{}/dx{}", step.name, i), "backward with PyTorch's grad_out, against PyTorch's gradient"}, grad,
          c.f(key), {}, {}, rtol, atol);
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

int Grader::finish(int status) {
  std::optional<ExerciseEntry> e = find_exercise(number_);
  if (status == 0) {
    print(fmt::format("\nPASSED: exercise {}, {} cases and {} checks agree with qkv's own code and PyTorch's values.\n",
                      number_, cases_, checks_));
  } else if (status == 3) {
    print(fmt::format(
        "NOT WRITTEN YET: open lessons/exercises/{}.cpp, write the function, and run ./qkv.sh exercise {} again.\n"
        "  (./qkv.sh exercise {} --hint gives a hint.)\n",
        e->program, number_, number_));
  } else {
    print(
        fmt::format("\nFAILED at case {} ({}). Fix lessons/exercises/{}.cpp and run ./qkv.sh exercise {} again;\n"
                    "  ./qkv.sh exercise {} --hint gives a hint.\n",
                    cases_, case_name_, e->program, number_, number_));
  }
  try {
    Progress progress = read_progress(out_);
    ExerciseProgress& p = progress[number_];
    p.state = status == 0 ? "passed" : status == 3 ? "not started" : "failing";
    p.detail = status == 0 ? fmt::format("{} cases, {} checks", cases_, checks_) : verdict_;
    p.graded = now_text();
    write_progress(out_, progress);
  } catch (const std::exception& error) {
    fmt::print(stderr, "exercise {}: the progress was not saved: {}\n", number_, error.what());
  }
  return status;
}

int grade(int number, int argc, char** argv, const std::function<void(Grader&)>& body) {
  std::unique_ptr<Grader> grader;
  try {
    grader = std::make_unique<Grader>(number, argc, argv);
  } catch (const StopGrading& stop) {
    return stop.status;  // a bad flag: nothing graded
  } catch (const std::exception& e) {
    fmt::print(stderr, "exercise {}: the grader cannot start: {}\n", number, e.what());
    return 4;
  }
  try {
    body(*grader);
  } catch (const StopGrading& stop) {
    return grader->finish(stop.status);
  } catch (const std::exception& e) {
    // An error outside the learner's code: the grader's own (a missing file of PyTorch's values).
    fmt::print(stderr, "exercise {}: the grader failed: {}\n", number, e.what());
    return 4;
  }
  return grader->finish(0);
}

}  // namespace qkv::exercises
