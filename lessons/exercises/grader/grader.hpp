// The grader: runs a learner's exercise on fresh random cases (the seed
// printed; --seed S replays them), on d2l's fixed cases and on PyTorch's
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
//   an exception       the case, and the error's type and message
//   a blank            "not written yet"
//   an input changed   "you changed an input in place", naming it
//   a broken rule      the library function or op the exercise does not allow,
//                      or a function of the library defined again in the learner's file
//   an unreadable result  (a tensor of 17 dimensions) the case, as the learner's failure
//   a crash, a hang    (any way the learner's code ends other than returning)
//                      the way it ended and the case
//
// The learner's code never runs in the grader's process: each call is a
// child process (child.hpp) whose result comes back as data, so the verdict
// is the grader's alone. The expected values are computed in the grader's
// process, from inputs the learner's code cannot reach.
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
// The verdict goes to <out>/progress.json; the exit status is a Status.
#pragma once
#include <qkv/qkv.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "child.hpp"
#include "exercise.hpp"
#include "progress.hpp"
#include "status.hpp"

namespace qkv::exercises {

// A library function or autograd op an exercise must not use, and why.
// `function` is matched in the learner's compiled file (its calls, as the
// linker sees them: "qkv::masked_softmax("); `op` in the autograd graph of
// every tensor the learner's code returns ("MaskedSoftmaxBackward"), which
// also catches a call made through another library function. Either may be empty.
struct Forbidden {
  std::string function;
  std::string op;
  std::string rule;  // "exercise 2 is masked_softmax itself: build it from simpler ops"
};

// An input of a call of the learner's code, by name: after the call it must
// be unchanged. A float tensor, or an integer one ({"valid_lens", lens}).
struct Input {
  Input(std::string name, Tensor value) : name(std::move(name)), value(std::move(value)) {}
  Input(std::string name, IntTensor ints) : name(std::move(name)), ints(std::move(ints)) {}
  std::string name;  // "X"
  Tensor value;
  IntTensor ints;
};
using Inputs = std::vector<Input>;

// The input as the in-place check compares it: the float tensor (detached),
// or the integers as floats (exact for the small counts they hold).
Tensor compared(const Input& in);

// `inputs` and every parameter of `m`, named "<prefix>.<parameter>" ("attention.W_q.weight").
Inputs with_parameters(Inputs inputs, const nn::Module& m, const std::string& prefix);

// What the autograd graph of a returned tensor holds: the names of its ops
// (each once, nearest first) and how many nodes it has.
struct Graph {
  std::vector<std::string> ops;
  int64_t nodes = 0;
};

// The learner's code traced in a child: its output, its graph, and the
// gradients backward gave its inputs.
struct Traced {
  Tensor out;
  bool has_graph = false;
  Graph graph;
  std::vector<Tensor> grads;  // one per input; zeros where backward gave none
};

// --- the bytes of a result: put in the child, got back in the grader -----------------------
void put(Writer& w, const Tensor& t);
void get(Reader& r, Tensor& t, std::vector<Graph>& graphs);
inline void put(Writer& w, double v) { w.f64(v); }
inline void get(Reader& r, double& v, std::vector<Graph>&) { v = r.f64(); }

namespace detail {
struct AnyField {
  template <class T>
  operator T() const;  // never defined: only counts an aggregate's fields
};
template <class R>
constexpr int fields() {
  if constexpr (requires { R{AnyField{}, AnyField{}, AnyField{}}; })
    return 3;
  else if constexpr (requires { R{AnyField{}, AnyField{}}; })
    return 2;
  else
    return 1;
}
}  // namespace detail

// A struct of tensors (an exercise's steps) field by field.
template <class R>
requires std::is_aggregate_v<R>
void put(Writer& w, const R& r) {
  if constexpr (detail::fields<R>() == 3) {
    const auto& [a, b, c] = r;
    put(w, a), put(w, b), put(w, c);
  } else {
    const auto& [a, b] = r;
    put(w, a), put(w, b);
  }
}
template <class R>
requires std::is_aggregate_v<R>
void get(Reader& r, R& out, std::vector<Graph>& graphs) {
  if constexpr (detail::fields<R>() == 3) {
    auto& [a, b, c] = out;
    get(r, a, graphs), get(r, b, graphs), get(r, c, graphs);
  } else {
    auto& [a, b] = out;
    get(r, a, graphs), get(r, b, graphs);
  }
}

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

// How a grading ended: thrown by a failed check, in the grader's process
// only, to stop the run. (Thrown by the learner's code it is one more
// exception of its child: a failure.)
struct StopGrading {
  Status status;
};

struct Differences;  // grader.cpp: backward against finite differences

class Grader {
 public:
  Grader(int number, int argc, char** argv);

  // A new case: its name and its inputs in words ("queries (2, 1, 20), valid_lens [2, 6]").
  void begin_case(const std::string& name, const std::string& inputs);

  // Runs the learner's f() in a child process and returns what it returned
  // (a Tensor, a double, or a struct of tensors). Every other ending fails
  // the case with its name: not written yet, an exception, a crash, a
  // timeout, out of memory, exit(), too much printed. Each input must be
  // unchanged after the call, and no result may be made by a forbidden op.
  // In the child the inputs require grad, so that the ops are recorded.
  template <class F>
  auto call(const Inputs& inputs, F&& f) -> decltype(f()) {
    using R = decltype(f());
    const std::string bytes = in_child([&] {
      for (const Input& in : inputs) {
        Tensor x = in.value;
        if (x.defined() && !x.requires_grad() && !x.grad_fn()) x.requires_grad_();
      }
      Writer w;
      put(w, f());
      for (const Input& in : inputs) put(w, compared(in));
      return w.bytes();
    });
    std::vector<Graph> graphs;
    R out{};
    Reader r(bytes);
    read_back([&] { get(r, out, graphs); });
    unchanged(inputs, r);
    obeys_rules(graphs);
    return out;
  }

  // The learner's f on copies of `inputs` that require grad, in a child:
  // its output, its graph, and (if `grad_out` is defined and the output has
  // a graph) backward's gradients of the inputs for that grad_out.
  Traced trace(const std::vector<Tensor>& inputs, const std::function<Tensor(const std::vector<Tensor>&)>& f,
               const Tensor& grad_out = {});

  // Forbids a library function or op for the rest of the grading (see Forbidden).
  void forbid(const std::vector<Forbidden>& rules);

  // The seed of this grading's random cases (drawn afresh, or --seed S).
  uint64_t seed() const { return seed_; }

  // The limits each call of the learner's code runs under.
  ChildLimits limits;

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
  // backward against finite differences for the input it names. `inputs`,
  // and `captured` (what f reads besides them: valid lengths), must be
  // unchanged by f.
  void check_gradients(const std::string& what, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                       const std::vector<Tensor>& inputs, const Inputs& captured = {});
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
  int finish(Status status);

  int number() const { return number_; }
  const std::filesystem::path& out() const { return out_; }

 private:
  // Runs body in a child (run_in_child), shows what it printed, and turns
  // every ending but a return into a failure of the case; the result's bytes.
  std::string in_child(const std::function<std::string()>& body);
  // Runs `decode` on a child's bytes; a result it cannot read (a tensor of 17
  // dimensions, say) fails the case: the learner's code made it.
  void read_back(const std::function<void()>& decode);
  [[noreturn]] void unreadable(const std::string& why);
  void unchanged(const Inputs& inputs, Reader& r);
  void obeys_rules(const std::vector<Graph>& graphs);
  void check_calls();  // the learner's compiled file against the forbidden functions and definitions
  void refuse_definition(const std::string& line);  // a line of check_calls' listing
  void read_run(Reader& r, const std::vector<Tensor>& inputs, const Inputs& captured, Traced& t,
                std::vector<Graph>& graphs);  // what trace() and differences() read first
  Differences differences(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& inputs,
                          const Inputs& captured = {});
  [[noreturn]] void fail(const std::string& headline);
  void pictures(const Step& step, const Tensor& got, const Tensor& want, const std::vector<int64_t>& index);

  int number_;
  std::filesystem::path out_, program_;
  bool color_ = false;
  uint64_t seed_ = 0;
  std::vector<Forbidden> forbidden_;
  std::string case_name_, case_inputs_;
  int cases_ = 0, checks_ = 0;
  std::string verdict_;         // the first line of the failure, for progress.json
  Progress progress_;           // progress.json as it was when the grader started
  std::string progress_error_;  // why it could not be read, if it could not
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
