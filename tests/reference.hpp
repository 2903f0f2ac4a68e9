// Reading the PyTorch reference values (tests/reference/*.txt, written by
// tools/make_reference.py) and comparing qkv against them.
//
// The one call most op tests make, tinygrad-style:
//   check_against_torch("elementwise", "mul/row",
//                       [](const std::vector<Tensor>& x, const RefCase&) { return mul(x[0], x[1]); });
// It builds the case's inputs x0, x1, … as leaves, runs the op, compares the
// output with torch's `out`, backpropagates torch's `grad_out` and compares
// each input's gradient with torch's grad_x0, grad_x1, ….
#pragma once
#include <qkv/nn/module.hpp>
#include <qkv/qkv.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace qkv::test {

struct RefCase {
  std::string name;
  std::map<std::string, Tensor> floats;
  std::map<std::string, IntTensor> ints;
  Tensor tensor(const std::string& key) const;  // a fresh copy; fails the test if missing
  IntTensor ints_at(const std::string& key) const;
  bool has(const std::string& key) const { return floats.count(key) != 0 || ints.count(key) != 0; }
  std::vector<Tensor> inputs() const;  // x0, x1, … (fresh copies)
};

// The case `name` of tests/reference/<group>.txt (files are read once and cached).
const RefCase& reference(const std::string& group, const std::string& name);

// The names of the cases of tests/reference/<group>.txt that begin with `prefix`
// (an op's cases: "mul/"), in name order. A test loops over them, so a case
// added to the generator is tested without naming it twice:
//   for (const std::string& name : reference_cases("elementwise", "mul/"))
//     SUBCASE(name.c_str()) { check_against_torch("elementwise", name, …); }
// Throws (failing the test) if no case matches: a renamed op or a typo in the
// prefix must not leave a test that runs nothing.
std::vector<std::string> reference_cases(const std::string& group, const std::string& prefix);

// CHECK that got has want's shape and every |got - want| ≤ atol + rtol·|want|;
// on failure the message names the first bad element and both values.
void check_close(const Tensor& got, const Tensor& want, const std::string& what, float rtol = 1e-4f,
                 float atol = 1e-5f);

using RefFn = std::function<Tensor(const std::vector<Tensor>& inputs, const RefCase& c)>;

// Forward and backward against torch; tolerances are for float32 against
// torch's float64 reference.
void check_against_torch(const std::string& group, const std::string& name, const RefFn& fn, float rtol = 1e-4f,
                         float atol = 1e-5f);

// A layer against PyTorch (cases written by Writer.module_case): load the
// case's parameters p.<name> into `module` with load_state_dict (so the
// parameter names must be PyTorch's too), run fn, compare every output
// (out, or out0, out1, …), backpropagate torch's grad_out(s), and compare
// the gradients of the parameters (grad_p.<name>) and inputs (grad_x0, …).
using ModuleFn = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const RefCase& c)>;
void check_module_against_torch(const std::string& group, const std::string& name, nn::Module& module,
                                const ModuleFn& fn, float rtol = 1e-4f, float atol = 1e-5f);

}  // namespace qkv::test
