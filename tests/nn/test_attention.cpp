// nn::AdditiveAttention, nn::DotProductAttention, nn::MultiHeadAttention and
// transpose_qkv / transpose_output: d2l's printed examples, PyTorch's values
// and gradients (tools/reference/nn_attention.py), dropout, errors.
#include <doctest/doctest.h>

#include <qkv/nn/attention.hpp>
#include <qkv/qkv.hpp>

#include <string>

#include "reference.hpp"

using namespace qkv;

namespace {

IntTensor lens_of(const test::RefCase& c) { return c.has("valid_lens") ? c.ints_at("valid_lens") : IntTensor(); }

// The shape of the case's parameter p.<key> (a Linear's weight is (out, in)).
Shape param_shape(const test::RefCase& c, const std::string& key) { return c.tensor("p." + key).shape(); }

// d2l's example inputs (d2l 11.3): keys all ones, so every key scores the
// same and the weights are uniform over the valid keys; values 0 … 39 as ten
// rows of 4, the same for both examples; valid lengths 2 and 6.
struct D2lExample {
  Tensor keys = ones({2, 10, 2});
  Tensor values = repeat(reshape(arange(40.0f), {1, 10, 4}), {2, 1, 1});
  IntTensor valid_lens = int_tensor({2, 6});
};

// Mathematics: the mean of the first 2 rows of values is [2, 3, 4, 5], of the
// first 6 rows [10, 11, 12, 13]; the weights are 1/2 twice, then 1/6 six times.
void check_d2l_example(const Tensor& out, const Tensor& weights) {
  test::check_close(out, tensor({2, 3, 4, 5, 10, 11, 12, 13}, {2, 1, 4}), "output");
  std::vector<float> w(20, 0.0f);
  for (int k = 0; k < 2; ++k) w[k] = 0.5f;
  for (int k = 0; k < 6; ++k) w[10 + k] = 1.0f / 6;
  test::check_close(weights, tensor(w, {2, 1, 10}), "attention weights");
}

}  // namespace

TEST_CASE("nn/attention: d2l's printed examples") {
  Generator gen(0);
  D2lExample ex;
  SUBCASE("additive attention: queries (2, 1, 20)") {
    nn::AdditiveAttention attention(2, 20, 8, 0.1f, gen);
    attention.eval();
    Tensor out = attention(randn({2, 1, 20}, gen), ex.keys, ex.values, ex.valid_lens);
    check_d2l_example(out, attention.attention_weights);
  }
  SUBCASE("scaled dot-product attention: queries (2, 1, 2)") {
    nn::DotProductAttention attention(0.5f, gen);
    attention.eval();
    Tensor out = attention(randn({2, 1, 2}, gen), ex.keys, ex.values, ex.valid_lens);
    check_d2l_example(out, attention.attention_weights);
  }
}

TEST_CASE("nn/attention: additive attention against torch") {
  for (const std::string& name : test::reference_cases("nn_attention", "additive/")) {
    CAPTURE(name);
    // Sizes from the case: W_k (num_hiddens, key_size), W_q (num_hiddens, query_size).
    const test::RefCase& ref = test::reference("nn_attention", name);
    const Shape W_k = param_shape(ref, "W_k.weight"), W_q = param_shape(ref, "W_q.weight");
    nn::AdditiveAttention attention(W_k[1], W_q[1], W_k[0], 0.1f);
    attention.eval();
    test::check_module_against_torch("nn_attention", name, attention,
                                     [&](const std::vector<Tensor>& x, const test::RefCase& c) {
                                       Tensor out = attention(x[0], x[1], x[2], lens_of(c));
                                       return std::vector<Tensor>{out, attention.attention_weights};
                                     });
  }
}

TEST_CASE("nn/attention: scaled dot-product attention against torch") {
  for (const std::string& name : test::reference_cases("nn_attention", "dot/")) {
    CAPTURE(name);
    nn::DotProductAttention attention(0.2f);
    attention.eval();
    test::check_module_against_torch("nn_attention", name, attention,
                                     [&](const std::vector<Tensor>& x, const test::RefCase& c) {
                                       Tensor out = attention(x[0], x[1], x[2], lens_of(c));
                                       return std::vector<Tensor>{out, attention.attention_weights};
                                     });
  }
}

TEST_CASE("nn/attention: gradcheck") {
  Generator gen(1);
  IntTensor lens = int_tensor({1, 3, 4, 2}, {2, 2});
  SUBCASE("scaled dot-product attention, 2-D valid lens") {
    nn::DotProductAttention attention(0);
    auto f = [&](const std::vector<Tensor>& x) { return attention(x[0], x[1], x[2], lens); };
    auto r = gradcheck(f, {randn({2, 2, 3}, gen), randn({2, 4, 3}, gen), randn({2, 4, 2}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
  SUBCASE("additive attention, 2-D valid lens") {
    nn::AdditiveAttention attention(3, 2, 4, 0, gen);
    auto f = [&](const std::vector<Tensor>& x) { return attention(x[0], x[1], x[2], lens); };
    auto r = gradcheck(f, {randn({2, 2, 2}, gen), randn({2, 4, 3}, gen), randn({2, 4, 2}, gen)});
    CHECK_MESSAGE(r.ok, r.message);
  }
}

TEST_CASE("nn/attention: transpose_qkv and transpose_output") {
  test::check_against_torch("nn_attention", "transpose_qkv", [](const std::vector<Tensor>& x, const test::RefCase&) {
    return nn::transpose_qkv(x[0], 3);
  });
  test::check_against_torch("nn_attention", "transpose_output", [](const std::vector<Tensor>& x, const test::RefCase&) {
    return nn::transpose_output(x[0], 3);
  });
  Generator gen(2);
  Tensor X = randn({2, 5, 12}, gen);
  Tensor heads = nn::transpose_qkv(X, 4);
  CHECK(heads.shape() == Shape{8, 5, 3});
  // Row b·h + i is head i of example b: features 3i … 3i+2 of example b.
  CHECK(heads.at({1 * 4 + 2, 3, 1}) == X.at({1, 3, 2 * 3 + 1}));
  CHECK(nn::transpose_output(heads, 4).to_vector() == X.to_vector());  // the inverse
}

TEST_CASE("nn/attention: multi-head attention against torch") {
  // Every mha/ case, mha/sizes too (checked further below with its sizes named).
  for (const std::string& name : test::reference_cases("nn_attention", "mha/")) {
    CAPTURE(name);
    // Sizes from the case: W_q (num_hiddens, query_size), W_k (·, key_size), W_v (·, value_size);
    // num_heads written into it; a bias when the case has p.W_q.bias.
    const test::RefCase& ref = test::reference("nn_attention", name);
    const Shape W_q = param_shape(ref, "W_q.weight");
    nn::MultiHeadAttention attention(param_shape(ref, "W_k.weight")[1], W_q[1], param_shape(ref, "W_v.weight")[1],
                                     W_q[0], ref.ints_at("num_heads").item(), 0.3f, ref.has("p.W_q.bias"));
    attention.eval();
    test::check_module_against_torch("nn_attention", name, attention,
                                     [&](const std::vector<Tensor>& x, const test::RefCase& c) {
                                       Tensor out = attention(x[0], x[1], x[2], lens_of(c));
                                       return std::vector<Tensor>{out, attention.attention_weights_per_head()};
                                     });
  }
}

TEST_CASE("nn/attention: multi-head attention with its own query, key and value sizes, against torch") {
  // d2l's MultiHeadAttention(key_size 5, query_size 7, value_size 3, num_hiddens 12, 3 heads, bias).
  nn::MultiHeadAttention attention(/*key_size=*/5, /*query_size=*/7, /*value_size=*/3, /*num_hiddens=*/12,
                                   /*num_heads=*/3, /*dropout=*/0.3f, /*bias=*/true);
  attention.eval();
  CHECK(attention.W_q->in_features == 7);
  CHECK(attention.W_k->in_features == 5);
  CHECK(attention.W_v->in_features == 3);
  CHECK(attention.W_o->in_features == 12);
  test::check_module_against_torch("nn_attention", "mha/sizes", attention,
                                   [&](const std::vector<Tensor>& x, const test::RefCase& c) {
                                     Tensor out = attention(x[0], x[1], x[2], lens_of(c));  // (2, 4, 12)
                                     return std::vector<Tensor>{out, attention.attention_weights_per_head()};
                                   });
}

TEST_CASE("nn/attention: multi-head attention, d2l's shapes") {
  // d2l 11.5: num_hiddens 100, 5 heads, queries (2, 4, 100), keys = values (2, 6, 100), valid lens [3, 2].
  Generator gen(3);
  nn::MultiHeadAttention attention(100, 5, 0.5f, false, gen);
  attention.eval();
  Tensor X = ones({2, 4, 100}), Y = ones({2, 6, 100});
  Tensor out = attention(X, Y, Y, int_tensor({3, 2}));
  CHECK(out.shape() == Shape{2, 4, 100});
  CHECK(attention.attention_weights().shape() == Shape{10, 4, 6});
  Tensor per_head = attention.attention_weights_per_head();
  CHECK(per_head.shape() == Shape{2, 5, 4, 6});
  // Every head of example 0 sees 3 keys, of example 1 two (the keys are equal: uniform weights).
  for (int64_t i = 0; i < 5; ++i) {
    CHECK(per_head.at({0, i, 1, 2}) == doctest::Approx(1.0 / 3));
    CHECK(per_head.at({0, i, 1, 3}) == 0);
    CHECK(per_head.at({1, i, 3, 1}) == doctest::Approx(0.5));
    CHECK(per_head.at({1, i, 3, 2}) == 0);
  }
  CHECK(attention.named_parameters().size() == 4);
  CHECK(attention.named_parameters()[0].first == "W_q.weight");
  CHECK(attention.num_parameters() == 4 * 100 * 100);
}

TEST_CASE("nn/attention: dropout acts on the weights in training only") {
  Generator gen(4);
  nn::DotProductAttention attention(0.5f, gen);
  Tensor q = randn({2, 3, 4}, gen), k = randn({2, 5, 4}, gen), v = randn({2, 5, 4}, gen);
  attention.eval();
  Tensor eval_out = attention(q, k, v);
  attention.train();
  Tensor train_out = attention(q, k, v);
  CHECK(train_out.to_vector() != eval_out.to_vector());
  // The kept weights are the softmax itself, before dropout: each row sums to 1.
  Tensor row_sums = sum(attention.attention_weights, -1);
  test::check_close(row_sums, ones({2, 3}), "row sums");
  CHECK_FALSE(attention.attention_weights.requires_grad());  // detached, for drawing
}

TEST_CASE("nn/attention: errors") {
  Tensor q = zeros({2, 4, 12}), kv = zeros({2, 6, 12});
  SUBCASE("multi-head attention") {
    CHECK_THROWS_WITH_AS(
        nn::MultiHeadAttention(100, 3, 0.5f),
        doctest::Contains("MultiHeadAttention: num_hiddens 100 must be a positive multiple of num_heads 3"), Error);
    nn::MultiHeadAttention attention(12, 3, 0);
    CHECK_THROWS_WITH_AS(attention(zeros({2, 4, 11}), kv, kv),
                         doctest::Contains("MultiHeadAttention: queries (2, 4, 11): expected last dim 12"), Error);
    CHECK_THROWS_WITH_AS(
        attention(q, kv, zeros({2, 5, 12})),
        doctest::Contains("MultiHeadAttention: keys (2, 6, 12), values (2, 5, 12): expected one value per key"), Error);
    CHECK_THROWS_WITH_AS(
        attention(q, zeros({3, 6, 12}), zeros({3, 6, 12})),
        doctest::Contains(
            "MultiHeadAttention: queries (2, 4, 12), keys (3, 6, 12), values (3, 6, 12): batch sizes differ"),
        Error);
    CHECK_THROWS_WITH_AS(
        attention(q, kv, kv, int_tensor({1, 2, 3})),
        doctest::Contains("MultiHeadAttention: valid_lens (3) does not fit queries (2, 4, 12): expected (2) or (2, 4)"),
        Error);
    CHECK_THROWS_WITH_AS(attention(q, kv, kv, int_tensor({1, 2, 3, 4, 5, 6}, {2, 3})),
                         doctest::Contains("valid_lens (2, 3) does not fit"), Error);
    CHECK_THROWS_WITH_AS(attention(zeros({4, 12}), kv, kv), doctest::Contains("MultiHeadAttention: queries (4, 12)"),
                         Error);
    CHECK_THROWS_WITH_AS(attention.attention_weights_per_head(),
                         doctest::Contains("MultiHeadAttention: no attention weights yet"), Error);
  }
  SUBCASE("multi-head attention with its own sizes") {
    nn::MultiHeadAttention attention(/*key_size=*/5, /*query_size=*/7, /*value_size=*/3, 12, 3, 0);
    Tensor queries = zeros({2, 4, 7}), keys = zeros({2, 6, 5}), values = zeros({2, 6, 3});
    CHECK(attention(queries, keys, values).shape() == Shape{2, 4, 12});
    CHECK_THROWS_WITH_AS(attention(zeros({2, 4, 5}), keys, values),
                         doctest::Contains("MultiHeadAttention: queries (2, 4, 5): expected last dim 7 (query_size)"),
                         Error);
    CHECK_THROWS_WITH_AS(attention(queries, zeros({2, 6, 7}), values),
                         doctest::Contains("MultiHeadAttention: keys (2, 6, 7): expected last dim 5 (key_size)"),
                         Error);
    CHECK_THROWS_WITH_AS(attention(queries, keys, zeros({2, 6, 5})),
                         doctest::Contains("MultiHeadAttention: values (2, 6, 5): expected last dim 3 (value_size)"),
                         Error);
    CHECK_THROWS_WITH_AS(
        nn::MultiHeadAttention(5, 0, 3, 12, 3, 0),
        doctest::Contains("MultiHeadAttention: key_size 5, query_size 0, value_size 3 must be positive"), Error);
    CHECK_THROWS_WITH_AS(nn::MultiHeadAttention(5, 7, 3, 12, 5, 0),
                         doctest::Contains("num_hiddens 12 must be a positive multiple of num_heads 5"), Error);
  }
  SUBCASE("scaled dot-product attention") {
    nn::DotProductAttention attention(0);
    // The scores are queries·keysᵀ, the keys read transposed (as given, then ᵀ).
    CHECK_THROWS_WITH_AS(attention(zeros({2, 4, 3}), kv, kv),
                         doctest::Contains("bmm: (2, 4, 3) x (2, 6, 12)ᵀ: inner sizes 3 and 12 differ"), Error);
    CHECK_THROWS_WITH_AS(attention(q, kv, kv, int_tensor({-1, 2})),
                         doctest::Contains("masked_softmax: valid_lens[0] is -1"), Error);
  }
  SUBCASE("additive attention") {
    nn::AdditiveAttention attention(12, 5, 8, 0);
    CHECK_THROWS_WITH_AS(attention(q, kv, kv),
                         doctest::Contains("AdditiveAttention: queries (2, 4, 12): expected last dim 5 (query_size)"),
                         Error);
    CHECK_THROWS_WITH_AS(attention(zeros({2, 4, 5}), zeros({2, 6, 4}), kv),
                         doctest::Contains("AdditiveAttention: keys (2, 6, 4): expected last dim 12 (key_size)"),
                         Error);
  }
  SUBCASE("transpose_qkv and transpose_output") {
    CHECK_THROWS_WITH_AS(nn::transpose_qkv(zeros({2, 4, 10}), 3),
                         doctest::Contains("transpose_qkv: X (2, 4, 10) with 3 heads"), Error);
    CHECK_THROWS_WITH_AS(nn::transpose_output(zeros({5, 4, 2}), 3),
                         doctest::Contains("transpose_output: X (5, 4, 2) with 3 heads"), Error);
  }
}
