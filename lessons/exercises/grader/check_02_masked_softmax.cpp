// The checks of exercise 02, masked softmax.
//   expected:  qkv::masked_softmax (the library's op), and PyTorch's values of d2l's masked_softmax
//   cases:     d2l's example, 2-D lengths, a valid length of 1 and of the full length, a batch
//              of 1, no lengths at all, PyTorch's values and gradients, and gradcheck
#include "02_masked_softmax.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// 1 where key k is padding in row (b, q): k >= the row's valid length (`at_or_past` false: k > length).
IntTensor padding(const Tensor& X, const IntTensor& lens, bool at_or_past = true, int64_t dim = 2) {
  const int64_t B = X.size(0), Q = X.size(1), n = X.size(dim);
  IntTensor l = lens.dim() == 1 ? lens.reshape({B, 1, 1}) : lens.reshape({B, Q, 1});
  IntTensor k = dim == 2 ? arange_int(0, n).reshape({1, 1, n}) : arange_int(0, n).reshape({1, n, 1});
  return at_or_past ? k.ge(l) : k.gt(l);
}

void grade_case(Grader& g, const std::string& name, const Tensor& X, const IntTensor& lens) {
  g.begin_case(name, fmt::format("X {}, valid_lens {}", X.shape(), lens.defined() ? values(lens) : "undefined"));
  Tensor got = g.call({{"X", X}, {"valid_lens", lens}}, [&] { return exercises::masked_softmax(X, lens); });
  auto explain = [&](const std::vector<int64_t>& i) {
    std::string length = "none (plain softmax)";
    if (lens.defined()) {
      const int64_t len = lens.dim() == 1 ? lens.at({i[0]}) : lens.at({i[0], i[1]});
      length = fmt::format("{} (key {} is {})", len, i[2], i[2] < len ? "valid" : "padding");
    }
    return fmt::format("score X[{}, {}, {}] = {:.4f}, the row's scores {}, its valid length {}", i[0], i[1], i[2],
                       element(X, i), values(at(X, {i[0], i[1]})), length);
  };
  std::vector<Mistake> mistakes = {
      {"softmax over the wrong dimension", "the weights of one query run along the keys, the last dim: softmax(…, -1)",
       [&] { return (lens.defined() ? X.masked_fill(padding(X, lens), -1e6f) : X).softmax(1); }},
  };
  if (lens.defined()) {
    mistakes.insert(
        mistakes.end(),
        {{"the mask applied after the softmax",
          "zeroing weights after the softmax leaves the valid ones summing to less than 1: set the padded scores "
          "to -1e6 before the softmax",
          [&] { return X.softmax(-1).masked_fill(padding(X, lens), 0.0f); }},
         {"the padded scores set to 0 instead of -1e6",
          "exp(0) = 1 still gives the padding weight: fill with -1e6, so exp makes it (almost exactly) 0",
          [&] { return X.masked_fill(padding(X, lens), 0.0f).softmax(-1); }},
         {"one key too many kept (k <= valid length)", "key k is valid when k < valid length: keys 0 … length - 1",
          [&] { return X.masked_fill(padding(X, lens, false), -1e6f).softmax(-1); }},
         {"the queries masked instead of the keys",
          "valid lengths count keys, the last dim of X (B, Q, K), not the query rows",
          [&] { return X.masked_fill(padding(X, lens, true, 1), -1e6f).softmax(-1); }}});
  }
  g.check({"weights", "softmax over the keys of X with the padded keys' scores set to -1e6, (B, Q, K)"}, got,
          qkv::masked_softmax(X, lens), explain, mistakes);
}

}  // namespace

int main(int argc, char** argv) {
  return grade(2, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::masked_softmax(", "MaskedSoftmaxBackward",
               "exercise 2 is masked_softmax itself: build it from simpler ops (masked_fill, softmax)"},
              {"qkv::nn::", "", "exercise 2 is masked_softmax itself: not through a layer of qkv::nn"}});
    Generator gen(g.seed());
    grade_case(g, "d2l's example", rand({2, 2, 4}, gen), int_tensor({2, 3}));
    grade_case(g, "2-D valid lengths", rand({2, 2, 4}, gen), int_tensor({1, 3, 2, 4}, {2, 2}));
    grade_case(g, "a valid length of 1 and of the full length", randn({2, 3, 5}, gen), int_tensor({1, 5}));
    grade_case(g, "a batch of 1, 2-D lengths", randn({1, 4, 3}, gen), int_tensor({1, 2, 3, 3}, {1, 4}));
    grade_case(g, "no valid lengths: a plain softmax", randn({2, 3, 4}, gen), IntTensor());

    for (const TorchCase& c : g.torch_cases("02/")) {
      IntTensor lens = c.has("valid_lens") ? c.i("valid_lens") : IntTensor();
      g.begin_case("PyTorch: " + c.name,
                   fmt::format("X {}, valid_lens {}", c.f("x0").shape(), lens.defined() ? values(lens) : "undefined"));
      g.check_torch(
          {"weights", "against d2l's masked_softmax in PyTorch, float64"},
          [&](const std::vector<Tensor>& x) { return exercises::masked_softmax(x[0], lens); }, c);
    }

    g.begin_case("gradcheck", "X (2, 3, 4), valid_lens [[1, 2, 4], [3, 4, 2]]");
    IntTensor lens = int_tensor({1, 2, 4, 3, 4, 2}, {2, 3});
    g.check_gradients("of the weights with respect to X",
                      [&](const std::vector<Tensor>& x) { return exercises::masked_softmax(x[0], lens); },
                      {randn({2, 3, 4}, gen)}, {{"valid_lens", lens}});
  });
}
