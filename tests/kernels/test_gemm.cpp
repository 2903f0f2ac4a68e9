// gemm against gemm_reference, and both against products worked out by hand.
//
// Sizes are odd on purpose: none is a multiple of the SIMD width or of the
// register block, so every edge path of the packed kernel runs. Strides are
// larger than the rows they hold, and C's padding is checked to stay untouched.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/gemm.hpp"
#include "kernels/kernel_test_util.hpp"

using namespace qkv::kernels;
using namespace qkv::kernels::test;

namespace {

constexpr float kSentinel = -12345.0f;  // fills C's padding, which gemm must not touch

// One gemm call checked against gemm_reference:
//   op(A) is (M, K), op(B) is (K, N), C is (M, N), each stored with 3 spare
//   floats at the end of every row (ld = row length + 3).
void check_gemm(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, bool accumulate) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(trans_a);
  CAPTURE(trans_b);
  CAPTURE(accumulate);

  // A is stored (M, K), or (K, M) when transposed; likewise B.
  const int64_t a_rows = trans_a ? K : M, a_cols = trans_a ? M : K;
  const int64_t b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
  const int64_t lda = a_cols + 3, ldb = b_cols + 3, ldc = N + 3;
  std::vector<float> A = random_vector(a_rows * lda, 1);
  std::vector<float> B = random_vector(b_rows * ldb, 2);

  // C starts as random values when accumulating and as NaN otherwise: an
  // overwrite must never read it. The padding holds a sentinel either way.
  std::vector<float> C0 = random_vector(M * ldc, 3);
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      float& c = C0[i * ldc + j];
      if (j >= N)
        c = kSentinel;
      else if (!accumulate)
        c = std::numeric_limits<float>::quiet_NaN();
    }
  }
  std::vector<float> C = C0, C_ref = C0;
  gemm(trans_a, trans_b, M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, accumulate);
  gemm_reference(trans_a, trans_b, M, N, K, A.data(), lda, B.data(), ldb, C_ref.data(), ldc, accumulate);

  // Tolerance. Both kernels sum the same K products in different orders. A
  // float sum of K terms is off by at most about K·u·Σ|terms| (u = 2⁻²⁴, the
  // unit roundoff), so the two may differ by 2·(K+1)·u·(Σₖ|a·b| + |C₀|). That
  // is a worst-case bound (it never flakes) yet far below a real bug: a single
  // lost product is about Σ|a·b| / K.
  std::vector<float> A_abs(A), B_abs(B), bound(M * ldc, 0.0f);
  for (float& x : A_abs) x = std::abs(x);
  for (float& x : B_abs) x = std::abs(x);
  gemm_reference(trans_a, trans_b, M, N, K, A_abs.data(), lda, B_abs.data(), ldb, bound.data(), ldc, false);
  const double u = std::numeric_limits<float>::epsilon() / 2;

  int64_t bad = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      int64_t at = i * ldc + j;
      bool ok;
      if (j >= N) {
        ok = C[at] == kSentinel;
      } else {
        double scale = bound[at] + (accumulate ? std::abs(C0[at]) : 0.0);
        ok = std::abs(double(C[at]) - double(C_ref[at])) <= 2.0 * static_cast<double>(K + 1) * u * scale;
      }
      if (!ok && bad++ == 0) {
        INFO("first mismatch at (", i, ", ", j, "): gemm ", C[at], " vs reference ", C_ref[at]);
        CHECK(ok);
      }
    }
  }
  CHECK(bad == 0);
}

// n floats whose last one is the last before a page that may not be read:
// a kernel that reads past the end crashes here instead of adding garbage
// into lanes it then drops.
class FloatsBeforeGuardPage {
 public:
  explicit FloatsBeforeGuardPage(const std::vector<float>& values) {
    const int64_t page = sysconf(_SC_PAGESIZE) / int64_t(sizeof(float)), n = int64_t(values.size());
    const int64_t pages = (n + page - 1) / page;
    bytes_ = static_cast<size_t>((pages + 1) * page) * sizeof(float);
    memory_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(memory_ != MAP_FAILED);
    float* guard = static_cast<float*>(memory_) + pages * page;
    REQUIRE(mprotect(guard, static_cast<size_t>(page) * sizeof(float), PROT_NONE) == 0);
    data_ = guard - n;
    std::copy(values.begin(), values.end(), data_);
  }
  ~FloatsBeforeGuardPage() { munmap(memory_, bytes_); }
  FloatsBeforeGuardPage(const FloatsBeforeGuardPage&) = delete;
  FloatsBeforeGuardPage& operator=(const FloatsBeforeGuardPage&) = delete;
  const float* data() const { return data_; }

 private:
  void* memory_ = nullptr;
  size_t bytes_ = 0;
  float* data_ = nullptr;
};

// C = A·B with A (M, K) and B (K, N) stored without padding (lda = K, ldb =
// N), as from FloatsBeforeGuardPage, against the reference.
void check_unpadded(int64_t M, int64_t N, int64_t K, const float* A, const float* B) {
  std::vector<float> C(M * N), C_ref(M * N);
  gemm(false, false, M, N, K, A, K, B, N, C.data(), N, false);
  gemm_reference(false, false, M, N, K, A, K, B, N, C_ref.data(), N, false);
  int64_t bad = 0;
  for (int64_t i = 0; i < M * N; ++i) bad += std::abs(C[i] - C_ref[i]) > 1e-4f * (1.0f + std::abs(C_ref[i]));
  CHECK(bad == 0);
}

// Every combination of transposes, overwriting and accumulating.
void check_all_modes(int64_t M, int64_t N, int64_t K) {
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (bool accumulate : {false, true}) check_gemm(M, N, K, trans_a, trans_b, accumulate);
}

}  // namespace

TEST_CASE("kernels/gemm") {
  // SIMD kernel == reference, on shapes that cut across every block size:
  // M, N, K odd; 129 > MC rows; 257 > KC depth; 2100 > NC columns.
  SUBCASE("1x1x1") { check_all_modes(1, 1, 1); }
  SUBCASE("3x17x5") { check_all_modes(3, 17, 5); }
  // Edge blocks run kernels of their own size (gemm_edges.cpp): 1 to MR
  // rows (MR is 8 on Intel's AVX-512, 4 on AMD's, 6 with AVX2) times 1 to
  // 2·NR / W half batches of columns (NR is 2 batches, 4 on AMD's AVX-512:
  // 32, 64 or 16 columns), whole batches and a last half batch on
  // half-width registers, once per way of reading A (packed, or in place as
  // stored or transposed; see the next comment) and B (packed, or in place
  // as stored: see below). M = 7 to 15 reaches every edge row count for
  // each MR; the N below leave 8, 16, 20, 24, 28, 32, 36, 40, 48, 56 and 63
  // columns past whole 64-column panels, so every count of half batches, 1
  // to 8, and with B in place each count whose columns are whole half
  // batches (mod 32 and mod 16 they reach as much), at widths where A is
  // read in place (< 128) and packed (> 512). K = 9 and 37: edge kernels
  // with few accumulators sum even and odd k apart when K is 32 or more.
  SUBCASE("10x47x23") { check_all_modes(10, 47, 23); }
  SUBCASE("7 to 15 x 72 to 127, 520 to 575 x 9, 37") {
    for (int64_t M = 7; M <= 15; ++M)
      for (int64_t N : {72, 80, 84, 88, 92, 96, 100, 104, 112, 120, 127, 520, 528, 532, 540, 548, 560, 568, 575})
        for (int64_t K : {9, 37}) check_all_modes(M, N, K);
  }
  SUBCASE("17x129x33") { check_all_modes(17, 129, 33); }
  SUBCASE("129x65x257") { check_all_modes(129, 65, 257); }
  SUBCASE("5x2100x7") { check_all_modes(5, 2100, 7); }
  // A is read in place while a block of C is at most 512 columns wide (when
  // A is transposed 128, or 512 with 4-row panels: A_IN_PLACE_N,
  // A_T_IN_PLACE_N) and packed beyond: sizes on each side of both.
  SUBCASE("101x500x37") { check_all_modes(101, 500, 37); }
  SUBCASE("101x520x37") { check_all_modes(101, 520, 37); }
  SUBCASE("45x128x131") { check_all_modes(45, 128, 131); }
  SUBCASE("45x130x131") { check_all_modes(45, 130, 131); }
  // B, when not transposed, is read in place up to 64K floats and rows 256
  // floats apart (B_IN_PLACE_FLOATS, _LDB) while A is too (101x500x37
  // above packs it), but for an edge panel whose kernels would read past
  // C's last column: sizes on each side (K = 520 with N = 127 packs B), the
  // edge panel read in place (N = 80, 72: a whole batch, half a batch) or
  // packed (N = 100, 127), and in place over K slices (K = 300 > KC).
  SUBCASE("13 x 72, 80, 100, 127 x 300, 520") {
    for (int64_t N : {72, 80, 100, 127})
      for (int64_t K : {300, 520}) check_all_modes(13, N, K);
  }
  SUBCASE("B in place ends where its memory does") {
    // B stored with no padding (ldb = N) right before an unreadable page: a
    // kernel reading B in place past C's last column (the edge panels
    // above must be packed) crashes.
    for (int64_t N : {72, 80, 100, 127}) {
      CAPTURE(N);
      const int64_t M = 13, K = 41;
      const FloatsBeforeGuardPage B(random_vector(K * N, 2));
      check_unpadded(M, N, K, random_vector(M * K, 1).data(), B.data());
    }
  }
  // With A read in place as stored, the last 1 or 2 columns past whole
  // SIMD batches (N mod 16, and mod 8, is 1 or 2 here) are dot products
  // along k, in groups of 16 or 8 rows (a last group short of rows reads
  // the last row again), K in SIMD-wide steps and a masked last step (K =
  // 5: only that one; 300: two K slices).
  SUBCASE("1 to 33 x 65, 98 x 5, 37, 300: the last columns as dot products") {
    for (int64_t M : {1, 9, 17, 33})
      for (int64_t N : {65, 98})
        for (int64_t K : {5, 37, 300}) check_all_modes(M, N, K);
  }
  SUBCASE("A in place ends where its memory does") {
    // A stored with no padding (lda = K) right before an unreadable page:
    // the dot products' last step along k of A's last row must stop at K.
    for (int64_t K : {5, 37}) {
      CAPTURE(K);
      const int64_t M = 17, N = 66;
      const FloatsBeforeGuardPage A(random_vector(M * K, 1));
      check_unpadded(M, N, K, A.data(), random_vector(K * N, 2).data());
    }
  }
  // Large and odd: several blocks of M and of K at once, A packed, every
  // edge, as an n ≈ 1000 product meets them.
  SUBCASE("131x1031x263") { check_all_modes(131, 1031, 263); }

  SUBCASE("2x3 times 3x2, by hand") {
    // [1 2 3]   [ 7  8]   [ 58  64]
    // [4 5 6] · [ 9 10] = [139 154]
    //           [11 12]
    const float A[] = {1, 2, 3, 4, 5, 6};         // (2, 3)
    const float At[] = {1, 4, 2, 5, 3, 6};        // Aᵀ stored (3, 2)
    const float B[] = {7, 8, 9, 10, 11, 12};      // (3, 2)
    const float Bt[] = {7, 9, 11, 8, 10, 12};     // Bᵀ stored (2, 3)
    const float expected[] = {58, 64, 139, 154};  // (2, 2)
    for (bool trans_a : {false, true}) {
      for (bool trans_b : {false, true}) {
        CAPTURE(trans_a);
        CAPTURE(trans_b);
        float C[4] = {-1, -1, -1, -1};
        gemm(trans_a, trans_b, 2, 2, 3, trans_a ? At : A, trans_a ? 2 : 3, trans_b ? Bt : B, trans_b ? 3 : 2, C, 2,
             false);
        for (int i = 0; i < 4; ++i) CHECK(C[i] == expected[i]);

        // Accumulating adds the product once more.
        gemm(trans_a, trans_b, 2, 2, 3, trans_a ? At : A, trans_a ? 2 : 3, trans_b ? Bt : B, trans_b ? 3 : 2, C, 2,
             true);
        for (int i = 0; i < 4; ++i) CHECK(C[i] == 2 * expected[i]);
      }
    }
  }

  SUBCASE("small integers, exact") {
    // With entries in {-3, …, 3} every product and partial sum is a small
    // integer, exact in float, so any summation order gives the exact answer,
    // computed here in int64.
    const int64_t M = 37, N = 41, K = 300;
    Lcg rng{7};
    std::vector<float> A(M * K), B(K * N), C(M * N);
    for (float& x : A) x = std::floor(rng.uniform(-3.0f, 4.0f));
    for (float& x : B) x = std::floor(rng.uniform(-3.0f, 4.0f));
    gemm(false, false, M, N, K, A.data(), K, B.data(), N, C.data(), N, false);
    int64_t bad = 0;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        int64_t exact = 0;
        for (int64_t k = 0; k < K; ++k) exact += int64_t(A[i * K + k]) * int64_t(B[k * N + j]);
        bad += C[i * N + j] != float(exact);
      }
    }
    CHECK(bad == 0);
  }

  SUBCASE("empty sizes") {
    // K = 0: C = 0 (an empty sum), or C unchanged when accumulating.
    const float nothing[1] = {0};
    float C[6] = {std::numeric_limits<float>::quiet_NaN(), 1, 2, 3, 4, 5};
    gemm(false, false, 2, 3, 0, nothing, 1, nothing, 3, C, 3, true);
    CHECK(C[5] == 5);
    gemm(false, false, 2, 3, 0, nothing, 1, nothing, 3, C, 3, false);
    for (float c : C) CHECK(c == 0);

    // M = 0 or N = 0: nothing is written.
    float D[2] = {7, 7};
    gemm(false, false, 0, 2, 4, nothing, 4, nothing, 2, D, 2, false);
    gemm(false, false, 1, 0, 4, nothing, 4, nothing, 0, D, 2, false);
    CHECK(D[0] == 7);
    CHECK(D[1] == 7);
  }
}

TEST_CASE("kernels/gemm_batched: empty sizes") {
  // K = 0: every C[i] = 0 (an empty sum), or unchanged when accumulating.
  const float nothing[1] = {0};
  const int64_t at[3] = {0, 0, 0};
  float C[3 * 4];
  for (float& c : C) c = std::numeric_limits<float>::quiet_NaN();
  gemm_batched(false, false, 3, 2, 2, 0, nothing, at, 1, nothing, at, 2, C, 4, 2, false);
  for (float c : C) CHECK(c == 0);
  C[5] = 5;
  gemm_batched(false, false, 3, 2, 2, 0, nothing, at, 1, nothing, at, 2, C, 4, 2, true);
  CHECK(C[5] == 5);

  // An empty batch, or M = 0: nothing is written.
  float D[2] = {7, 7};
  gemm_batched(false, false, 0, 1, 2, 3, nothing, at, 3, nothing, at, 2, D, 2, 2, false);
  gemm_batched(false, false, 1, 0, 2, 3, nothing, at, 3, nothing, at, 2, D, 2, 2, false);
  CHECK(D[0] == 7);
  CHECK(D[1] == 7);
}

// gemm_rows is the scalar build's gemm: the reference's sums in a row-wise
// order, in 4 × 8 tiles with rows of running sums at the edges, so the same
// floats exactly (each C[i, j] sums the same products in the same k order
// from 0). The sizes make whole tiles, edges of rows and of columns, and none.
TEST_CASE("kernels/gemm_rows: gemm_reference's floats bit for bit") {
  uint32_t seed = 7;
  for (bool trans_a : {false, true})
    for (bool trans_b : {false, true})
      for (bool accumulate : {false, true})
        for (const std::array<int64_t, 3>& size : {std::array<int64_t, 3>{1, 1, 1},
                                                   {3, 5, 7},
                                                   {17, 33, 9},
                                                   {8, 1, 40},
                                                   {2, 64, 3},
                                                   {4, 8, 5},
                                                   {9, 21, 11}}) {
          const int64_t M = size[0], N = size[1], K = size[2];
          CAPTURE(trans_a);
          CAPTURE(trans_b);
          CAPTURE(accumulate);
          CAPTURE(M);
          CAPTURE(N);
          CAPTURE(K);
          const int64_t lda = (trans_a ? M : K) + 2, ldb = (trans_b ? K : N) + 3, ldc = N + 1;
          const std::vector<float> A = random_vector(static_cast<size_t>((trans_a ? K : M) * lda), ++seed);
          const std::vector<float> B = random_vector(static_cast<size_t>((trans_b ? N : K) * ldb), ++seed);
          std::vector<float> expected = random_vector(static_cast<size_t>(M * ldc), ++seed), got = expected;
          gemm_reference(trans_a, trans_b, M, N, K, A.data(), lda, B.data(), ldb, expected.data(), ldc, accumulate);
          gemm_rows(trans_a, trans_b, M, N, K, A.data(), lda, B.data(), ldb, got.data(), ldc, accumulate);
          CHECK(std::memcmp(expected.data(), got.data(), expected.size() * sizeof(float)) == 0);
        }
}
