// The checks of exercise 13, the online softmax of a row read in blocks.
//   expected:  after each block x[s:e], m and l from qkv's ops on the values read so far,
//              x[0:e] (its max, and Σ exp(x[0:e] - max)), and y from qkv::softmax;
//              PyTorch's values (torch.softmax and the same prefixes, float64)
//   cases:     a maximum that grows and dips from block to block (the first block all
//              negative), a block size that does not divide n, block size 1, a block
//              longer than the row and one as long, values far below 0 (exp underflows
//              unless the maximum is subtracted), far above 0 (exp overflows), random rows
//              and block sizes, one value; PyTorch's cases. No gradients: the result is
//              plain numbers.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "13_online_softmax.hpp"
#include "grader.hpp"

using namespace qkv;
using namespace qkv::exercises;

namespace {

// What online_softmax returned, as tensors the grader compares.
struct Steps {
  Tensor m;  // (blocks)
  Tensor l;  // (blocks)
  Tensor y;  // (n)
};

// The blocks of a row of n values: x[s:e] for each (s, e), the last one shorter when block does not divide n.
std::vector<std::pair<int64_t, int64_t>> blocks_of(int64_t n, int64_t block) {
  std::vector<std::pair<int64_t, int64_t>> blocks;
  for (int64_t s = 0; s < n; s += block) blocks.emplace_back(s, std::min(s + block, n));
  return blocks;
}

// m, l after each block and y, from qkv's ops on what has been read, not from a running state.
Steps expected(const Tensor& x, int64_t block) {
  std::vector<float> m, l;
  for (const auto& [s, e] : blocks_of(x.size(0), block)) {
    const Tensor seen = x.slice(0, 0, e);  // x[0:e], every value read after this block
    const float top = seen.max().item();
    m.push_back(top);
    l.push_back((seen - top).exp().sum().item());
  }
  return {tensor(m), tensor(l), softmax(x, 0)};
}

// The online softmax with one known mistake switched on.
struct Variant {
  bool max_from_zero = false;            // m starts at 0, not -∞
  bool block_max_only = false;           // m' = the block's maximum, not max(m, the block's maximum)
  bool sum_not_rescaled = false;         // l + Σ exp(xⱼ - m'), without l · exp(m - m')
  bool sum_inverse = false;              // l · exp(m' - m)
  bool sum_replaced = false;             // l = the block's Σ exp(xⱼ - m') alone
  bool no_max = false;                   // l and y from exp(xⱼ), the maximum kept but never subtracted
  bool output_not_rescaled = false;      // the y written before left as they were
  bool output_inverse = false;           // the y written before times exp(m' - m)
  bool normalised_without_sums = false;  // y kept divided by l, the earlier ones times exp(m - m') but not l / l'
  bool divided_by_sum_so_far = false;    // each block's y divided by l after it, and never touched again
  bool last_block_skipped = false;       // the loop stops before a last block shorter than the others
};

Steps variant(const std::vector<float>& x, int64_t block, Variant how) {
  const int64_t n = static_cast<int64_t>(x.size());
  const bool normalised = how.normalised_without_sums || how.divided_by_sum_so_far;
  float m = how.max_from_zero ? 0.0f : -std::numeric_limits<float>::infinity(), l = 0.0f;
  std::vector<float> y(x.size(), 0.0f), ms, ls;
  for (const auto& [s, e] : blocks_of(n, block)) {
    if (how.last_block_skipped && e - s < block) break;
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t j = s; j < e; ++j) top = std::max(top, x[static_cast<size_t>(j)]);
    const float m_new = how.block_max_only ? top : std::max(m, top);
    const float shift = how.no_max ? 0.0f : m_new;  // the exponent's xⱼ - shift
    float sum = 0.0f;
    for (int64_t j = s; j < e; ++j) sum += std::exp(x[static_cast<size_t>(j)] - shift);
    const float factor = how.no_max ? 1.0f : std::exp(m - m_new);
    const float l_new = how.sum_replaced       ? sum
                        : how.sum_not_rescaled ? l + sum
                        : how.sum_inverse      ? l * std::exp(m_new - m) + sum
                                               : l * factor + sum;
    const float y_factor = how.output_not_rescaled || how.divided_by_sum_so_far ? 1.0f
                           : how.output_inverse                                 ? std::exp(m_new - m)
                                                                                : factor;
    for (int64_t j = 0; j < s; ++j) y[static_cast<size_t>(j)] *= y_factor;
    for (int64_t j = s; j < e; ++j)
      y[static_cast<size_t>(j)] = std::exp(x[static_cast<size_t>(j)] - shift) / (normalised ? l_new : 1.0f);
    m = m_new, l = l_new;
    ms.push_back(m);
    ls.push_back(l);
  }
  if (!normalised)
    for (float& yj : y) yj /= l;
  return {tensor(ms), tensor(ls), tensor(y)};
}

std::string describe(const Tensor& x, int64_t block) {
  const int64_t n = x.size(0), blocks = static_cast<int64_t>(blocks_of(n, block).size());
  return fmt::format("x ({}) = {}, block {} ({} block{}{})", n, values(x), block, blocks, blocks == 1 ? "" : "s",
                     n % block != 0 && blocks > 1 ? ", the last shorter" : "");
}

// Block b in words: "block 2, x[6:9] = [...]".
std::string block_text(const Tensor& x, int64_t block, int64_t b) {
  const auto [s, e] = blocks_of(x.size(0), block)[static_cast<size_t>(b)];
  return fmt::format("block {}, x[{}:{}] = {}", b, s, e, values(x.slice(0, s, e)));
}

// What block b does to the maximum, in words: where the rescaling happens, and by how much.
std::string maximum_text(const Tensor& x, int64_t block, int64_t b) {
  const auto [s, e] = blocks_of(x.size(0), block)[static_cast<size_t>(b)];
  if (s == 0)
    return fmt::format("the first block: the maximum starts at its own, {:.6g}", x.slice(0, 0, e).max().item());
  const float m = x.slice(0, 0, s).max().item(), m_new = x.slice(0, 0, e).max().item();
  if (m_new == m) return fmt::format("the maximum stays {:.6g}: nothing to rescale", m);
  return fmt::format(
      "the maximum grows from m = {:.6g} to m' = {:.6g}: what was read before is rescaled by "
      "exp(m - m') = {:.6g}",
      m, m_new, std::exp(static_cast<double>(m) - static_cast<double>(m_new)));
}

void check_steps(Grader& g, const Tensor& x, int64_t block, const Steps& got, const Steps& want) {
  const std::vector<float> row = x.to_vector();
  auto mistake = [&](Variant how, Tensor Steps::*step) { return [=] { return variant(row, block, how).*step; }; };
  const Explain about_block = [&](const std::vector<int64_t>& i) {
    return fmt::format("{}; {}", block_text(x, block, i[0]), maximum_text(x, block, i[0]));
  };
  g.check({"m", "the running maximum after each block: max of x[0:e], (blocks)"}, got.m, want.m, about_block,
          {{"the maximum started at 0",
            "start at m = -∞ (or at the first block's maximum): from 0, a row of negative values is never shifted to "
            "its own maximum, and exp(xⱼ - 0) underflows to 0 for values far below 0",
            mistake({.max_from_zero = true}, &Steps::m)},
           {"the maximum replaced by each block's own maximum",
            "m' = max(m, the block's maximum): the running maximum never falls",
            mistake({.block_max_only = true}, &Steps::m)},
           {"the last, shorter block skipped",
            "the blocks are x[s:min(s + block, n)]: when block does not divide n the last one is shorter, and when "
            "block > n it is the only one; loop while s < n",
            mistake({.last_block_skipped = true}, &Steps::m)}});
  g.check({"l", "the running sum after each block: Σ exp(x[0:e] - m), (blocks)"}, got.l, want.l, about_block,
          {{"the running sum not rescaled when the maximum grows",
            "l was summed relative to the old maximum m: multiply it by exp(m - m') before adding the block's "
            "Σ exp(xⱼ - m')",
            mistake({.sum_not_rescaled = true}, &Steps::l)},
           {"the running sum rescaled by exp(m' - m), the inverse factor",
            "exp(xⱼ - m') = exp(xⱼ - m) · exp(m - m'): the factor is exp(m - m') ≤ 1, the old maximum minus the new",
            mistake({.sum_inverse = true}, &Steps::l)},
           {"the running sum replaced by each block's own sum",
            "l keeps the values read before too: l = l · exp(m - m') + Σ_block exp(xⱼ - m')",
            mistake({.sum_replaced = true}, &Steps::l)},
           {"exp(xⱼ) summed without subtracting the maximum",
            "sum exp(xⱼ - m), relative to the running maximum: exp(xⱼ) overflows float for xⱼ > 88",
            mistake({.no_max = true}, &Steps::l)}});
  const float top = x.max().item(), total = (x - top).exp().sum().item();
  g.check({"y", "softmax(x) = exp(x - m) / l after the last block, (n)"}, got.y, want.y,
          [&](const std::vector<int64_t>& i) {
            const int64_t b = i[0] / block;
            return fmt::format("x[{}] = {:.6g}, read in {}; the row's maximum is {:.6g} and Σ exp(x - max) = {:.6g}",
                               i[0], x.to_vector()[static_cast<size_t>(i[0])], block_text(x, block, b), top, total);
          },
          {{"the outputs written before a block not rescaled when the maximum grows",
            "y[j] = exp(xⱼ - m) was written relative to the old maximum: when m grows to m', multiply the y "
            "written before by exp(m - m'), the factor l gets",
            mistake({.output_not_rescaled = true}, &Steps::y)},
           {"the outputs rescaled by exp(m' - m), the inverse factor",
            "exp(xⱼ - m') = exp(xⱼ - m) · exp(m - m'): multiply the y written before by exp(m - m') ≤ 1, as l",
            mistake({.output_inverse = true}, &Steps::y)},
           {"the outputs kept divided by l, the earlier ones rescaled by exp(m - m') but not by l / l'",
            "an output divided by the old sum l must become one divided by the new l': multiply it by "
            "exp(m - m') · l / l' (or keep y undivided and divide by l once, after the last block)",
            mistake({.normalised_without_sums = true}, &Steps::y)},
           {"each block divided by the sum so far, never rescaled",
            "the sum is not known until the last block is read: keep y[j] = exp(xⱼ - m), rescale it when m grows, "
            "and divide by l once, at the end",
            mistake({.divided_by_sum_so_far = true}, &Steps::y)}});
}

void grade_case(Grader& g, const std::string& name, const Tensor& x, int64_t block) {
  g.begin_case(name, describe(x, block));
  const std::vector<float> row = x.to_vector();
  Steps got = g.call({}, [&] {
    OnlineSoftmax r = online_softmax(row, block);
    return Steps{tensor(r.m), tensor(r.l), tensor(r.y)};
  });
  check_steps(g, x, block, got, expected(x, block));
}

// n values, uniform in [low, high).
Tensor uniform_row(int64_t n, float low, float high, Generator& gen) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(gen.uniform(low, high));
  return tensor(v);
}

}  // namespace

int main(int argc, char** argv) {
  return grade(13, argc, argv, [](Grader& g) {
    const std::string rule = "exercise 13 is the softmax itself, computed online: not through ";
    g.forbid({{"qkv::softmax(", "", rule + "qkv::softmax"},
              {"qkv::Tensor::softmax(", "", rule + "qkv::softmax"},
              {"qkv::log_softmax(", "", rule + "log_softmax"},
              {"qkv::Tensor::log_softmax(", "", rule + "log_softmax"},
              {"qkv::masked_softmax(", "", rule + "masked_softmax"},
              {"qkv::cross_entropy(", "", rule + "cross_entropy (its gradient is softmax minus one-hot)"},
              {"qkv::scaled_dot_product_attention(", "", rule + "the fused attention, whose kernel runs this loop"},
              {"qkv::nn::DotProductAttention::", "", rule + "an attention layer"},
              {"qkv::nn::MultiHeadAttention::", "", rule + "an attention layer"}});
    Generator gen(g.seed());

    // Four blocks whose maxima grow (block 1), dip (block 2) and grow again (block 3), the first
    // all negative: the rescaling of l and y, the maximum's start and its running max show here.
    const int64_t block = gen.randint(2, 5);
    std::vector<float> rising;
    for (float offset : {-6.0f, -1.0f, -3.5f, 2.0f})
      for (int64_t j = 0; j < block; ++j) rising.push_back(offset + gen.uniform(-1.0f, 1.0f));
    grade_case(g, "the maximum grows and dips from block to block", tensor(rising), block);

    int64_t n = gen.randint(7, 21), b = gen.randint(2, n);
    while (n % b == 0) b = gen.randint(2, n);  // n ≥ 7 has a non-divisor in [2, n): n - 1
    grade_case(g, "a block size that does not divide n: the last block shorter", randn({n}, gen) * 2.0f, b);
    n = gen.randint(5, 13);
    grade_case(g, "block size 1: one value at a time", randn({n}, gen) * 2.0f, 1);
    n = gen.randint(3, 9);
    grade_case(g, "a block longer than the row: one short block", randn({n}, gen), n + gen.randint(1, 6));
    n = gen.randint(3, 9);
    grade_case(g, "a block as long as the row", randn({n}, gen), n);
    n = gen.randint(5, 13);
    grade_case(g, "values far below 0: exp(xⱼ) underflows to 0", uniform_row(n, -1100.0f, -1000.0f, gen),
               gen.randint(1, n + 1));
    n = gen.randint(5, 13);
    grade_case(g, "values far above 0: exp(xⱼ) overflows", uniform_row(n, 1000.0f, 1100.0f, gen),
               gen.randint(1, n + 1));
    for (int i = 1; i <= 3; ++i) {
      n = gen.randint(1, 41);
      const float scale = std::array<float, 3>{1.0f, 4.0f, 30.0f}[static_cast<size_t>(gen.randint(0, 3))];
      grade_case(g, fmt::format("a random row and block size ({} of 3)", i), randn({n}, gen) * scale,
                 gen.randint(1, n + 4));
    }
    grade_case(g, "one value", randn({1}, gen), gen.randint(1, 4));

    for (const TorchCase& c : g.torch_cases("13/")) {
      const Tensor x = c.f("x");
      const int64_t blk = c.i("block").to_vector().at(0);
      g.begin_case("PyTorch: " + c.name, describe(x, blk));
      const std::vector<float> row = x.to_vector();
      Steps got = g.call({}, [&] {
        OnlineSoftmax r = online_softmax(row, blk);
        return Steps{tensor(r.m), tensor(r.l), tensor(r.y)};
      });
      check_steps(g, x, blk, got, {c.f("m"), c.f("l"), c.f("y")});
    }
  });
}
