// The grader: runs a learner's exercise on seeded cases and on PyTorch's
// stored cases, compares every step with the expected value, and stops at
// the first thing wrong with feedback the learner can act on:
//
//   a wrong shape      both shapes, and the step where it went wrong
//   wrong values       the first wrong element with its inputs, the expected
//                      step and the difference as terminal heatmaps side by
//                      side (SVG too, into <out>/NN/)
//   a known mistake    named, when the learner's numbers equal those of a
//                      known-wrong variant run on the same inputs
//   a wrong gradient   a table of backward against finite differences
//   an exception       the case, and the error's message
//   a blank            "not written yet"
//
// Each exercise's checks are one file, grader/check_NN_name.cpp, whose main
// is a single call:
//   int main(int argc, char** argv) {
//     return grade(1, argc, argv, [](Grader& g) {
//       g.begin_case("one key", "queries (3), keys (1), values (1)");
//       NadarayaWatson got = g.call([&] { return nadaraya_watson(q, k, v); });
//       g.check({"weights", "softmax(-(x - xᵢ)²/2) over the keys"}, got.weights, want.weights, explain, mistakes);
//     });
//   }
// A check that fails ends the grading (one clear message, not a cascade).
// The verdict goes to <out>/progress.json; the exit status is 0 passed,
// 1 failing, 2 a bad flag, 3 not written yet, 4 the grader itself failed
// (its file of PyTorch's values missing, say; named on stderr).
#pragma once
#include <qkv/qkv.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "exercise.hpp"

namespace qkv::exercises {

// A step of the computation the learner writes: its name and its formula.
struct Step {
  std::string name;     // "weights"
  std::string formula;  // "softmax(-(x - xᵢ)²/2) over the keys"
};

// A known mistake: its name, what to do instead, and the step's value under
// it on the case's inputs (a variant that throws on these inputs is not it).
struct Mistake {
  std::string name;  // "softmax over the wrong dimension"
  std::string fix;   // "the weights of one query run along the keys: softmax(…, -1)"
  std::function<Tensor()> output;
};

// The same for a scalar result (BLEU).
struct ScalarMistake {
  std::string name, fix;
  std::function<double()> output;
};

// Element `index` of a step's output, described by its inputs ("query 1 of
// example 0 = [0.5, 1.2], valid length 2").
using Explain = std::function<std::string(const std::vector<int64_t>& index)>;

// A case of tests/reference/exercises.txt (tools/reference/exercises.py):
// named tensors written by PyTorch.
struct TorchCase {
  std::string name;
  std::map<std::string, Tensor> floats;
  std::map<std::string, IntTensor> ints;
  Tensor f(const std::string& key) const;  // a fresh copy; a qkv::Error naming the case if missing
  IntTensor i(const std::string& key) const;
  bool has(const std::string& key) const { return floats.count(key) != 0 || ints.count(key) != 0; }
};

// How a grading ended (internal: thrown by a failed check to stop the run).
struct StopGrading {
  int status;
};

class Grader {
 public:
  Grader(int number, int argc, char** argv);

  // A new case: its name and its inputs in words ("queries (2, 1, 20), valid_lens [2, 6]").
  void begin_case(const std::string& name, const std::string& inputs);

  // Runs the learner's code. A blank's not_written_yet ends the grading as
  // "not written yet"; any other exception fails the case with its message.
  template <class F>
  auto call(F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const NotWrittenYet& e) {
      not_written(e.function);
    } catch (const std::exception& e) {
      threw(e.what());
    }
  }

  // The step's output against the expected one (rtol, atol as PyTorch's
  // allclose); on a mismatch, feedback and the end of the grading.
  void check(const Step& step, const Tensor& got, const Tensor& want, const Explain& explain = {},
             const std::vector<Mistake>& mistakes = {}, float rtol = 1e-4f, float atol = 1e-5f);
  void check_scalar(const Step& step, double got, double want, const std::vector<ScalarMistake>& mistakes = {},
                    double tol = 1e-6);
  // A condition the learner's result must meet, with what it means if not.
  void require(bool ok, const Step& step, const std::string& problem);

  // The learner's f has a gradient (its output is part of a graph) and
  // gradcheck passes it; on failure, gradcheck's verdict and a table of
  // backward against finite differences for the input it names.
  void check_gradients(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                       const std::vector<Tensor>& inputs);
  // Backward against finite differences for f at `inputs`, printed as a table
  // from the first element that disagrees, for the first input with one
  // (nothing if all agree): what check_gradients shows on a failure.
  void gradient_table(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs);

  // f on a PyTorch case's inputs x0, x1, … (as leaves) against PyTorch's
  // `out`, then backward with its grad_out against its grad_x0, grad_x1, …
  // (those it has). f returns the step's value.
  void check_torch(const Step& step, const std::function<Tensor(const std::vector<Tensor>&)>& f, const TorchCase& c,
                   const Explain& explain = {}, float rtol = 1e-4f, float atol = 1e-5f);

  // The stored PyTorch cases of this exercise whose name starts with `prefix`.
  std::vector<TorchCase> torch_cases(const std::string& prefix) const;

  // Prints (and flushes) a line of feedback.
  void print(const std::string& text);

  // Prints the verdict, writes it to progress.json, returns the exit status.
  int finish(int status);

  int number() const { return number_; }
  const std::filesystem::path& out() const { return out_; }

 private:
  [[noreturn]] void not_written(const std::string& function);
  [[noreturn]] void threw(const std::string& what);
  [[noreturn]] void fail(const std::string& headline);
  void pictures(const Step& step, const Tensor& got, const Tensor& want, const std::vector<int64_t>& index);

  int number_;
  std::filesystem::path out_;
  bool color_ = false;
  std::string case_name_, case_inputs_;
  int cases_ = 0, checks_ = 0;
  std::string verdict_;  // the first line of the failure, for progress.json
};

// Runs `body` with a Grader and turns its end into an exit status: main's one call.
int grade(int number, int argc, char** argv, const std::function<void(Grader&)>& body);

// --- helpers for the check files ------------------------------------------------
// A few values of a 1-D slice, compactly: "[0.5000, -1.2000, …]" (at most 8).
std::string values(const Tensor& x);
std::string values(const IntTensor& x);
// x[index[0], …, index[k-1]] for the first k dims: the sub-tensor (a copy).
Tensor at(const Tensor& x, const std::vector<int64_t>& index);
// Element `index` of x.
float element(const Tensor& x, const std::vector<int64_t>& index);

}  // namespace qkv::exercises
