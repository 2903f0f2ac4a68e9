// bench: how fast qkv is at what a user calls, one row per case, in the same
// rows tools/bench_torch.py prints for PyTorch (tools/bench_compare.py
// divides one by the other).
//
//   build/release/bench                    the table
//   build/release/bench --json             the same rows as JSON lines
//   build/release/bench --filter train/    only the cases whose name contains "train/"
//   build/release/bench --list             the case names
//   build/release/bench --threads 2        on 2 threads (the default is 1)
//   build/release/bench --processes 5      each case in 5 processes: the spread of their medians
//
// The cases:
//   peak/fma          not qkv: a register-only loop of fused multiply-adds on
//                     the widest vectors the kernels use (kernels/simd.hpp),
//                     one thread. The most one core can compute; every GEMM
//                     row gives its share of it (of one core's, whatever
//                     --threads says).
//   gemm/M x K x N    matmul (M, K)·(K, N) under NoGradGuard: square sizes,
//                     and the products the course's Linear layers make
//   bmm/B x M x K x N bmm (B, M, K)·(B, K, N): attention scores Q·Kᵀ with
//                     B = batch·heads
//   overhead/…        1,000 adds of one-element tensors that require grad:
//                     the cost of recording (and backpropagating) one op
//   sdpa/T…           softmax(Q·Kᵀ/√d)·V forward and backward, B 8, H 4, d 64:
//                     the plain path, the (B, H, T, T) weights held
//   sdpa_fused/…      the same by scaled_dot_product_attention, the fused
//                     kernel that never holds them: T 512 … 4096 at B 8,
//                     and T 16384 at B 1 (where the plain path would need
//                     three buffers of 4.3 GB)
//   train/…           one training step (forward, loss, backward, clipping,
//                     Adam) of the course's three translation models
//
// How a case is timed: warm-up runs, then timed runs until both a minimum
// count and a time budget are reached (or a maximum count); the row gives
// the median and the min–max spread. Each case runs in a process of its own
// (this program runs itself with --case NAME), so that its peak memory (peak
// RSS minus the RSS before the case) is its own and no case inherits the
// heap another left behind. tools/bench_torch.py follows the same rules.
//
// Threads: --threads N runs every case with set_num_threads(N). The default
// is 1, whatever QKV_NUM_THREADS says, so that the table compares one thread
// with PyTorch's one (tools/bench_torch.py --threads N sets torch's).
//
// Left out on purpose: kernel-against-reference timings, which bench_gemm and
// bench_elementwise keep.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <qkv/qkv.hpp>
#include <string>
#include <vector>

#include "kernels/simd.hpp"

namespace {

using namespace qkv;
using json = nlohmann::ordered_json;

// --- timing ------------------------------------------------------------------------

struct Timing {
  int warmup;       // untimed runs first (caches, the allocator, lazy state),
  int min_reps;     // then at least this many timed runs,
  int max_reps;     // at most this many,
  double budget_s;  // and past min_reps, stop once this much time is spent
};
// The warm-up also lasts at least this long: a fresh process runs its first
// ~100 ms slower than the steady state, and a case whose warm-up is only a
// few milliseconds would time that instead (docs/kernel_notes.md, bench.cpp).
constexpr double kWarmupSeconds = 0.25;
constexpr Timing kShort{3, 10, 500, 0.5};  // GEMM, per-op overhead
constexpr Timing kLong{1, 5, 50, 2.0};     // attention
constexpr Timing kLonger{1, 3, 3, 0.0};    // attention at T ≥ 4096: seconds a run
constexpr Timing steps(int reps) { return {3, reps, reps, 0.0}; }

template <class F>
double seconds(F&& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs one repetition at a time; each returns the seconds it timed itself,
// so a case can leave its setup (drawing the next batch) off the clock.
// Returns the timed repetitions, sorted.
std::vector<double> repeat(const std::function<double()>& once, Timing timing) {
  double warm = 0;
  for (int i = 0; i < timing.warmup || warm < kWarmupSeconds; ++i) warm += once();
  std::vector<double> times;
  double total = 0;
  while (static_cast<int>(times.size()) < timing.min_reps ||
         (total < timing.budget_s && static_cast<int>(times.size()) < timing.max_reps)) {
    times.push_back(once());
    total += times.back();
  }
  std::sort(times.begin(), times.end());
  return times;
}

// One row of the table: the sorted times of a case, and what one repetition does.
struct Row {
  std::vector<double> times;   // seconds, sorted
  double flops = 0;            // per repetition: the row shows GFLOP/s
  double tokens = 0;           // per repetition: the row shows tokens/s
  double ops = 0;              // per repetition: the row shows µs per op
  bool best_rate = false;      // GFLOP/s from the fastest repetition, not the median
  double rss_growth_mb = NAN;  // training steps: resident memory after the last step minus after the warm-up
};

json to_json(const std::string& name, const Row& row, int threads) {
  double median = row.times[row.times.size() / 2];
  if (row.times.size() % 2 == 0) median = (median + row.times[row.times.size() / 2 - 1]) / 2;
  json j = {{"case", name},
            {"threads", threads},
            {"reps", row.times.size()},
            {"median_ms", median * 1e3},
            {"min_ms", row.times.front() * 1e3},
            {"max_ms", row.times.back() * 1e3}};
  if (row.flops > 0) j["gflops"] = row.flops / (row.best_rate ? row.times.front() : median) / 1e9;
  if (row.tokens > 0) j["tokens_per_s"] = row.tokens / median;
  if (row.ops > 0) j["us_per_op"] = median / row.ops * 1e6;
  if (!std::isnan(row.rss_growth_mb)) j["rss_growth_mb"] = row.rss_growth_mb;
  return j;
}

// --- the machine -------------------------------------------------------------------

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The SIMD the CPU offers, of the sets that matter to float kernels.
std::string cpu_simd() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::string found;
    for (const char* flag : {"avx512f", "avx512_fp16", "avx2", "fma", "avx", "sse4_2", "neon", "asimd"})
      if ((line + " ").find(fmt::format(" {} ", flag)) != std::string::npos)
        found += (found.empty() ? "" : " ") + std::string(flag);
    return found;
  }
  return "unknown";
}

// The SIMD this binary was compiled for (-march), from the compiler's macros.
std::string compiled_simd() {
#if defined(__AVX512F__)
  std::string set = "AVX-512F";
#if defined(__AVX512BW__)
  set += " BW";
#endif
#if defined(__AVX512DQ__)
  set += " DQ";
#endif
#if defined(__AVX512VL__)
  set += " VL";
#endif
  return set;
#elif defined(__AVX2__) && defined(__FMA__)
  return "AVX2 FMA";
#elif defined(__AVX2__)
  return "AVX2";
#elif defined(__AVX__)
  return "AVX";
#elif defined(__SSE4_2__)
  return "SSE4.2";
#elif defined(__ARM_NEON)
  return "NEON";
#else
  return "no SIMD macro (scalar or SSE2)";
#endif
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  double one = 0, five = 0, fifteen = 0;
  in >> one >> five >> fifteen;
  return fmt::format("{:.2f} {:.2f} {:.2f}", one, five, fifteen);
}

// A "VmRSS:" or "VmHWM:" (peak RSS) line of /proc/self/status, in MB.
double status_mb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stod(line.substr(key.size())) / 1024;  // kB
  return 0;
}

// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0), so
// a peak left by start-up is not counted; if it fails the peak is only an
// upper bound.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

// --- peak/fma: what one core can compute --------------------------------------------

// Independent chains acc = acc·x + y keep both FMA units busy through
// their latency (2 units × 4 cycles needs 8 in flight) without leaving the
// registers: no loads, no stores, only fused multiply-adds. 16 chains with
// AVX-512's 32 registers; 12 with AVX2's 16, where 16 chains plus x and y
// do not fit and chains spilled to the stack would time loads and stores.
// x < 1 keeps the values finite and away from denormals.
// NOTE: a peak is a best case, and other work on the machine only ever slows
// the loop down, so this row's GFLOP/s comes from its fastest repetition
// (every other row's from its median).
Row fma_peak() {
  using kernels::batch;
  constexpr int kChains = kernels::W >= 16 ? 16 : 12;
  constexpr int64_t kIters = 2'000'000;
  volatile float seed = 0.999f;  // unknown to the compiler, so nothing folds
  auto once = [&] {
    return seconds([&] {
      batch acc[kChains], x(seed), y(1e-4f);
      for (int c = 0; c < kChains; ++c) acc[c] = batch(static_cast<float>(c) * 1e-3f);
      for (int64_t i = 0; i < kIters; ++i)
        for (int c = 0; c < kChains; ++c) acc[c] = kernels::fmadd(acc[c], x, y);
      batch sum = acc[0];
      for (int c = 1; c < kChains; ++c) sum += acc[c];
      seed = kernels::reduce_add(sum) > 0 ? seed : 0.f;  // the result is used
    });
  };
  Row row;
  row.times = repeat(once, {1, 10, 100, 0.5});
  row.flops = 2.0 * static_cast<double>(kIters) * kChains * kernels::W;
  row.best_rate = true;
  return row;
}

// --- GEMM: matmul and bmm as a user calls them ----------------------------------------

Row gemm(int64_t M, int64_t K, int64_t N) {
  Generator gen(0);
  Tensor a = randn({M, K}, gen), b = randn({K, N}, gen);
  NoGradGuard no_grad;
  Row row;
  row.times = repeat([&] { return seconds([&] { Tensor c = matmul(a, b); }); }, kShort);  // (M, K)·(K, N) -> (M, N)
  row.flops = 2.0 * static_cast<double>(M * K * N);
  return row;
}

Row batched_gemm(int64_t B, int64_t M, int64_t K, int64_t N) {
  Generator gen(0);
  Tensor a = randn({B, M, K}, gen), b = randn({B, K, N}, gen);
  NoGradGuard no_grad;
  Row row;
  row.times = repeat([&] { return seconds([&] { Tensor c = bmm(a, b); }); }, kShort);  // -> (B, M, N)
  row.flops = 2.0 * static_cast<double>(B * M * K * N);
  return row;
}

// --- per-op overhead: a chain of one-element adds ------------------------------------

constexpr int kChainOps = 1000;

// y = a + b + b + … (1,000 adds), a and b one-element leaves that require
// grad; with `backward`, y.backward() too. The graph is freed inside the
// timed region, as it is in a training step.
Row add_chain(bool with_backward) {
  Tensor a = ones({1}).requires_grad_(), b = ones({1}).requires_grad_();
  auto once = [&] {
    double t = seconds([&] {
      Tensor y = a;
      for (int i = 0; i < kChainOps; ++i) y = add(y, b);
      if (with_backward) y.backward();
    });
    a.zero_grad(), b.zero_grad();
    return t;
  };
  Row row;
  row.times = repeat(once, kShort);
  row.ops = kChainOps;
  return row;
}

// --- scaled dot-product attention, forward and backward --------------------------------

// Letters: B batch, H heads, T steps, d head size.
//   O = softmax(Q·Kᵀ/√d)·V          Q, K, V (B, H, T, d), no mask, no dropout
// then O.backward(dO) with a fixed random dO. GFLOP/s counts the six
// matrix products (2 forward, 4 backward), 12·B·H·T²·d flops; softmax is
// extra work the count leaves out. Kᵀ is read in place by the product
// ({.transpose_b = true}), as DotProductAttention computes it, not copied.
Row attention(int64_t T) {
  const int64_t B = 8, H = 4, d = 64;
  Generator gen(0);
  Tensor Q = randn({B, H, T, d}, gen).requires_grad_(), K = randn({B, H, T, d}, gen).requires_grad_(),
         V = randn({B, H, T, d}, gen).requires_grad_(), dO = randn({B, H, T, d}, gen);
  auto once = [&] {
    double t = seconds([&] {
      Tensor scores = div(matmul(Q, K, {.transpose_b = true}), std::sqrt(static_cast<float>(d)));  // (B, H, T, T)
      Tensor O = matmul(softmax(scores, -1), V);                                                   // (B, H, T, d)
      O.backward(dO);
    });
    Q.zero_grad(), K.zero_grad(), V.zero_grad();
    return t;
  };
  Row row;
  row.times = repeat(once, T >= 4096 ? kLonger : kLong);
  row.flops = 12.0 * static_cast<double>(B * H * T * T * d);
  return row;
}

// The same attention by the fused op, on (B·H, T, d): the heads folded into
// one batch dim, as MultiHeadAttention lays them out. GFLOP/s counts the
// same six products as the plain row, so the two rates compare; the fused
// backward computes a seventh (Q·Kᵀ again, tile by tile), which it does not count.
Row fused_attention(int64_t B, int64_t T) {
  const int64_t H = 4, d = 64;
  Generator gen(0);
  Tensor Q = randn({B * H, T, d}, gen).requires_grad_(), K = randn({B * H, T, d}, gen).requires_grad_(),
         V = randn({B * H, T, d}, gen).requires_grad_(), dO = randn({B * H, T, d}, gen);
  auto once = [&] {
    double t = seconds([&] {
      Tensor O = scaled_dot_product_attention(Q, K, V);  // (B·H, T, d)
      O.backward(dO);
    });
    Q.zero_grad(), K.zero_grad(), V.zero_grad();
    return t;
  };
  Row row;
  row.times = repeat(once, T >= 4096 ? kLonger : kLong);
  row.flops = 12.0 * static_cast<double>(B * H * T * T * d);
  return row;
}

// --- training steps of the course's translation models -------------------------------

struct TrainSpec {
  bool transformer;  // else the GRU encoder with the Bahdanau decoder
  int64_t src_vocab, tgt_vocab;
  int64_t hiddens;      // the GRU's hidden size (= embedding size), or d_model
  int64_t ffn_hiddens;  // Transformer only
  int64_t heads;        // Transformer only
  int64_t layers;       // GRU layers, or blocks in each of encoder and decoder
  int64_t batch, steps;
  int reps;
};

std::shared_ptr<nn::EncoderDecoder> make_model(const TrainSpec& s) {
  const float dropout = 0.1f;
  if (s.transformer)
    return std::make_shared<nn::EncoderDecoder>(
        std::make_shared<nn::TransformerEncoder>(s.src_vocab, s.hiddens, s.ffn_hiddens, s.heads, s.layers, dropout),
        std::make_shared<nn::TransformerDecoder>(s.tgt_vocab, s.hiddens, s.ffn_hiddens, s.heads, s.layers, dropout));
  return std::make_shared<nn::EncoderDecoder>(
      std::make_shared<nn::Seq2SeqEncoder>(s.src_vocab, s.hiddens, s.hiddens, s.layers, dropout),
      std::make_shared<nn::Seq2SeqAttentionDecoder>(s.tgt_vocab, s.hiddens, s.hiddens, s.layers, dropout));
}

// The floating-point work of one Transformer step's matrix products,
// counted from the model's shapes: the arithmetic the step cannot go below.
// Forward, each Linear weight (in, out) costs 2·in·out per token it reads
// (all B·T of them: source and target are both T long here), and each
// attention layer's scores Q·Kᵀ and weighted sum A·V cost 2·B·T·T·d_model
// each (encoder self-attention, decoder self- and cross-attention per
// block). Backward computes two products the size of each forward one (the
// gradients of both operands: every input needs one, down to the
// embeddings), so the step is 3× the forward.
double transformer_step_flops(const nn::Module& model, const TrainSpec& s) {
  double weights = 0;  // Σ in·out over the Linear layers: every 2-D parameter but the embeddings
  for (const auto& [name, p] : model.named_parameters())
    if (p.dim() == 2 && name.find("embedding") == std::string::npos) weights += static_cast<double>(p.numel());
  const double B = static_cast<double>(s.batch), T = static_cast<double>(s.steps);
  const double attention_layers = 3.0 * static_cast<double>(s.layers);
  const double forward = 2 * B * T * weights + attention_layers * 2 * (2 * B * T * T * static_cast<double>(s.hiddens));
  return 3 * forward;
}

// One step on a random batch: source ids (B, T) with lengths in [3, T],
// target ids Y (B, T); the decoder reads Y shifted right behind bos (id 1),
// teacher forcing; the loss is the cross-entropy averaged over all B·T
// target tokens; then clip_grad_norm_(1.0) and Adam (lr 0.005). The batch
// is drawn off the clock.
Row train(const TrainSpec& s) {
  const int64_t B = s.batch, T = s.steps, V = s.tgt_vocab, bos = 1;
  auto model = make_model(s);
  model->train();
  nn::set_need_weights(*model, false);  // nothing reads them: the fused path, wherever no dropout falls on them
  std::vector<Tensor> params = model->parameters();
  optim::Adam opt(params, 0.005f);
  Generator gen(0);
  std::vector<double> rss_mb;  // resident memory after each step, warm-up steps included
  auto once = [&] {
    IntTensor X = randint(0, s.src_vocab, {B, T}, gen), Y = randint(0, V, {B, T}, gen);
    IntTensor X_len = randint(3, T + 1, {B}, gen), dec_X = IntTensor::empty({B, T});
    for (int64_t b = 0; b < B; ++b) {
      dec_X.data()[b * T] = bos;
      for (int64_t t = 1; t < T; ++t) dec_X.data()[b * T + t] = Y.data()[b * T + t - 1];
    }
    double t = seconds([&] {
      opt.zero_grad();
      Tensor logits = model->forward(X, dec_X, X_len);                               // (B, T, V)
      Tensor loss = cross_entropy(reshape(logits, {B * T, V}), Y.reshape({B * T}));  // mean over B·T tokens
      loss.backward();
      optim::clip_grad_norm_(params, 1.0f);
      opt.step();
    });
    rss_mb.push_back(status_mb("VmRSS:"));
    return t;
  };
  Row row;
  row.times = repeat(once, steps(s.reps));
  row.tokens = static_cast<double>(B * T);
  if (s.transformer) row.flops = transformer_step_flops(*model, s);
  // Flat memory: once the warm-up has filled the allocator's cache, a step
  // should reuse it, not grow the heap (a leak, or a cache that never fits).
  row.rss_growth_mb = rss_mb.back() - rss_mb[rss_mb.size() - row.times.size() - 1];  // after the last warm-up step
  return row;
}

// --- the cases -------------------------------------------------------------------------

struct Case {
  std::string name;
  std::function<Row()> run;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases{{"peak/fma", fma_peak}};
  for (int64_t n : {64, 128, 256, 512, 1024})
    cases.push_back({fmt::format("gemm/{}x{}x{}", n, n, n), [n] { return gemm(n, n, n); }});
  // Linear layers of the lessons: 64·10 tokens through 32 -> 96 and the
  // 32 -> 201 output layer; the large Transformer's FFN (32·32 tokens,
  // 256 -> 1024) and the same at 2,560 tokens.
  // (Plain variables, not structured bindings, for lambdas to capture: clang
  // before 16 cannot capture a binding.)
  for (std::array<int64_t, 3> mkn :
       {std::array<int64_t, 3>{640, 32, 96}, {640, 32, 201}, {1024, 256, 1024}, {2560, 256, 1024}}) {
    const int64_t M = mkn[0], K = mkn[1], N = mkn[2];
    cases.push_back({fmt::format("gemm/{}x{}x{}", M, K, N), [M, K, N] { return gemm(M, K, N); }});
  }
  // Attention scores Q·Kᵀ, (B·H, T, d)·(B·H, d, T): the lessons' 64 × 4
  // heads of 8 over 10 steps, and 8 × 4 heads of 64 over 128 and 512 steps.
  for (std::array<int64_t, 3> btd : {std::array<int64_t, 3>{256, 10, 8}, {32, 128, 64}, {32, 512, 64}}) {
    const int64_t B = btd[0], T = btd[1], d = btd[2];
    cases.push_back({fmt::format("bmm/{}x{}x{}x{}", B, T, d, T), [B, T, d] { return batched_gemm(B, T, d, T); }});
  }
  cases.push_back({"overhead/add_chain_forward", [] { return add_chain(false); }});
  cases.push_back({"overhead/add_chain_forward_backward", [] { return add_chain(true); }});
  for (int64_t T : {128, 512, 1024, 4096}) cases.push_back({fmt::format("sdpa/T{}", T), [T] { return attention(T); }});
  for (int64_t T : {512, 1024, 4096})
    cases.push_back({fmt::format("sdpa_fused/T{}", T), [T] { return fused_attention(8, T); }});
  cases.push_back({"sdpa_fused/B1_T16384", [] { return fused_attention(1, 16384); }});
  cases.push_back({"train/bahdanau_gru", [] { return train({false, 184, 201, 32, 0, 0, 2, 64, 10, 20}); }});
  cases.push_back({"train/transformer_d32", [] { return train({true, 184, 201, 32, 64, 4, 2, 64, 10, 20}); }});
  cases.push_back({"train/transformer_d256", [] { return train({true, 1000, 1000, 256, 1024, 4, 2, 32, 32, 10}); }});
  return cases;
}

// --gemm-sweep: square GEMMs at every n from 64 to 128, then every 8 to 256
// and every 32 to 1024, for a claim about "every n" (the small sizes, where
// edges and call overhead weigh most, one by one).
std::vector<Case> gemm_sweep_cases() {
  std::vector<Case> cases;
  auto add = [&](int64_t n) {
    cases.push_back({fmt::format("gemm/{}x{}x{}", n, n, n), [n] { return gemm(n, n, n); }});
  };
  for (int64_t n = 64; n <= 128; ++n) add(n);
  for (int64_t n = 136; n <= 256; n += 8) add(n);
  for (int64_t n = 288; n <= 1024; n += 32) add(n);
  return cases;
}

// --- printing ----------------------------------------------------------------------------

bool is_gemm(const std::string& name) { return name.rfind("gemm/", 0) == 0 || name.rfind("bmm/", 0) == 0; }

// Milliseconds to 4 significant digits (0.006123, 33.76, 3476.7): the
// cases span six orders of magnitude.
std::string ms(double x) {
  int decimals = x > 0 ? std::clamp(3 - static_cast<int>(std::floor(std::log10(x))), 1, 6) : 1;
  return fmt::format("{:.{}f}", x, decimals);
}

// The last two columns only when some row has them: "MB growth" for the
// training steps, "spread" with --processes.
void print_table_header(int processes) {
  fmt::print("{:<36} {:>3} {:>11} {:>21}  {:<30} {:>8} {:>9}", "case", "thr", "median ms", "min–max ms", "rate",
             "peak MB", "MB growth");
  if (processes > 1) fmt::print(" {:>9}", fmt::format("spread/{}", processes));
  fmt::print("\n");
}

void print_table_row(const json& row) {
  std::string rate;
  if (row.contains("tokens_per_s")) {  // a training step: its matrix products' share of the peak, if counted
    rate = fmt::format("{:.0f} tokens/s", row["tokens_per_s"].get<double>());
    if (row.contains("peak_share")) rate += fmt::format(", {:.0f}% of peak", 100 * row["peak_share"].get<double>());
  } else if (row.contains("gflops")) {
    rate = fmt::format("{:.1f} GFLOP/s", row["gflops"].get<double>());
    if (row.contains("peak_share")) rate += fmt::format(" ({:.0f}% of peak)", 100 * row["peak_share"].get<double>());
  } else if (row.contains("us_per_op")) {
    rate = fmt::format("{:.2f} µs/op", row["us_per_op"].get<double>());
  }
  std::string spread = ms(row["min_ms"].get<double>()) + "–" + ms(row["max_ms"].get<double>());
  std::string memory = row.contains("peak_rss_mb") ? fmt::format("{:.1f}", row["peak_rss_mb"].get<double>()) : "";
  std::string growth = row.contains("rss_growth_mb") ? fmt::format("{:+.1f}", row["rss_growth_mb"].get<double>()) : "";
  fmt::print("{:<36} {:>3} {:>11} {:>21}  {:<30} {:>8} {:>9}", row["case"].get<std::string>(),
             row["threads"].get<int>(), ms(row["median_ms"].get<double>()), spread, rate, memory, growth);
  if (row.contains("process_spread")) fmt::print(" {:>8.1f}%", 100 * row["process_spread"].get<double>());
  fmt::print("\n");
  std::fflush(stdout);
}

// Runs `name` in a process of its own (this program with --case) and
// returns the JSON row it prints.
json run_in_own_process(const std::string& name, int threads) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string command = fmt::format("'{}' --case '{}' --threads {}", self, name, threads);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) fail("bench: cannot run {}", command);
  std::string out;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  if (int status = pclose(pipe); status != 0) fail("bench: case {} failed (exit status {})", name, status);
  return json::parse(out);
}

// Runs `name` in `processes` processes one after another. Each process has
// its own heap, its own page placement and its own luck with the machine, so
// the spread of their medians is how far one run's number can be trusted:
// the row is the process with the middle median (the lower middle of an even
// count), plus every process's median and the spread, (max - min) / min.
json run_in_processes(const std::string& name, int threads, int processes) {
  std::vector<json> rows;
  for (int p = 0; p < processes; ++p) rows.push_back(run_in_own_process(name, threads));
  if (processes == 1) return rows[0];
  std::sort(rows.begin(), rows.end(),
            [](const json& a, const json& b) { return a["median_ms"].get<double>() < b["median_ms"].get<double>(); });
  json row = rows[static_cast<size_t>(processes - 1) / 2];
  json medians = json::array();
  for (const json& r : rows) medians.push_back(r["median_ms"]);
  row["process_medians_ms"] = medians;
  row["process_spread"] = rows.back()["median_ms"].get<double>() / rows.front()["median_ms"].get<double>() - 1;
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"qkv's benchmark: one row per case (tools/bench_torch.py prints the same for PyTorch)"};
  bool as_json = false, list = false, gemm_sweep = false;
  std::vector<std::string> filters;
  std::string one_case;
  int threads = 1, processes = 1;
  app.add_flag("--json", as_json, "print the rows as JSON lines instead of a table");
  app.add_option("--filter", filters, "run only the cases whose name contains this (may repeat: any of them)");
  app.add_option("--threads", threads, "threads the kernels run on (set_num_threads); default 1")
      ->check(CLI::Range(1, 1024));
  app.add_option("--processes", processes,
                 "run each case in this many processes, one after another: the row is the middle one, with the "
                 "spread of their medians")
      ->check(CLI::Range(1, 100));
  app.add_flag("--gemm-sweep", gemm_sweep,
               "instead of the cases: square GEMMs at every n from 64 to 128, every 8 to 256, every 32 to 1024");
  app.add_flag("--list", list, "print the case names and exit");
  app.add_option("--case", one_case, "run this one case here and print its JSON row (each case runs so)");
  CLI11_PARSE(app, argc, argv);
  set_num_threads(threads);

  std::vector<Case> cases = gemm_sweep ? gemm_sweep_cases() : all_cases();
  if (!one_case.empty()) {  // a case in its own process: its one row, with its own peak memory
    for (Case& c : gemm_sweep ? all_cases() : gemm_sweep_cases()) cases.push_back(std::move(c));
    auto it = std::find_if(cases.begin(), cases.end(), [&](const Case& c) { return c.name == one_case; });
    if (it == cases.end()) {
      fmt::print(stderr, "bench: no case named '{}' (--list names them)\n", one_case);
      return 2;
    }
    reset_peak_rss();
    double before = status_mb("VmRSS:");
    try {
      // peak/fma is one thread's loop whatever --threads says, and its row says so.
      json row = to_json(it->name, it->run(), it->name == "peak/fma" ? 1 : threads);
      row["peak_rss_mb"] = status_mb("VmHWM:") - before;
      fmt::print("{}\n", row.dump());
    } catch (const std::exception& e) {
      fmt::print(stderr, "bench: case {}: {}\n", one_case, e.what());
      return 1;
    }
    return 0;
  }

  std::vector<std::string> selected;
  for (const Case& c : cases)
    if (filters.empty() || std::any_of(filters.begin(), filters.end(),
                                       [&](const std::string& f) { return c.name.find(f) != std::string::npos; }))
      selected.push_back(c.name);
  if (list) {
    for (const Case& c : cases) fmt::print("{}\n", c.name);
    return 0;
  }
  if (selected.empty()) {
    fmt::print(stderr, "bench: no case matches the filter (--list names them)\n");
    return 2;
  }
  // GEMM rows and the Transformer steps give their share of the FMA peak, so
  // the peak is measured first.
  bool any_flops = std::any_of(selected.begin(), selected.end(),
                               [](const std::string& n) { return is_gemm(n) || n.rfind("train/transformer", 0) == 0; });
  if (any_flops && std::find(selected.begin(), selected.end(), "peak/fma") == selected.end())
    selected.insert(selected.begin(), "peak/fma");

  json meta = {{"impl", "qkv"},
               {"cpu", cpu_model()},
               {"cpu_simd", cpu_simd()},
               {"compiled_simd", compiled_simd()},
               {"vector_floats", kernels::W},
               {"threads", threads},
               {"load_average", load_average()}};
  if (as_json) {
    fmt::print("{}\n", json{{"meta", meta}}.dump());
  } else {
    fmt::print("qkv bench on {} (CPU has: {}), compiled for {} ({} floats a vector), {} thread{}\n", cpu_model(),
               cpu_simd(), compiled_simd(), kernels::W, threads, threads == 1 ? "" : "s");
    fmt::print("load average {} (1, 5, 15 min; well above 0, other work shares the CPU and the times are noisy)\n\n",
               load_average());
    print_table_header(processes);
  }
  double peak_gflops = 0;
  int failures = 0;
  for (const std::string& name : selected) {
    json row;
    try {
      row = run_in_processes(name, threads, processes);
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}\n", e.what());
      ++failures;
      continue;
    }
    if (name == "peak/fma") peak_gflops = row["gflops"].get<double>();
    if (name != "peak/fma" && row.contains("gflops") && peak_gflops > 0)
      row["peak_share"] = row["gflops"].get<double>() / peak_gflops;
    if (as_json) {
      fmt::print("{}\n", row.dump());
      std::fflush(stdout);
    } else {
      print_table_row(row);
    }
  }
  return failures == 0 ? 0 : 1;
}
