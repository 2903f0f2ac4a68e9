// The optimizers' updates (optim.hpp), in the two sections every kernel file
// has (simd.hpp): the reference, a scalar function of one element, which the
// reference loop and the SIMD loop's tail both call; and the SIMD kernels,
// the same formula written once more for a batch of W elements.
#include "kernels/optim.hpp"

#include <cmath>
#include <vector>

#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: one element at a time ===============================================

namespace {

// ---- Adam ------------------------------------------------------------------------

// One element. The order of every operation is the SIMD body's below.
inline void adam_one(const AdamStep& s, float& p, float g, float& m, float& v) {
  float w = p;
  if (s.decay != 1) w = w * s.decay;
  if (s.l2 != 0) g = madd(s.l2, w, g);
  m = madd(s.beta1, m, (1 - s.beta1) * g);
  v = madd(s.beta2, v, ((1 - s.beta2) * g) * g);
  const float denom = std::sqrt(v) / s.bias_correction2_sqrt + s.eps;
  p = madd(-s.step_size, m / denom, w);
}

// ---- SGD -------------------------------------------------------------------------

inline void sgd_one(const SgdStep& s, float& p, float g, float* b) {
  float d = g;
  if (s.weight_decay != 0) d = madd(s.weight_decay, p, d);
  if (b != nullptr) {
    *b = s.first ? d : madd(s.momentum, *b, (1 - s.dampening) * d);
    d = s.nesterov ? madd(s.momentum, *b, d) : *b;
  }
  p = madd(-s.lr, d, p);
}

}  // namespace

void adam_reference(const AdamStep& s, int64_t n, float* p, const float* g, float* m, float* v) {
  for (int64_t i = 0; i < n; ++i) adam_one(s, p[i], g[i], m[i], v[i]);
}

void sgd_reference(const SgdStep& s, int64_t n, float* p, const float* g, float* buf) {
  for (int64_t i = 0; i < n; ++i) sgd_one(s, p[i], g[i], buf != nullptr ? buf + i : nullptr);
}

// ---- sum of squares, scale -----------------------------------------------------------

namespace {

// NOTE: a sum on the threads must not depend on how many there are. An
// array of at least two pieces is cut into pieces of SQUARES_PIECE floats,
// a size fixed here, not by the thread count (the last piece takes the
// rest); each piece is an ordered_sum (simd.hpp), and the pieces' sums are
// added left to right. On 1 thread or 4, in the SIMD kernel or this
// reference: the same sums in the same order. (A float's square is exact in
// double, so fused or not, each term is the same.)
constexpr int64_t SQUARES_PIECE = 1 << 16;

double piece_squares_reference(int64_t n, const float* x) {
  return ordered_sum<double>(n, [&](double s, int64_t i) { return madd(double{x[i]}, double{x[i]}, s); });
}

}  // namespace

double sum_squares_reference(int64_t n, const float* x) {
  if (n < 2 * SQUARES_PIECE) return piece_squares_reference(n, x);
  double sum = 0;
  const int64_t pieces = n / SQUARES_PIECE;
  for (int64_t p = 0; p < pieces; ++p) {
    const int64_t begin = p * SQUARES_PIECE, end = p + 1 == pieces ? n : begin + SQUARES_PIECE;
    sum += piece_squares_reference(end - begin, x + begin);
  }
  return sum;
}

void scale_reference(int64_t n, float c, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] *= c;
}

// ==== SIMD: W elements at a time =====================================================
#if QKV_SIMD

namespace {

// ---- threads ---------------------------------------------------------------------
//
// A long parameter is cut into pieces, one task each (parallel.hpp). Each
// update computes every element alone, and the SIMD body and the scalar
// tail compute the same float (madd and fmadd, divide and /: simd.hpp), so
// any cut gives the same result.
// Floats a task should take, at least: about 10 µs of work, what waking a
// thread costs. Adam reads four arrays and writes three, with a square root
// and a division: a quarter of a plain add's 64K.
constexpr int64_t GRAIN_ADAM = 1 << 14;
constexpr int64_t GRAIN_SGD = 1 << 15;
constexpr int64_t GRAIN_SCALE = 1 << 16;  // one multiply: a plain add's grain

}  // namespace

// ---- Adam ------------------------------------------------------------------------

namespace {

void adam_simd(const AdamStep& s, int64_t n, float* p, const float* g, float* m, float* v) {
  const batch beta1(s.beta1), beta2(s.beta2), c1(1 - s.beta1), c2(1 - s.beta2), decay(s.decay), l2(s.l2);
  const batch neg_step(-s.step_size), bc2(s.bias_correction2_sqrt), eps(s.eps);
  const bool decays = s.decay != 1, couples = s.l2 != 0;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    batch w = batch::load_unaligned(p + i), gi = batch::load_unaligned(g + i);
    if (decays) w = w * decay;
    if (couples) gi = fmadd(l2, w, gi);
    const batch mi = fmadd(beta1, batch::load_unaligned(m + i), c1 * gi);
    const batch vi = fmadd(beta2, batch::load_unaligned(v + i), (c2 * gi) * gi);
    const batch denom = divide(square_root(vi), bc2) + eps;
    mi.store_unaligned(m + i);
    vi.store_unaligned(v + i);
    fmadd(neg_step, divide(mi, denom), w).store_unaligned(p + i);
  }
  for (; i < n; ++i) adam_one(s, p[i], g[i], m[i], v[i]);
}

}  // namespace

void adam(const AdamStep& s, int64_t n, float* p, const float* g, float* m, float* v) {
  parallel_ranges(n, GRAIN_ADAM, W, [&](int64_t b, int64_t e) { adam_simd(s, e - b, p + b, g + b, m + b, v + b); });
}

// ---- SGD -------------------------------------------------------------------------

namespace {

void sgd_simd(const SgdStep& s, int64_t n, float* p, const float* g, float* buf) {
  const batch wd(s.weight_decay), mu(s.momentum), damp(1 - s.dampening), neg_lr(-s.lr);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const batch w = batch::load_unaligned(p + i);
    batch d = batch::load_unaligned(g + i);
    if (s.weight_decay != 0) d = fmadd(wd, w, d);
    if (buf != nullptr) {
      const batch b = s.first ? d : fmadd(mu, batch::load_unaligned(buf + i), damp * d);
      b.store_unaligned(buf + i);
      d = s.nesterov ? fmadd(mu, b, d) : b;
    }
    fmadd(neg_lr, d, w).store_unaligned(p + i);
  }
  for (; i < n; ++i) sgd_one(s, p[i], g[i], buf != nullptr ? buf + i : nullptr);
}

}  // namespace

void sgd(const SgdStep& s, int64_t n, float* p, const float* g, float* buf) {
  parallel_ranges(n, GRAIN_SGD, W,
                  [&](int64_t b, int64_t e) { sgd_simd(s, e - b, p + b, g + b, buf != nullptr ? buf + b : nullptr); });
}

// ---- sum of squares ---------------------------------------------------------------

namespace {

// Doubles, as the reference: each load widens W/2 floats (a double batch is
// half as wide), the 16 running sums in 32 / W registers.
double sum_squares_simd(int64_t n, const float* x) {
  using dbatch = xsimd::batch<double>;
  return ordered_sum_simd<dbatch>(
      n,
      [&](dbatch acc, int64_t i) {
        const dbatch a = dbatch::load_unaligned(x + i);
        return fmadd(a, a, acc);
      },
      [&](double s, int64_t i) { return madd(double{x[i]}, double{x[i]}, s); });
}

}  // namespace

double sum_squares(int64_t n, const float* x) {
  if (n < 2 * SQUARES_PIECE) return sum_squares_simd(n, x);
  const int64_t pieces = n / SQUARES_PIECE;
  std::vector<double> sums(static_cast<size_t>(pieces));
  parallel_for(pieces, [&](int64_t p) {
    const int64_t begin = p * SQUARES_PIECE, end = p + 1 == pieces ? n : begin + SQUARES_PIECE;
    sums[static_cast<size_t>(p)] = sum_squares_simd(end - begin, x + begin);
  });
  double sum = 0;
  for (double piece : sums) sum += piece;
  return sum;
}

// ---- scale ----------------------------------------------------------------------

namespace {

void scale_simd(int64_t n, float c, float* x) {
  const batch vc(c);
  int64_t i = 0;
  for (; i + W <= n; i += W) (batch::load_unaligned(x + i) * vc).store_unaligned(x + i);
  for (; i < n; ++i) x[i] *= c;
}

}  // namespace

void scale(int64_t n, float c, float* x) {
  parallel_ranges(n, GRAIN_SCALE, W, [&](int64_t b, int64_t e) { scale_simd(e - b, c, x + b); });
}

#else  // the scalar build: each kernel is its reference

void adam(const AdamStep& s, int64_t n, float* p, const float* g, float* m, float* v) {
  adam_reference(s, n, p, g, m, v);
}
void sgd(const SgdStep& s, int64_t n, float* p, const float* g, float* buf) { sgd_reference(s, n, p, g, buf); }
double sum_squares(int64_t n, const float* x) { return sum_squares_reference(n, x); }
void scale(int64_t n, float c, float* x) { scale_reference(n, c, x); }

#endif  // QKV_SIMD

}  // namespace qkv::kernels
