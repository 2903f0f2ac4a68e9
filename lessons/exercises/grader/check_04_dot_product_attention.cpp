// The checks of exercise 04, scaled dot-product attention with a mask.
//   expected:  qkv's nn::DotProductAttention (its output and attention_weights),
//              and PyTorch's values of d2l's DotProductAttention written out
//   cases:     the keys transposed (K = d), the scale √d (K ≠ d), d2l's example, 2-D lengths, a valid length of 1 and
//   of the full length,
//              d = 1, a batch of 1 with one query, no lengths, PyTorch's values and
//              gradients, and gradcheck
#include <cmath>

#include "04_dot_product_attention.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// The known-wrong variants: the same computation with one mistake in it.
struct Variant {
  bool transpose_keys = true, scale = true, sqrt_scale = true, mask_first = true, sqrt_keys = false, mask = true;
  int64_t softmax_dim = -1;
};

Attention variant(const Tensor& q, const Tensor& k, const Tensor& v, const IntTensor& lens, Variant how) {
  const float d = static_cast<float>(q.size(-1));
  Tensor scores = q.bmm(how.transpose_keys ? k.transpose(1, 2) : k);  // (B, Q, d) x (B, d, K)
  const float keys = static_cast<float>(k.size(1));
  if (how.scale) scores = scores / (how.sqrt_keys ? std::sqrt(keys) : how.sqrt_scale ? std::sqrt(d) : d);
  Tensor weights;
  if (how.softmax_dim != -1) {
    weights = scores.softmax(how.softmax_dim);
  } else if (how.mask_first) {
    weights = qkv::masked_softmax(scores, how.mask ? lens : IntTensor());
  } else {  // softmax first, then the padded weights set to 0
    IntTensor padding = qkv::masked_softmax(zeros(scores.shape()), lens).eq(0.0f);  // exp(-1e6) is exactly 0
    weights = scores.softmax(-1).masked_fill(padding, 0.0f);
  }
  return {weights, weights.bmm(v)};
}

std::vector<Mistake> mistakes(const Tensor& q, const Tensor& k, const Tensor& v, const IntTensor& lens, bool weights) {
  auto step = [=](Variant how) {
    return [=] {
      Attention a = variant(q, k, v, lens, how);
      return weights ? a.weights : a.output;
    };
  };
  std::vector<Mistake> list = {
      {"no 1/√d", "divide the scores Q Kᵀ by √d, d = queries.size(-1), before the softmax", step({.scale = false})},
      {"divided by √K (the number of keys) instead of √d",
       "d is the size of each query and key, queries.size(-1); K = keys.size(1) counts the keys",
       step({.sqrt_keys = true})},
      {"divided by d instead of √d", "the scores' variance is d, so their standard deviation is √d: divide by √d",
       step({.sqrt_scale = false})},
      {"K not transposed",
       "Q (B, Q, d) times Kᵀ (B, d, K): keys.transpose(1, 2); without it the product only has a shape when K = d",
       step({.transpose_keys = false})},
      {"softmax over the wrong dimension", "each query's weights run along the keys, the last dim",
       step({.softmax_dim = 1})},
  };
  if (lens.defined())
    list.push_back({"the mask ignored", "pass valid_lens to masked_softmax, so the padded keys get no weight",
                    step({.mask = false})});
  if (lens.defined())
    list.push_back({"the mask applied after the softmax",
                    "zeroing weights after the softmax leaves the valid ones summing to less than 1: masked_softmax "
                    "sets the padded scores to -1e6 before it",
                    step({.mask_first = false})});
  return list;
}

void grade_case(Grader& g, const std::string& name, const Tensor& q, const Tensor& k, const Tensor& v,
                const IntTensor& lens) {
  g.begin_case(name, fmt::format("queries {}, keys {}, values {}, valid_lens {}", q.shape(), k.shape(), v.shape(),
                                 lens.defined() ? values(lens) : "undefined"));
  Attention got = g.call({{"queries", q}, {"keys", k}, {"values", v}, {"valid_lens", lens}},
                         [&] { return dot_product_attention(q, k, v, lens); });
  nn::DotProductAttention layer(0.0f);
  layer.eval();
  Tensor output = layer(q, k, v, lens);  // (B, Q, Dv)
  auto explain_weight = [&](const std::vector<int64_t>& i) {
    std::string length = "none";
    if (lens.defined()) length = std::to_string(lens.dim() == 1 ? lens.at({i[0]}) : lens.at({i[0], i[1]}));
    return fmt::format("query {} of example {} = {}, key {} = {}, valid length {}, d = {}", i[1], i[0],
                       values(at(q, {i[0], i[1]})), i[2], values(at(k, {i[0], i[2]})), length, q.size(-1));
  };
  g.check({"weights", "masked_softmax(Q Kᵀ / √d, valid_lens), (B, Q, K)"}, got.weights, layer.attention_weights,
          explain_weight, mistakes(q, k, v, lens, true));
  auto explain_output = [&](const std::vector<int64_t>& i) {
    return fmt::format("the weights of query {} of example {} = {}, column {} of the values = {}", i[1], i[0],
                       values(at(layer.attention_weights, {i[0], i[1]})), i[2],
                       values(at(v.transpose(1, 2), {i[0], i[2]})));
  };
  g.check({"output", "weights V, (B, Q, K) x (B, K, Dv) -> (B, Q, Dv)"}, got.output, output, explain_output,
          mistakes(q, k, v, lens, false));
}

}  // namespace

int main(int argc, char** argv) {
  return grade(4, argc, argv, [](Grader& g) {
    g.forbid({{"qkv::nn::DotProductAttention::", "",
               "exercise 4 is scaled dot-product attention itself: not through nn::DotProductAttention"},
              {"qkv::nn::MultiHeadAttention::", "",
               "exercise 4 is scaled dot-product attention itself: not through nn::MultiHeadAttention"}});
    Generator gen(g.seed());
    // Each case named by what it is the first to show. K = d: the keys not
    // transposed still have a shape (and give numbers that can be named),
    // and d ≠ d² shows a scale of d.
    grade_case(g, "K = d: the keys transposed, the mask, the softmax's dim", randn({2, 3, 4}, gen),
               randn({2, 4, 4}, gen), randn({2, 4, 3}, gen), int_tensor({2, 4}));
    // K ≠ d: the first case where √K and √d differ.
    grade_case(g, "the scale √d: more keys than features", randn({2, 2, 3}, gen).mul(2.0f), randn({2, 7, 3}, gen),
               randn({2, 7, 2}, gen), int_tensor({5, 7}));
    // d2l 11.3.2: a batch of 2, one query each, 10 keys of ones, values 0 … 39, valid lengths 2 and 6.
    Tensor values40 = arange(40.0f).reshape({1, 10, 4}).expand({2, 10, 4});
    grade_case(g, "d2l's example", randn({2, 1, 2}, gen), ones({2, 10, 2}), values40, int_tensor({2, 6}));
    grade_case(g, "2-D valid lengths", randn({2, 3, 4}, gen), randn({2, 5, 4}, gen), randn({2, 5, 3}, gen),
               int_tensor({1, 3, 5, 2, 2, 4}, {2, 3}));
    grade_case(g, "a valid length of 1 and of the full length", randn({2, 2, 8}, gen).mul(2.0f), randn({2, 4, 8}, gen),
               randn({2, 4, 2}, gen), int_tensor({1, 4}));
    grade_case(g, "d = 1", randn({2, 3, 1}, gen), randn({2, 3, 1}, gen), randn({2, 3, 2}, gen), int_tensor({3, 2}));
    grade_case(g, "a batch of 1, one query", randn({1, 1, 6}, gen), randn({1, 5, 6}, gen), randn({1, 5, 4}, gen),
               int_tensor({3}));
    grade_case(g, "no valid lengths", randn({2, 3, 6}, gen), randn({2, 4, 6}, gen), randn({2, 4, 5}, gen), IntTensor());

    for (const TorchCase& c : g.torch_cases("04/")) {
      IntTensor lens = c.i("valid_lens");
      const bool output = c.name.find("/output/") != std::string::npos;
      g.begin_case("PyTorch: " + c.name, fmt::format("queries {}, keys {}, values {}, valid_lens {}", c.f("x0").shape(),
                                                     c.f("x1").shape(), c.f("x2").shape(), values(lens)));
      g.check_torch(
          {output ? "output" : "weights", "against d2l's DotProductAttention in PyTorch, float64"},
          [&](const std::vector<Tensor>& x) {
            Attention a = dot_product_attention(x[0], x[1], x[2], lens);
            return output ? a.output : a.weights;
          },
          c);
    }

    g.begin_case("gradcheck", "queries (2, 2, 3), keys (2, 4, 3), values (2, 4, 2), valid_lens [2, 4]");
    IntTensor lens = int_tensor({2, 4});
    g.check_gradients(
        "of the output with respect to queries, keys and values",
        [&](const std::vector<Tensor>& x) { return dot_product_attention(x[0], x[1], x[2], lens).output; },
        {randn({2, 2, 3}, gen), randn({2, 4, 3}, gen), randn({2, 4, 2}, gen)}, {{"valid_lens", lens}});
  });
}
