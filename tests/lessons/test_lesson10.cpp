// Lesson 10 (self-attention and positional encoding), run at its defaults and
// checked from its results.json. What can be counted is checked against the
// formulas of 001 对比 (FLOPs from the shapes, sequential steps, path
// lengths) and the encoding against its definition; the timings and their
// fitted slopes depend on the machine, so they are only checked to exist.
#include <doctest/doctest.h>

#include <cmath>

#include "run_lesson.hpp"

using qkv::lesson_test::LessonRun;

namespace {

std::vector<double> doubles(const LessonRun& r, const std::string& key) {
  return r.results().at(key).get<std::vector<double>>();
}

// One run for every SUBCASE (doctest enters the TEST_CASE once per SUBCASE,
// and the lesson takes a few seconds).
const LessonRun& lesson10() {
  static const LessonRun run("10_positional_encoding");
  return run;
}

}  // namespace

TEST_CASE("lessons/10_positional_encoding") {
  const LessonRun& r = lesson10();
  INFO(r.run.output);
  REQUIRE(r.run.status == 0);
  REQUIRE(r.json.is_object());

  SUBCASE("transcript, sections and pictures") {
    qkv::lesson_test::check_ran(
        r,
        {"What this lesson shows", "自注意力 简介", "位置编码矩阵", "绝对位置信息", "相对位置信息", "对比", "004 §2.2",
         "是位置编码矩阵的一行", "非线性信息", "自编码输入", "位置于计δ处", "What to remember"},
        {"positional_encoding.svg", "pe_columns.svg", "time_vs_n.svg", "time_vs_d.svg"});
  }

  SUBCASE("the erratum's element PE(1, 0) is sin(1), printed to 4 places") {
    const std::string transcript = qkv::lesson_test::read_text(r.out / "transcript.txt");
    CHECK(transcript.find(fmt::format("P[1, 0] = sin(1) = {:.4f}", std::sin(1.0))) != std::string::npos);
  }

  SUBCASE("the encoding matrix is P[i, 2j] = sin(i/10000^(2j/d)), P[i, 2j+1] = cos(…) (001 位置编码矩阵)") {
    REQUIRE(r.shape("pe_shape") == std::vector<int64_t>{60, 32});
    std::vector<float> P = r.values("pe");
    REQUIRE(P.size() == 60 * 32);
    for (int i = 0; i < 60; ++i)
      for (int col = 0; col < 32; col += 2) {
        double angle = i / std::pow(10000.0, col / 32.0);
        CHECK(P[static_cast<size_t>(i * 32 + col)] == doctest::Approx(std::sin(angle)).epsilon(1e-5));
        CHECK(P[static_cast<size_t>(i * 32 + col + 1)] == doctest::Approx(std::cos(angle)).epsilon(1e-5));
      }
  }

  SUBCASE("self-attention without positions only reorders; with P it changes (from mathematics)") {
    // f(ΠX) = Π f(X) for a permutation Π: exact up to float32 rounding.
    CHECK(r.results().at("permutation_error").get<double>() < 1e-5);
    CHECK(r.results().at("permutation_change_with_pe").get<double>() > 1e-2);
  }

  SUBCASE("the binary counter: bit k flips ⌊59/2^k⌋ times in 0…59; sine columns change sign less often as j grows") {
    std::vector<double> flips = doubles(r, "bit_flips");
    REQUIRE(flips.size() == 4);
    for (size_t bit = 0; bit < 4; ++bit) CHECK(flips[bit] == std::floor(59.0 / std::pow(2.0, bit)));
    std::vector<double> changes = doubles(r, "pe_sign_changes");
    REQUIRE(changes.size() == 8);
    CHECK(changes[0] == 18);  // sin(i), i = 0…59, crosses 0 at π, 2π, …, 18π = 56.5
    for (size_t j = 1; j < changes.size(); ++j) CHECK(changes[j] <= changes[j - 1]);
  }

  SUBCASE("P[i+δ] = R(δ)·P[i] for every i (001 相对位置信息)") {
    CHECK(r.results().at("relative_max_error").get<double>() < 1e-4);
  }

  SUBCASE("every row of P has length √(d/2), and P[i]·P[i+δ] = Σⱼ cos(ω_j δ) depends on δ alone (004 §2.2's erratum)") {
    CHECK(r.results().at("pe_row_norm_spread").get<double>() < 1e-5);
    // P[i]·P[i+δ] = Σⱼ sin(ω_j i) sin(ω_j (i+δ)) + cos(ω_j i) cos(ω_j (i+δ)) = Σⱼ cos(ω_j δ), ω_j = 1/10000^(2j/d).
    const std::vector<double> similarity = doubles(r, "pe_similarity_by_distance");
    const std::vector<int> deltas = {0, 1, 2, 5, 10, 20, 50};
    REQUIRE(similarity.size() == deltas.size());
    for (size_t i = 0; i < deltas.size(); ++i) {
      double expected = 0;
      for (int j = 0; j < 16; ++j) expected += std::cos(deltas[i] / std::pow(10000.0, 2.0 * j / 32));
      CHECK(similarity[i] == doctest::Approx(expected).epsilon(1e-4));
    }
    CHECK(similarity[0] == doctest::Approx(16));  // d/2
    qkv::lesson_test::check_ran(r, {"位置编码越靠近某个时间步"}, {});
  }

  SUBCASE("对比: FLOPs from the shapes, sequential steps and path lengths (001 对比)") {
    const double B = r.results().at("B").get<double>(), k = r.results().at("k").get<double>();
    const double d_fixed = r.results().at("d_fixed").get<double>(), n_fixed = r.results().at("n_fixed").get<double>();
    std::vector<double> ns = doubles(r, "n_sizes"), ds = doubles(r, "d_sizes");
    REQUIRE(ns.size() >= 3);
    REQUIRE(ds.size() >= 3);
    // A multiply-add is 2 FLOPs. CNN: O(knd²) = 2Bnkd²; RNN: two d × d products a step, 4Bnd²;
    // self-attention: QKᵀ and (weights)·V, each n²d multiply-adds, 4Bn²d.
    auto check_flops = [&](const std::vector<double>& got, const std::vector<double>& n, const std::vector<double>& d,
                           double (*formula)(double B, double n, double d, double k)) {
      REQUIRE(got.size() == n.size());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == formula(B, n[i], d[i], k));
    };
    auto cnn = [](double b, double n, double d, double kk) { return 2 * b * n * kk * d * d; };
    auto rnn = [](double b, double n, double d, double) { return 4 * b * n * d * d; };
    auto attention = [](double b, double n, double d, double) { return 4 * b * n * n * d; };
    std::vector<double> d_const(ns.size(), d_fixed), n_const(ds.size(), n_fixed);
    check_flops(doubles(r, "flops_cnn_n"), ns, d_const, cnn);
    check_flops(doubles(r, "flops_rnn_n"), ns, d_const, rnn);
    check_flops(doubles(r, "flops_attention_n"), ns, d_const, attention);
    check_flops(doubles(r, "flops_cnn_d"), n_const, ds, cnn);
    check_flops(doubles(r, "flops_rnn_d"), n_const, ds, rnn);
    check_flops(doubles(r, "flops_attention_d"), n_const, ds, attention);

    // Sequential operations O(1), O(n), O(1); longest path ⌈(n-1)/(k-1)⌉ stacked convolutions, n-1 RNN steps, 1.
    std::vector<double> steps_cnn = doubles(r, "steps_cnn"), steps_rnn = doubles(r, "steps_rnn"),
                        steps_attention = doubles(r, "steps_attention");
    std::vector<double> path_cnn = doubles(r, "path_cnn"), path_rnn = doubles(r, "path_rnn"),
                        path_attention = doubles(r, "path_attention");
    REQUIRE(path_cnn.size() == ns.size());
    REQUIRE(steps_rnn.size() == ns.size());
    for (size_t i = 0; i < ns.size(); ++i) {
      CHECK(steps_cnn[i] == 1);
      CHECK(steps_rnn[i] == ns[i]);
      CHECK(steps_attention[i] == 1);
      CHECK(path_cnn[i] == std::ceil((ns[i] - 1) / (k - 1)));
      CHECK(path_rnn[i] == ns[i] - 1);
      CHECK(path_attention[i] == 1);
    }
  }

  SUBCASE("the timings and slopes are reported (their values depend on the machine)") {
    for (const char* key :
         {"slope_cnn_n", "slope_rnn_n", "slope_attention_n", "slope_cnn_d", "slope_rnn_d", "slope_attention_d"}) {
      INFO(key);
      CHECK(std::isfinite(r.results().at(key).get<double>()));
    }
    for (const char* key : {"ms_cnn_n", "ms_rnn_n", "ms_attention_n", "ms_cnn_d", "ms_rnn_d", "ms_attention_d"})
      for (double ms : doubles(r, key)) CHECK(ms > 0);
  }
}
