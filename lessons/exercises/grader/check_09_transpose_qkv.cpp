// The checks of exercise 09, transpose_qkv and transpose_output.
//   expected:  qkv's nn::transpose_qkv and nn::transpose_output; the round trip
//              transpose_output(transpose_qkv(X)) = X; PyTorch's values (d2l's
//              functions) and gradients
//   cases:     lesson 09's shapes, one head, as many heads as features (H/h = 1),
//              a batch of 1 with one position, PyTorch's cases, gradcheck
#include "09_transpose_qkv.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// The heads split, and put back, in the wrong order.
Tensor qkv_interleaved(const Tensor& X, int64_t h) {  // head i = features i, i + h, i + 2h, …
  const int64_t B = X.size(0), T = X.size(1), H = X.size(2);
  return X.reshape({B, T, H / h, h}).permute({0, 3, 1, 2}).reshape({B * h, T, H / h});
}
Tensor qkv_no_permute(const Tensor& X, int64_t h) {  // positions and heads mixed up
  return X.reshape({X.size(0) * h, X.size(1), X.size(2) / h});
}
Tensor qkv_heads_first(const Tensor& X, int64_t h) {  // row i·B + b instead of b·h + i
  const int64_t B = X.size(0), T = X.size(1), H = X.size(2);
  return X.reshape({B, T, h, H / h}).permute({2, 0, 1, 3}).reshape({B * h, T, H / h});
}
Tensor output_no_permute(const Tensor& X, int64_t h) { return X.reshape({X.size(0) / h, X.size(1), X.size(2) * h}); }
Tensor output_interleaved(const Tensor& X, int64_t h) {
  const int64_t B = X.size(0) / h, T = X.size(1), d = X.size(2);
  return X.reshape({B, h, T, d}).permute({0, 2, 3, 1}).reshape({B, T, h * d});
}

std::vector<Mistake> qkv_mistakes(const Tensor& X, int64_t h) {
  return {{"heads split in the wrong order",
           "head i owns consecutive features: reshape to (B, T, h, H/h) (heads first, then their H/h features), "
           "not (B, T, H/h, h)",
           [=] { return qkv_interleaved(X, h); }},
          {"no permute", "reshape (B, T, h, H/h), then permute({0, 2, 1, 3}) to (B, h, T, H/h) before the last reshape",
           [=] { return qkv_no_permute(X, h); }},
          {"heads before examples in the batch dim",
           "row b·h + i is head i of example b: permute({0, 2, 1, 3}) keeps the batch dim first",
           [=] { return qkv_heads_first(X, h); }}};
}

void grade_case(Grader& g, const std::string& name, int64_t B, int64_t T, int64_t H, int64_t h, Generator& gen) {
  Tensor X = randn({B, T, H}, gen);
  g.begin_case(name, fmt::format("X {} (B, T, H), num_heads {}", X.shape(), h));
  auto explain = [&](const std::vector<int64_t>& i) {
    return fmt::format("row {} is head {} of example {}; its position {}, feature {} of the head, is X[{}, {}, {}]",
                       i[0], i[0] % h, i[0] / h, i[1], i[2], i[0] / h, i[1], (i[0] % h) * (H / h) + i[2]);
  };
  Tensor got = g.call({{"X", X}}, [&] { return exercises::transpose_qkv(X, h); });
  g.check({"transpose_qkv", "(B, T, H) -> (B·h, T, H/h)"}, got, nn::transpose_qkv(X, h), explain, qkv_mistakes(X, h));
  Tensor heads = nn::transpose_qkv(X, h);  // (B·h, T, H/h), from the library
  Tensor back = g.call({{"X", heads}}, [&] { return exercises::transpose_output(heads, h); });
  auto explain_back = [&](const std::vector<int64_t>& i) {
    return fmt::format("example {}, position {}, feature {}: head {}'s feature {}", i[0], i[1], i[2], i[2] / (H / h),
                       i[2] % (H / h));
  };
  g.check({"transpose_output", "(B·h, T, H/h) -> (B, T, H)"}, back, nn::transpose_output(heads, h), explain_back,
          {{"heads put back in the wrong order",
            "undo transpose_qkv step by step: reshape (B, h, T, H/h), permute({0, 2, 1, 3}), reshape (B, T, H)",
            [=] { return output_interleaved(heads, h); }},
           {"no permute", "reshape (B, h, T, H/h), permute({0, 2, 1, 3}) to (B, T, h, H/h), then reshape (B, T, H)",
            [=] { return output_no_permute(heads, h); }}});
  Tensor round = g.call({{"X", X}}, [&] { return exercises::transpose_output(exercises::transpose_qkv(X, h), h); });
  g.check({"round trip", "transpose_output(transpose_qkv(X)) = X"}, round, X);
}

}  // namespace

int main(int argc, char** argv) {
  return grade(9, argc, argv, [](Grader& g) {
    g.forbid(
        {{"qkv::nn::transpose_qkv(", "", "exercise 9 is transpose_qkv itself: not qkv::nn::transpose_qkv"},
         {"qkv::nn::transpose_output(", "", "exercise 9 is transpose_output itself: not qkv::nn::transpose_output"}});
    Generator gen(g.seed());
    grade_case(g, "lesson 09's shapes", 2, 4, 8, 2, gen);
    grade_case(g, "four heads", 2, 3, 8, 4, gen);
    grade_case(g, "one head", 2, 3, 4, 1, gen);
    grade_case(g, "as many heads as features", 2, 2, 3, 3, gen);
    grade_case(g, "a batch of 1, one position", 1, 1, 6, 2, gen);

    for (const TorchCase& c : g.torch_cases("09/")) {
      const int64_t h = c.i("num_heads").at({0});
      const bool output = c.name.find("/transpose_output/") != std::string::npos;
      g.begin_case("PyTorch: " + c.name, fmt::format("X {}, num_heads {}", c.f("x0").shape(), h));
      g.check_torch(
          {output ? "transpose_output" : "transpose_qkv", "against d2l's function in PyTorch, float64"},
          [&](const std::vector<Tensor>& x) {
            return output ? exercises::transpose_output(x[0], h) : exercises::transpose_qkv(x[0], h);
          },
          c);
    }

    g.begin_case("gradcheck", "X (2, 3, 4), two heads");
    g.check_gradients("of transpose_output(transpose_qkv(X) · 2) with respect to X",
                      [](const std::vector<Tensor>& x) {
                        return exercises::transpose_output(exercises::transpose_qkv(x[0], 2) * 2.0f, 2);
                      },
                      {randn({2, 3, 4}, gen)});
  });
}
