// Lesson 14 (attention at length), run at seeds 0, 1 and 2 and checked from
// its results.json and its tile picture. The online softmax and the tiled
// attention are recomputed here in double from the inputs the lesson wrote
// (the row, Q, K, V), with the plain formulas: softmax(x)ᵢ = exp(xᵢ - max x)
// / Σⱼ exp(xⱼ - max x), and causal attention out[q] = Σ_{k ≤ q} softmax(q·k/√d)
// v[k]. Which key tiles a query tile meets follows from the causal mask. The
// memory bounds are counted from the tensors each path must hold; the
// timings depend on the machine, so only their growth is checked, loosely.
#include <doctest/doctest.h>

#include <cmath>
#include <pugixml.hpp>
#include <sstream>

#include "run_lesson.hpp"

using qkv::lesson_test::check_ran;
using qkv::lesson_test::LessonRun;

namespace {

std::vector<double> doubles(const LessonRun& r, const std::string& key) {
  return r.results().at(key).get<std::vector<double>>();
}
double number(const LessonRun& r, const std::string& key) { return r.results().at(key).get<double>(); }

// The online softmax's row, read in blocks of 3: its softmax, and the running
// maximum and sum after each block, in double.
void check_online_softmax(const LessonRun& r) {
  const std::vector<float> x = r.values("row");
  REQUIRE(x.size() == 10);
  double m = -INFINITY;
  for (float v : x) m = std::max(m, static_cast<double>(v));
  double total = 0;
  for (float v : x) total += std::exp(v - m);
  const std::vector<float> online = r.values("online_softmax");
  REQUIRE(online.size() == 10);
  for (size_t i = 0; i < 10; ++i) CHECK(online[i] == doctest::Approx(std::exp(x[i] - m) / total).epsilon(1e-5));
  CHECK(number(r, "online_softmax_max_diff") < 1e-6);
  CHECK(number(r, "online_softmax_max_diff_any_block") < 1e-6);

  const std::vector<double> maxima = doubles(r, "block_maxima"), sums = doubles(r, "block_sums");
  REQUIRE(maxima.size() == 4);  // blocks [0, 3), [3, 6), [6, 9), [9, 10)
  REQUIRE(sums.size() == 4);
  for (size_t b = 0; b < 4; ++b) {
    const size_t end = std::min<size_t>(3 * (b + 1), 10);
    double running_max = -INFINITY, running_sum = 0;
    for (size_t i = 0; i < end; ++i) running_max = std::max(running_max, static_cast<double>(x[i]));
    for (size_t i = 0; i < end; ++i) running_sum += std::exp(x[i] - running_max);
    CHECK(maxima[b] == running_max);  // a maximum of floats is one of them: exact
    CHECK(sums[b] == doctest::Approx(running_sum).epsilon(1e-5));
  }
}

// The tiled causal attention against the formula, and the tiles the shown query tile met.
void check_tiles(const LessonRun& r) {
  const auto T = static_cast<size_t>(r.results().at("tile_T").get<int64_t>());
  const auto BR = r.results().at("tile_BR").get<int64_t>(), BC = r.results().at("tile_BC").get<int64_t>();
  REQUIRE(r.shape("tile_Q") == std::vector<int64_t>{static_cast<int64_t>(T), 8});
  const size_t d = 8;
  const std::vector<float> Q = r.values("tile_Q"), K = r.values("tile_K"), V = r.values("tile_V");
  const std::vector<float> out = r.values("tiled_output");
  REQUIRE(out.size() == T * d);
  for (size_t q = 0; q < T; ++q) {
    std::vector<double> s(q + 1);
    double m = -INFINITY, total = 0;
    for (size_t k = 0; k <= q; ++k) {
      for (size_t j = 0; j < d; ++j) s[k] += static_cast<double>(Q[q * d + j]) * K[k * d + j];
      s[k] /= std::sqrt(static_cast<double>(d));
      m = std::max(m, s[k]);
    }
    for (double& v : s) v = std::exp(v - m);  // the unnormalised weights
    for (double v : s) total += v;
    for (size_t j = 0; j < d; ++j) {
      double expected = 0;
      for (size_t k = 0; k <= q; ++k) expected += s[k] / total * V[k * d + j];
      CHECK(out[q * d + j] == doctest::Approx(expected).epsilon(1e-4).scale(1));
    }
  }
  CHECK(number(r, "tiled_max_diff") < 1e-5);

  // Query tile t holds rows [t·BR, t·BR + BR); key tile j is met when its first key j·BC is seen
  // by the tile's last row, and skipped otherwise: every key in it lies after every query.
  const auto tile = r.results().at("shown_query_tile").get<int64_t>();
  const int64_t last_row = std::min<int64_t>((tile + 1) * BR, static_cast<int64_t>(T)) - 1;
  std::vector<double> met, skipped;
  for (int64_t j = 0; j * BC < static_cast<int64_t>(T); ++j)
    (j * BC <= last_row ? met : skipped).push_back(static_cast<double>(j));
  CHECK(doubles(r, "shown_tile_met") == met);
  CHECK(doubles(r, "shown_tile_skipped") == skipped);
  CHECK_FALSE(skipped.empty());  // the picture shows a tile skipped

  // The picture, parsed: each cell's <title> is "q, k: value". The shown tile's rows hold the
  // step at which key k's tile was met (tiles are met in order: k / BC + 1), its masked keys
  // k > q are drawn as masked; every other row is 0.
  pugi::xml_document svg;
  REQUIRE(svg.load_file((r.out / "query_tile_walk.svg").c_str()));
  size_t cells = 0;
  for (pugi::xpath_node node : svg.select_nodes("//rect[contains(@class, 'cell')]")) {
    const pugi::xml_node rect = node.node();
    std::istringstream title(rect.child_value("title"));
    int64_t q = 0, k = 0;
    char comma = 0, colon = 0;
    std::string value;
    title >> q >> comma >> k >> colon >> value;
    CAPTURE(q);
    CAPTURE(k);
    const bool in_tile = q / BR == tile;
    const bool masked = std::string(rect.attribute("class").value()).find("masked") != std::string::npos;
    CHECK(masked == (in_tile && k > q));
    if (!masked) CHECK(std::stod(value) == (in_tile ? static_cast<double>(k / BC + 1) : 0.0));
    ++cells;
  }
  CHECK(cells == T * T);
}

void check_memory_and_time(const LessonRun& r) {
  const double N = number(r, "N"), d = number(r, "d"), plain_max_t = number(r, "plain_max_t"), MB = 1 << 20;
  const std::vector<double> T = doubles(r, "T");
  const std::vector<double> plain = doubles(r, "plain_tensor_mb"), fused = doubles(r, "fused_tensor_mb");
  REQUIRE(fused.size() == T.size());
  size_t plain_rows = 0;
  for (double t : T) plain_rows += t <= plain_max_t;
  REQUIRE(plain.size() == plain_rows);
  for (size_t i = 0; i < T.size(); ++i) {
    CAPTURE(T[i]);
    const double weights = N * T[i] * T[i] * 4 / MB, linear = N * T[i] * d * 4 / MB;  // one (N,T,T), one (N,T,d)
    // The plain backward holds the weights P and their gradient dP at once (dS = P ⊙ (dP - Σ P·dP)):
    // at least two (N, T, T) buffers; besides them, a few (N, T, d) ones, blocks at most 25% over.
    if (i < plain.size()) {
      CHECK(plain[i] >= 2 * weights);
      CHECK(plain[i] <= 1.25 * (3 * weights + 6 * linear));
    }
    // The fused path holds the output and dQ, dK, dV (four (N, T, d)) and the log-sum-exp (N, T).
    CHECK(fused[i] >= 4 * linear);
    CHECK(fused[i] <= 1.25 * 6 * linear);
  }
  CHECK(number(r, "fused_memory_growth") == doctest::Approx(2).epsilon(0.05));  // linear in T
  CHECK(number(r, "plain_memory_growth") > 3);                                  // T² dominates
  // Time: both paths compute all T² scores. Machine-dependent, so only: more than linear growth.
  const std::vector<double> plain_s = doubles(r, "plain_seconds"), fused_s = doubles(r, "fused_seconds");
  CHECK(plain_s.size() == plain.size());
  CHECK(fused_s.size() == T.size());
  for (double s : plain_s) CHECK(s > 0);
  for (double s : fused_s) CHECK(s > 0);
  CHECK(number(r, "plain_seconds_growth") > 2.5);
  CHECK(number(r, "fused_seconds_growth") > 2.5);
  CHECK(doubles(r, "plain_peak_rss_mb").size() == plain.size());
  CHECK(doubles(r, "fused_peak_rss_mb").size() == T.size());
}

void check_run(const LessonRun& r) {
  check_ran(r,
            {"softmax, one block at a time", "one query tile walks the key tiles", "need_weights off",
             "what changed and what did not", "What to remember"},
            {"query_tile_walk.svg", "time_vs_T.svg", "memory_vs_T.svg"});
  check_online_softmax(r);
  check_tiles(r);
  CHECK(number(r, "fused_max_diff") < 1e-5);
  for (double diff : doubles(r, "fused_grad_max_diff")) CHECK(diff < 1e-4);
  CHECK(r.results().at("plain_kept_weights").get<bool>());
  CHECK_FALSE(r.results().at("fused_kept_weights").get<bool>());
  check_memory_and_time(r);
  // The summary states the measured growth, not constants.
  const std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
  CHECK(transcript.find(fmt::format("memory ×{:.2f} plain, ×{:.2f} fused", number(r, "plain_memory_growth"),
                                    number(r, "fused_memory_growth"))) != std::string::npos);
  CHECK(transcript.find(fmt::format("time ×{:.2f} plain, ×{:.2f} fused", number(r, "plain_seconds_growth"),
                                    number(r, "fused_seconds_growth"))) != std::string::npos);
}

}  // namespace

TEST_CASE("lessons/14_attention_at_length at seeds 0, 1 and 2") {
  for (int seed : {0, 1, 2}) {
    CAPTURE(seed);
    const LessonRun r("14_attention_at_length", fmt::format("--seed {} --color never", seed));
    INFO(r.run.output);
    REQUIRE(r.run.status == 0);
    check_run(r);
  }
}

TEST_CASE("lessons/14_attention_at_length past the plain path's longest T") {
  // --max-t 4096: the fused path runs to 4096, the plain one stops at 2048 and the lesson says what
  // one of its (N, T, T) buffers would take at 4096: 4 · 4096² · 4 bytes = 256 MB.
  const LessonRun r("14_attention_at_length", "--max-t 4096 --reps 1 --color never");
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  CHECK(doubles(r, "T").back() == 4096);
  CHECK(doubles(r, "fused_tensor_mb").size() == 6);  // 128 … 4096
  CHECK(doubles(r, "plain_tensor_mb").size() == 5);  // 128 … 2048
  CHECK(r.run.output.find("At T = 4096 the plain path would hold (N, T, T) float buffers of 256 MB each") !=
        std::string::npos);
}
