// Reader for tests/reference/*.txt; the format is described in tools/reference/common.py.
#include "reference.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace qkv::test {

namespace {

using Cases = std::map<std::string, RefCase>;

Shape read_shape(std::istringstream& header) {
  int64_t ndim = 0;
  header >> ndim;
  std::vector<int64_t> dims(static_cast<size_t>(ndim));
  for (auto& d : dims) header >> d;
  return Shape(dims);
}

Cases load(const std::string& group) {
  std::string path = std::string(QKV_REFERENCE_DIR) + "/" + group + ".txt";
  std::ifstream in(path);
  if (!in) fail("reference: cannot open {}", path);
  Cases cases;
  RefCase* current = nullptr;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream header(line);
    std::string kind, key;
    header >> kind;
    if (kind == "case") {
      header >> key;
      current = &cases[key];
      current->name = key;
    } else if (kind == "float" || kind == "int") {
      if (current == nullptr) fail("reference: {}: '{}' outside a case", path, line);
      header >> key;
      Shape shape = read_shape(header);
      std::getline(in, line);
      std::istringstream values(line);
      if (kind == "float") {
        // strtof, not >>: it reads the "inf" and "nan" Python writes (normalize's p = inf).
        std::vector<float> v(static_cast<size_t>(shape.numel()));
        std::string word;
        for (auto& x : v) {
          if (!(values >> word)) fail("reference: {}: {}.{}: too few values", path, current->name, key);
          char* end = nullptr;
          x = std::strtof(word.c_str(), &end);
          if (*end != '\0') fail("reference: {}: {}.{}: '{}' is not a number", path, current->name, key, word);
        }
        current->floats[key] = Tensor(std::move(v), shape);
      } else {
        std::vector<int64_t> v(static_cast<size_t>(shape.numel()));
        for (auto& x : v) values >> x;
        if (!values && shape.numel() > 0) fail("reference: {}: {}.{}: too few values", path, current->name, key);
        current->ints[key] = IntTensor(std::move(v), shape);
      }
    } else if (kind == "end") {
      current = nullptr;
    }
  }
  return cases;
}

// The cases of tests/reference/<group>.txt, read on first use.
const Cases& cases_of(const std::string& group) {
  static std::map<std::string, Cases> files;
  auto file = files.find(group);
  if (file == files.end()) file = files.emplace(group, load(group)).first;
  return file->second;
}

}  // namespace

Tensor RefCase::tensor(const std::string& key) const {
  auto it = floats.find(key);
  if (it == floats.end()) fail("reference: case {} has no float '{}'", name, key);
  return Tensor(it->second.to_vector(), it->second.shape());
}

IntTensor RefCase::ints_at(const std::string& key) const {
  auto it = ints.find(key);
  if (it == ints.end()) fail("reference: case {} has no int '{}'", name, key);
  return IntTensor(it->second.to_vector(), it->second.shape());
}

std::vector<Tensor> RefCase::inputs() const {
  std::vector<Tensor> xs;
  for (int i = 0; floats.count(fmt::format("x{}", i)) != 0; ++i) xs.push_back(tensor(fmt::format("x{}", i)));
  return xs;
}

const RefCase& reference(const std::string& group, const std::string& name) {
  const Cases& cases = cases_of(group);
  auto it = cases.find(name);
  if (it == cases.end()) fail("reference: tests/reference/{}.txt has no case '{}'", group, name);
  return it->second;
}

std::vector<std::string> reference_cases(const std::string& group, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : cases_of(group))
    if (entry.first.compare(0, prefix.size(), prefix) == 0) names.push_back(entry.first);
  if (names.empty()) fail("reference: tests/reference/{}.txt has no case whose name begins with '{}'", group, prefix);
  return names;
}

void check_close(const Tensor& got, const Tensor& want, const std::string& what, float rtol, float atol) {
  REQUIRE_MESSAGE(got.defined(), what << ": no tensor (expected shape " << want.shape().str() << ")");
  REQUIRE_MESSAGE(got.shape() == want.shape(),
                  what << ": shape " << got.shape().str() << ", torch has " << want.shape().str());
  const float* g = got.data();
  const float* w = want.data();
  for (int64_t i = 0; i < got.numel(); ++i) {
    bool ok = std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i]) || (std::isnan(g[i]) && std::isnan(w[i])) ||
              (std::isinf(w[i]) && g[i] == w[i]);
    if (!ok) {
      FAIL_CHECK(what << ": element " << i << " is " << g[i] << ", torch has " << w[i] << " (rtol " << rtol << ", atol "
                      << atol << ")");
      return;
    }
  }
}

void check_against_torch(const std::string& group, const std::string& name, const RefFn& fn, float rtol, float atol) {
  INFO("reference case " << group << ":" << name);
  const RefCase& c = reference(group, name);
  std::vector<Tensor> xs = c.inputs();
  for (auto& x : xs) x.requires_grad_();
  Tensor out = fn(xs, c);
  check_close(out, c.tensor("out"), name + " out", rtol, atol);
  bool any_grad = false;
  for (size_t i = 0; i < xs.size(); ++i) any_grad = any_grad || c.has(fmt::format("grad_x{}", i));
  if (!any_grad) return;
  out.backward(c.tensor("grad_out"));
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string key = fmt::format("grad_x{}", i);
    if (c.has(key)) check_close(xs[i].grad(), c.tensor(key), name + " " + key, rtol, atol);
  }
}

void check_module_against_torch(const std::string& group, const std::string& name, nn::Module& module,
                                const ModuleFn& fn, float rtol, float atol) {
  INFO("reference case " << group << ":" << name);
  const RefCase& c = reference(group, name);
  StateDict state;
  for (const auto& [key, t] : c.floats)
    if (key.rfind("p.", 0) == 0) state[key.substr(2)] = c.tensor(key);
  module.load_state_dict(state);
  module.zero_grad();

  std::vector<Tensor> xs = c.inputs();
  for (auto& x : xs) x.requires_grad_();
  std::vector<Tensor> outs = fn(xs, c);
  bool single = c.has("out");
  Tensor total;  // Σᵢ sum(outᵢ ⊙ grad_outᵢ): its backward feeds each grad_outᵢ to outᵢ
  for (size_t i = 0; i < outs.size(); ++i) {
    std::string key = single ? "out" : fmt::format("out{}", i);
    if (!c.has(key)) continue;
    check_close(outs[i], c.tensor(key), name + " " + key, rtol, atol);
    if (!outs[i].requires_grad()) continue;
    Tensor term = sum(mul(outs[i], c.tensor(single ? "grad_out" : fmt::format("grad_out{}", i))));
    total = total.defined() ? add(total, term) : term;
  }
  if (!total.defined()) return;
  total.backward();
  for (auto& [pname, p] : module.named_parameters()) {
    std::string key = "grad_p." + pname;
    if (c.has(key)) check_close(p.grad(), c.tensor(key), name + " " + key, rtol, atol);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    std::string key = fmt::format("grad_x{}", i);
    if (c.has(key)) check_close(xs[i].grad(), c.tensor(key), name + " " + key, rtol, atol);
  }
}

}  // namespace qkv::test
