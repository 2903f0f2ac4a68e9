// Lesson 14 · attention at length
//
// After lesson 10's 对比 table (self-attention's compute grows as O(n²d)):
// none of the notes' sections, qkv's own. The plain path holds the (N, T, T)
// weights, so its memory grows as T² too, and a laptop runs out of memory
// long before it runs out of time. This lesson shows how attention is
// computed without ever holding them:
//   1. the online softmax, derived from lesson 04's: subtract the maximum, and
//      when a larger one arrives, rescale what was summed; computed on a row
//      read in blocks, it equals softmax;
//   2. the same for attention: a tile of queries walks the tiles of keys,
//      holding only a (BR, BC) tile of scores; the tiles one query tile meets
//      are drawn, and the tiled output equals the plain one;
//   3. the library's fused op (scaled_dot_product_attention, which
//      DotProductAttention runs when need_weights is off) against the plain
//      path: the largest difference of outputs and gradients;
//   4. time and peak memory against T for both paths, forward and backward:
//      memory changed (O(T²) to O(T·d)), time did not (O(T²·d) for both),
//      read off the measured numbers.
//
// Letters: N = B·h heads, T positions (queries = keys), d features,
// BR queries and BC keys to a tile.
//
// Run: build/release/lessons/14_attention_at_length [--seed S] [--max-t T] [--reps R] [--out DIR]
#include <qkv/qkv.hpp>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "lesson.hpp"

using namespace qkv;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// --- 1. the online softmax ----------------------------------------------------------

// One block's step of the online softmax, kept to print.
struct BlockStep {
  int64_t start, end;   // the block is x[start, end)
  float m, rescale, l;  // the running max after it, exp(m_before - m), the running sum after it
};

// softmax(x) in one pass over x read in blocks of `block`, keeping only a
// running maximum m and a running sum l = Σ exp(xᵢ - m) of what was read:
//   m' = max(m, max of the block)
//   l' = l · exp(m - m') + Σ_block exp(xᵢ - m')     (the old terms, rescaled to the new maximum)
// At the end l = Σ exp(xᵢ - m) over the whole row, and pᵢ = exp(xᵢ - m) / l.
// (Computing p still reads x a second time; attention's version, below,
// folds that pass into the weighted sum of the values.)
std::vector<float> online_softmax(const std::vector<float>& x, int64_t block, std::vector<BlockStep>* steps) {
  const auto n = static_cast<int64_t>(x.size());
  float m = -kInf, l = 0;  // exp(-inf - m') = 0: the first block's rescale drops nothing
  for (int64_t start = 0; start < n; start += block) {
    const int64_t end = std::min(start + block, n);
    float m_new = m;
    for (int64_t i = start; i < end; ++i) m_new = std::max(m_new, x[static_cast<size_t>(i)]);
    const float rescale = std::exp(m - m_new);
    l *= rescale;
    for (int64_t i = start; i < end; ++i) l += std::exp(x[static_cast<size_t>(i)] - m_new);
    m = m_new;
    if (steps) steps->push_back({start, end, m, rescale, l});
  }
  std::vector<float> p;
  p.reserve(x.size());
  for (float xi : x) p.push_back(std::exp(xi - m) / l);
  return p;
}

float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// ---- 1. from softmax to the online softmax ---------------------------------------------
void online_softmax_section(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("softmax, one block at a time (lesson 04's softmax, read in blocks)");
  lesson.print(
      "Lesson 04: softmax(x)ᵢ = exp(xᵢ) / Σⱼ exp(xⱼ). Computed as exp(xᵢ - m) / Σⱼ exp(xⱼ - m) with m = max x:\n"
      "the same weights (exp(-m) cancels), and every exp(xⱼ - m) ≤ 1, so nothing overflows.\n");
  const float big = std::exp(1000.0f);  // float's largest is about 3.4e38 = exp(88.7)
  lesson.print(
      "  x = [1000, 1001]: exp(1000) = {} in float, so exp(x)/Σ exp(x) = inf/inf = {}; with m: [{:.4f}, {:.4f}]\n", big,
      std::isnan(big / (big + big)) ? "NaN" : "a number", 1 / (1 + std::exp(1.0f)), 1 / (1 + std::exp(-1.0f)));
  lesson.print(
      "But m is the maximum of the whole row. To read the row once, in blocks, keep the maximum so far\n"
      "and the sum so far, and when a block brings a larger maximum m', rescale the sum by exp(m - m'):\n"
      "  m' = max(m, max of the block),   l' = l · exp(m - m') + Σ_block exp(xᵢ - m')\n"
      "(each term summed so far is exp(xᵢ - m); against m' it must be exp(xᵢ - m') = exp(xᵢ - m) · exp(m - m')).\n");

  // (10,): one row of scores, growing along the row, so that later blocks bring larger maxima
  Tensor x = randn({10}, gen) * 2.0f + arange(10.0f) * 0.8f;
  const std::vector<float> row = x.to_vector();
  const std::vector<float> reference = softmax(x, -1).to_vector();
  std::vector<BlockStep> steps;
  const std::vector<float> online = online_softmax(row, 3, &steps);
  lesson.print("\nx = {:.3f}, read in blocks of 3:\n", fmt::join(row, " "));
  lesson.print("  block   max so far m   rescale exp(m_before - m)   sum so far l\n");
  for (const BlockStep& s : steps)
    lesson.print("  [{}, {:2})  {:12.4f}   {:25.4f}   {:12.4f}\n", s.start, s.end, s.m, s.rescale, s.l);
  const float difference = max_abs_difference(online, reference);
  lesson.print("online   p = {:.4f}\nsoftmax(x) = {:.4f}\nlargest |online - softmax| = {:.2e}\n",
               fmt::join(online, " "), fmt::join(reference, " "), difference);

  float worst = 0;  // over every block size, 1 (one element at a time) to 10 (the whole row)
  for (int64_t block = 1; block <= 10; ++block)
    worst = std::max(worst, max_abs_difference(online_softmax(row, block, nullptr), reference));
  lesson.print("At every block size from 1 to 10 the largest difference is {:.2e}: float rounding.\n", worst);
  lesson.result("row", x);
  lesson.result("online_softmax", tensor(online));
  lesson.result("online_softmax_max_diff", static_cast<double>(difference));
  lesson.result("online_softmax_max_diff_any_block", static_cast<double>(worst));
  std::vector<double> maxima, sums;
  for (const BlockStep& s : steps) maxima.push_back(s.m), sums.push_back(s.l);
  lesson.result("block_maxima", maxima);
  lesson.result("block_sums", sums);
}

// --- 2. one query tile's walk over the key tiles ---------------------------------------

// What one tile of queries did: its output and the key tiles it met or skipped.
struct TileWalk {
  Tensor out;                         // (BR, d)
  std::vector<int64_t> met, skipped;  // key tile numbers, in the order walked
};

// Causal attention for the queries [i0, i1), a tile of keys at a time:
//   s = q·Kⱼᵀ/√d (BR, BC),  m' = max(m, rowmax s),  p = exp(s - m')
//   l ← l·exp(m - m') + rowsum p,   o ← o·exp(m - m') + p·Vⱼ,   and at the end out = o / l.
// o is the online softmax's sum with each term carrying its value: rescaling
// o with l keeps o / l the weighted sum of the values at every step.
// A key tile every key of which lies after every query of the tile (j0 > i1 - 1)
// is masked whole: it is skipped, not computed.
TileWalk query_tile(const Tensor& Q, const Tensor& K, const Tensor& V, int64_t i0, int64_t i1, int64_t BC) {
  const int64_t T = K.size(0), d = K.size(1), BR = i1 - i0;
  TileWalk walk;
  Tensor q = slice(Q, 0, i0, i1);   // (BR, d)
  Tensor m = full({BR, 1}, -kInf);  // (BR, 1): each row's running maximum
  Tensor l = zeros({BR, 1});        // (BR, 1): each row's running Σ exp(s - m)
  Tensor o = zeros({BR, d});        // (BR, d): each row's running Σ exp(s - m)·v
  for (int64_t j0 = 0; j0 < T; j0 += BC) {
    const int64_t j1 = std::min(j0 + BC, T);
    if (j0 > i1 - 1) {
      walk.skipped.push_back(j0 / BC);
      continue;
    }
    std::vector<int64_t> after;  // (BR, j1 - j0): key k after query q, hidden by the causal mask
    for (int64_t qi = i0; qi < i1; ++qi)
      for (int64_t k = j0; k < j1; ++k) after.push_back(k > qi ? 1 : 0);
    Tensor s = matmul(q, transpose(slice(K, 0, j0, j1), 0, 1)) / std::sqrt(static_cast<float>(d));  // (BR, BC)
    s = masked_fill(s, int_tensor(after, {BR, j1 - j0}), -kInf);
    Tensor m_new = max(cat({m, max(s, 1, true)}, 1), 1, true);  // (BR, 2) -> (BR, 1)
    Tensor rescale = exp(m - m_new);                            // (BR, 1): 0 on the first tile
    Tensor p = exp(s - m_new);                                  // (BR, BC)
    l = l * rescale + sum(p, 1, true);                          // (BR, 1)
    o = o * rescale + matmul(p, slice(V, 0, j0, j1));           // (BR, BC)·(BC, d) -> (BR, d)
    m = m_new;
    walk.met.push_back(j0 / BC);
  }
  walk.out = o / l;  // (BR, d)
  return walk;
}

// The picture: the (T, T) scores, the rows of query tile `tile` coloured by
// the step at which they met each key tile (1, 2, …), the keys the causal
// mask hides marked masked, every other row 0.
Tensor walk_picture(int64_t T, int64_t BR, int64_t BC, int64_t tile, const TileWalk& walk) {
  std::vector<float> cells(static_cast<size_t>(T * T), 0.0f);
  for (int64_t q = tile * BR; q < std::min((tile + 1) * BR, T); ++q)
    for (int64_t k = 0; k < T; ++k) {
      float& cell = cells[static_cast<size_t>(q * T + k)];
      if (k > q) cell = -1e6f;  // masked (drawn apart from the colour scale)
      auto step = std::find(walk.met.begin(), walk.met.end(), k / BC);
      if (k <= q && step != walk.met.end()) cell = static_cast<float>(step - walk.met.begin() + 1);
    }
  return tensor(cells, {T, T});
}

// ---- 2. tiles of queries meet tiles of keys -----------------------------------------------
void tiles_section(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("attention in tiles: one query tile walks the key tiles");
  const int64_t T = 22, d = 8, BR = 4, BC = 4, shown = 3;  // T not a multiple of the tiles: the last is short
  lesson.print(
      "Each query row is one softmax over its keys, so the online softmax applies row by row, with\n"
      "the values carried along: o ← o·exp(m - m') + Σ exp(s - m')·v, and out = o / l at the end.\n"
      "Rows are taken BR = {} at a time and keys BC = {} at a time: a tile of scores is (BR, BC), never\n"
      "(T, T). Causal self-attention (query q sees keys k ≤ q, as in a decoder), T = {}, d = {}.\n",
      BR, BC, T, d);
  Tensor Q = randn({T, d}, gen), K = randn({T, d}, gen), V = randn({T, d}, gen);  // (T, d) each
  std::vector<Tensor> outs;
  TileWalk shown_walk;
  for (int64_t i0 = 0; i0 < T; i0 += BR) {
    TileWalk walk = query_tile(Q, K, V, i0, std::min(i0 + BR, T), BC);
    outs.push_back(walk.out);
    if (i0 / BR == shown) shown_walk = walk;
  }
  Tensor tiled = cat(outs, 0);  // (T, d)

  // The plain path: all (T, T) scores, d2l's masked softmax with 2-D valid lengths q + 1 (causal).
  std::vector<int64_t> lens;
  for (int64_t q = 0; q < T; ++q) lens.push_back(q + 1);
  Tensor scores = bmm(Q.reshape({1, T, d}), K.reshape({1, T, d}), {.transpose_b = true}) /
                  std::sqrt(static_cast<float>(d));                                            // (1, T, T)
  Tensor plain = bmm(masked_softmax(scores, int_tensor(lens, {1, T})), V.reshape({1, T, d}));  // (1, T, d)
  const double difference = max(abs(tiled - plain.reshape({T, d}))).item();
  lesson.print(
      "Query tile {} (rows {}–{}) met key tiles {} in that order (steps 1 to {} in the picture) and\n"
      "skipped {}: every key there lies after every one of its queries, so the mask hides the whole\n"
      "tile and it is never computed.\n",
      shown, shown * BR, shown * BR + BR - 1, fmt::join(shown_walk.met, ", "), shown_walk.met.size(),
      fmt::join(shown_walk.skipped, ", "));
  lesson.print("Tiled output {} against the plain path's (all T × T weights): largest difference {:.2e}.\n",
               tiled.shape(), difference);
  lesson.heatmap("query_tile_walk.svg", walk_picture(T, BR, BC, shown, shown_walk),
                 {.title = fmt::format("Query tile {} (rows {}–{}): the key tiles it meets, numbered in the order "
                                       "walked (0: other rows)",
                                       shown, shown * BR, shown * BR + BR - 1),
                  .xlabel = fmt::format("key k (tiles of BC = {})", BC),
                  .ylabel = fmt::format("query q (tiles of BR = {})", BR)});
  std::vector<double> met(shown_walk.met.begin(), shown_walk.met.end()),
      skipped(shown_walk.skipped.begin(), shown_walk.skipped.end());
  lesson.result("tile_T", T);
  lesson.result("tile_BR", BR);
  lesson.result("tile_BC", BC);
  lesson.result("shown_query_tile", shown);
  lesson.result("shown_tile_met", met);
  lesson.result("shown_tile_skipped", skipped);
  lesson.result("tile_Q", Q);
  lesson.result("tile_K", K);
  lesson.result("tile_V", V);
  lesson.result("tiled_output", tiled);
  lesson.result("tiled_max_diff", difference);
}

// ---- 3. the library's fused op -----------------------------------------------------------
void fused_section(lesson::Lesson& lesson, Generator& gen) {
  lesson.section("the fused op: need_weights off, the same numbers");
  const int64_t N = 8, T = 300, d = 64;  // 300: not a multiple of any tile size
  lesson.print(
      "scaled_dot_product_attention (qkv/ops/attention.hpp) is the walk above in compiled loops, with\n"
      "the backward recomputing each tile's weights from the output and each row's log-sum-exp.\n"
      "nn::DotProductAttention runs it when need_weights is off (then attention_weights stays empty).\n"
      "Here N = {} heads, T = {}, d = {}, a valid length per query row (d2l's 2-D valid_lens):\n",
      N, T, d);
  nn::DotProductAttention attention(0, gen);
  Tensor Q = randn({N, T, d}, gen).requires_grad_(), K = randn({N, T, d}, gen).requires_grad_(),
         V = randn({N, T, d}, gen).requires_grad_(), dO = randn({N, T, d}, gen);  // (N, T, d) each
  IntTensor lens = randint(1, T + 1, {N, T}, gen);                                // (N, T)
  auto run = [&](bool need_weights) {  // the output and the gradients of sum(out ⊙ dO)
    attention.need_weights = need_weights;
    Q.zero_grad(), K.zero_grad(), V.zero_grad();
    Tensor out = attention(Q, K, V, lens);  // (N, T, d)
    out.backward(dO);
    return std::vector<Tensor>{out.detach(), Q.grad().clone(), K.grad().clone(), V.grad().clone()};
  };
  const std::vector<Tensor> plain = run(true);
  const bool had_weights = attention.attention_weights.defined();
  const std::vector<Tensor> fused = run(false);
  const bool fused_weights = attention.attention_weights.defined();
  std::vector<double> differences;  // out, dQ, dK, dV
  for (size_t i = 0; i < plain.size(); ++i) differences.push_back(max(abs(fused[i] - plain[i])).item());
  lesson.print("  largest |fused - plain|: output {:.2e}, dQ {:.2e}, dK {:.2e}, dV {:.2e}\n", differences[0],
               differences[1], differences[2], differences[3]);
  lesson.print("  attention_weights kept: plain {}, fused {}\n", had_weights, fused_weights);
  lesson.print(
      "The sums run in another order (tile by tile, rescaled), so they round differently: the\n"
      "differences are float rounding, not a different function.\n");
  lesson.result("fused_max_diff", differences[0]);
  lesson.result("fused_grad_max_diff", std::vector<double>(differences.begin() + 1, differences.end()));
  lesson.result("plain_kept_weights", had_weights);
  lesson.result("fused_kept_weights", fused_weights);
}

// --- 4. time and memory --------------------------------------------------------------------

// This process's CPU time in milliseconds (the wall clock where there is no
// CPU clock, in a WebAssembly page). CPU time leaves out the time other
// programs held the core; lesson 10 times its layers the same way.
double cpu_ms() {
  timespec t{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

// Peak memory as the benchmark (bench/bench.cpp) measures it: the peak
// resident set (VmHWM in /proc/self/status) minus the resident set before,
// after writing 5 to /proc/self/clear_refs, which starts the peak over from
// the memory held now. In MB; a negative number where there is no /proc (a
// WebAssembly page).
double status_mb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size())) / 1024;  // kB
  return -1;
}

struct Measured {
  double ms;         // the median CPU time of forward and backward
  double tensor_mb;  // the most memory tensors held above what they held before (the allocator's peak)
  double rss_mb;     // the peak resident set above the one before (the benchmark's measure), or -1
};

// Forward and backward of self-attention on (N, T, d), plain (the (N, T, T)
// weights held) or fused. Memory is measured on a first run, after the
// cache of freed blocks is given back (empty_cache), so that it starts from
// the inputs alone; that run pays for the first touch of new memory, and
// time is the median of the `reps` runs after it.
Measured measure(bool plain, int64_t N, int64_t T, int64_t d, int64_t reps, Generator& gen) {
  nn::DotProductAttention attention(0, gen);
  attention.need_weights = plain;
  Tensor Q = randn({N, T, d}, gen).requires_grad_(), K = randn({N, T, d}, gen).requires_grad_(),
         V = randn({N, T, d}, gen).requires_grad_(), dO = randn({N, T, d}, gen);  // (N, T, d) each
  auto once = [&] {
    Q.zero_grad(), K.zero_grad(), V.zero_grad();
    attention(Q, K, V).backward(dO);  // (N, T, d)
    attention.attention_weights = Tensor();
  };
  Measured m{};
  empty_cache();  // the memory run starts from the inputs alone (it is also the timed runs' warm-up)
  const double tensor_before = static_cast<double>(memory_stats().allocated_bytes);
  reset_peak_memory_stats();
  std::ofstream("/proc/self/clear_refs") << "5";
  const double rss_before = status_mb("VmRSS:");
  once();
  const double rss_peak = status_mb("VmHWM:");
  m.tensor_mb = (static_cast<double>(memory_stats().peak_allocated_bytes) - tensor_before) / (1 << 20);
  m.rss_mb = rss_before < 0 || rss_peak < 0 ? -1 : rss_peak - rss_before;
  std::vector<double> ms;
  for (int64_t r = 0; r < reps; ++r) {
    const double start = cpu_ms();
    once();
    ms.push_back(cpu_ms() - start);
  }
  std::sort(ms.begin(), ms.end());
  m.ms = ms[ms.size() / 2];
  return m;
}

// How much y grows each time T doubles, fitted over the points: 2^slope,
// where slope is the least-squares slope of log2 y against log2 T.
double growth_per_doubling(const std::vector<double>& T, const std::vector<double>& y) {
  const double n = static_cast<double>(y.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double lx = std::log2(T[i]), ly = std::log2(y[i]);
    sx += lx, sy += ly, sxx += lx * lx, sxy += lx * ly;
  }
  return std::exp2((n * sxy - sx * sy) / (n * sxx - sx * sx));
}

std::vector<float> log2_of(const std::vector<double>& v) {
  std::vector<float> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(static_cast<float>(std::log2(x)));
  return out;
}

struct Sweep {
  int64_t N = 4, d = 64, plain_max_t = 2048;  // N = B·h: one sequence, 4 heads
  std::vector<double> T;                      // 128, 256, … --max-t
  std::vector<Measured> plain, fused;         // plain only up to plain_max_t
};

Sweep sweep(lesson::Lesson& lesson, int64_t max_t, int64_t reps, Generator& gen) {
  Sweep s;
  for (int64_t T = 128; T <= max_t; T *= 2) s.T.push_back(static_cast<double>(T));
  const int threads = get_num_threads();
  set_num_threads(1);  // one thread: CPU time is then the work itself, as the benchmark's rows
  auto bar = lesson.progress("size", static_cast<int64_t>(s.T.size()));
  for (size_t i = 0; i < s.T.size(); ++i) {
    const auto T = static_cast<int64_t>(s.T[i]);
    if (T <= s.plain_max_t) s.plain.push_back(measure(true, s.N, T, s.d, reps, gen));
    s.fused.push_back(measure(false, s.N, T, s.d, reps, gen));
    bar.update(static_cast<int64_t>(i) + 1, {{"T", s.T[i]}});
  }
  bar.finish();
  set_num_threads(threads);
  return s;
}

// The resident set's peak, or "—" where it cannot be read.
std::string rss_text(const Measured& m) { return m.rss_mb < 0 ? "—" : fmt::format("{:.1f}", m.rss_mb); }

std::vector<double> field(const std::vector<Measured>& rows, double Measured::*member, double scale = 1) {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const Measured& m : rows) out.push_back(m.*member * scale);
  return out;
}

// ---- 4. time and peak memory against T ---------------------------------------------------
void print_table(lesson::Lesson& lesson, const Sweep& s, int64_t reps) {
  lesson.print(
      "Self-attention forward and backward, N = {} heads, d = {}, one thread; time the median CPU time of\n"
      "{} runs; memory the peak above the inputs: of tensors (the allocator's count), and of the process's\n"
      "resident set as the benchmark measures it (VmHWM). The plain path stops at T = {}.\n\n",
      s.N, s.d, reps, s.plain_max_t);
  lesson.print("     T │ weights MB │ plain ms  tensors MB  RSS MB │ fused ms  tensors MB  RSS MB\n");
  for (size_t i = 0; i < s.T.size(); ++i) {
    const double weights_mb = static_cast<double>(s.N) * s.T[i] * s.T[i] * 4 / (1 << 20);  // one (N, T, T)
    std::string plain = "        —           —       —";
    if (i < s.plain.size())
      plain = fmt::format("{:9.1f} {:11.1f} {:>7}", s.plain[i].ms, s.plain[i].tensor_mb, rss_text(s.plain[i]));
    lesson.print("{:6} │ {:10.1f} │{} │{:9.1f} {:11.2f} {:>7}\n", s.T[i], weights_mb, plain, s.fused[i].ms,
                 s.fused[i].tensor_mb, rss_text(s.fused[i]));
  }
}

// Growth per doubling of T, fitted over the rows.
struct Growth {
  double plain_memory, fused_memory, plain_time, fused_time;
};

// What changed and what did not, read off the measured numbers; the two plots.
Growth conclusions(lesson::Lesson& lesson, const Sweep& s) {
  const std::vector<double> plain_ms = field(s.plain, &Measured::ms), fused_ms = field(s.fused, &Measured::ms);
  const std::vector<double> plain_mb = field(s.plain, &Measured::tensor_mb),
                            fused_mb = field(s.fused, &Measured::tensor_mb);
  const Growth g{growth_per_doubling(s.T, plain_mb), growth_per_doubling(s.T, fused_mb),
                 growth_per_doubling(s.T, plain_ms), growth_per_doubling(s.T, fused_ms)};
  const double N = static_cast<double>(s.N), T_plain = s.T[s.plain.size() - 1], T_last = s.T.back();
  const double weights_mb = N * T_plain * T_plain * 4 / (1 << 20);                 // one (N, T, T)
  const double linear_mb = N * T_last * static_cast<double>(s.d) * 4 / (1 << 20);  // one (N, T, d)
  lesson.print(
      "\nEach time T doubles (fitted over the rows):\n"
      "  memory: plain ×{:.2f}, fused ×{:.2f}   (×4 is T², ×2 is T)\n"
      "  time:   plain ×{:.2f}, fused ×{:.2f}   (×4 is T², ×2 is T)\n",
      g.plain_memory, g.fused_memory, g.plain_time, g.fused_time);
  lesson.print(
      "What changed: memory. At T = {} the plain path's peak is {:.2f} times one (N, T, T) buffer of {:.1f} MB:\n"
      "the weights P and their gradient dP are held at once (the softmax backward needs both,\n"
      "dS = P ⊙ (dP - Σ P·dP)), and it grows ×{:.2f} per doubling. The fused path's peak at T = {} is {:.2f}\n"
      "times one (N, T, d) tensor (the output, dQ, dK, dV, and the (N, T) log-sum-exp): ×{:.2f} per doubling.\n"
      "What did not: time. Both compute every score q·k, T² of them per head, each a dot of length d:\n"
      "×{:.2f} and ×{:.2f} per doubling. Not holding the weights saves memory, not arithmetic (the fused\n"
      "backward even computes the scores a second time).\n",
      T_plain, plain_mb.back() / weights_mb, weights_mb, g.plain_memory, T_last, fused_mb.back() / linear_mb,
      g.fused_memory, g.plain_time, g.fused_time);
  if (T_last > T_plain)
    lesson.print(
        "At T = {} the plain path would hold (N, T, T) float buffers of {:.0f} MB each; the fused one took {:.1f} "
        "MB.\n",
        T_last, N * T_last * T_last * 4 / (1 << 20), fused_mb.back());

  const std::vector<float> log_t = log2_of(s.T);  // every T: the fused path
  const std::vector<float> log_t_plain(log_t.begin(), log_t.begin() + static_cast<ptrdiff_t>(s.plain.size()));
  lesson.line_plot(
      "time_vs_T.svg",
      {{"plain (weights held)", log_t_plain, log2_of(plain_ms)}, {"fused (online softmax)", log_t, log2_of(fused_ms)}},
      {.title = fmt::format("Forward and backward time against T (N = {}, d = {}), log-log", s.N, s.d),
       .xlabel = "log2 T",
       .ylabel = "log2 ms"});
  lesson.line_plot(
      "memory_vs_T.svg",
      {{"plain (weights held)", log_t_plain, log2_of(plain_mb)}, {"fused (online softmax)", log_t, log2_of(fused_mb)}},
      {.title = fmt::format("Peak tensor memory against T (N = {}, d = {}), log-log", s.N, s.d),
       .xlabel = "log2 T",
       .ylabel = "log2 MB"});
  return g;
}

void length_results(lesson::Lesson& lesson, const Sweep& s, const Growth& g) {
  lesson.result("N", s.N);
  lesson.result("d", s.d);
  lesson.result("T", s.T);
  lesson.result("plain_max_t", s.plain_max_t);
  lesson.result("plain_tensor_mb", field(s.plain, &Measured::tensor_mb));
  lesson.result("fused_tensor_mb", field(s.fused, &Measured::tensor_mb));
  lesson.result("plain_memory_growth", g.plain_memory);
  lesson.result("fused_memory_growth", g.fused_memory);
  // Timings and the resident set depend on the machine and its load (tools/compare_builds.py skips them).
  lesson.result("plain_seconds", field(s.plain, &Measured::ms, 1e-3));
  lesson.result("fused_seconds", field(s.fused, &Measured::ms, 1e-3));
  lesson.result("plain_seconds_growth", g.plain_time);
  lesson.result("fused_seconds_growth", g.fused_time);
  lesson.result("plain_peak_rss_mb", field(s.plain, &Measured::rss_mb));
  lesson.result("fused_peak_rss_mb", field(s.fused, &Measured::rss_mb));
}

std::string length_section(lesson::Lesson& lesson, int64_t max_t, int64_t reps, Generator& gen) {
  lesson.section("time and memory against T: what changed and what did not");
  const Sweep s = sweep(lesson, max_t, reps, gen);
  print_table(lesson, s, reps);
  const Growth g = conclusions(lesson, s);
  length_results(lesson, s, g);
  return fmt::format(
      "Measured here, per doubling of T: memory ×{:.2f} plain, ×{:.2f} fused (O(T²) to O(T·d));\n"
      "time ×{:.2f} plain, ×{:.2f} fused (O(T²·d) for both).",
      g.plain_memory, g.fused_memory, g.plain_time, g.fused_time);
}

}  // namespace

int main(int argc, char** argv) {
  lesson::Lesson lesson(argc, argv, 14);
  int64_t max_t = 1024, reps = 3;
  lesson.option("--max-t", max_t,
                "the longest sequence timed (T doubles from 128 up to it; the plain path stops at 2048)",
                {.min = 128, .max = 16'384});
  lesson.option("--reps", reps, "timed runs per size (the median is kept)", {.max = 100});
  lesson.start();
  lesson.print(
      "What this lesson shows: how attention is computed without holding its (T, T) weights. Lesson 04's\n"
      "softmax read in blocks (the online softmax); a tile of queries walking the tiles of keys, drawn;\n"
      "the library's fused attention against the plain path; and time and peak memory measured as T\n"
      "doubles: what changed (memory) and what did not (time).\n");
  Generator gen(lesson.seed());

  online_softmax_section(lesson, gen);
  tiles_section(lesson, gen);
  fused_section(lesson, gen);
  const std::string measured = length_section(lesson, max_t, reps, gen);

  lesson.print(
      "\nWhat to remember: softmax needs the row's maximum, but not all at once: keep the maximum and\n"
      "the sum so far, and rescale the sum by exp(m - m') when the maximum grows. Carry the weighted\n"
      "sum of the values along the same way and attention runs a tile of keys at a time, holding\n"
      "(BR, BC) scores instead of (T, T) weights, with the same output (and the backward recomputes\n"
      "the weights instead of storing them).\n");
  return lesson.finish(measured);
}
