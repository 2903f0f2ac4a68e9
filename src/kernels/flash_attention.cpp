// Fused scaled dot-product attention with an online softmax (see
// flash_attention.hpp for the math, the masks and the loop order).
//
// The file has two sections. The reference, always compiled: plain loops,
// one query row at a time, in the SIMD kernels' order: the keys in tiles of
// FLASH_BC with the online softmax's rescaling, every dot product and every
// accumulation k in order with madd, every row sum an ordered_sum, exp and
// log qkv's own (math.hpp). The two agree bit for bit. The SIMD kernels, in one block at the end under
// #if QKV_SIMD (simd.hpp's convention): tiles of BR queries × BC keys, whose six
// products (q·kᵀ, p·v, pᵀ·dout, dout·vᵀ, dsᵀ·q, ds·k) all run on one small
// register-blocked product, tile_product. Without that block (the scalar
// build) the public kernels are the reference.
#include "kernels/flash_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/math.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"

namespace qkv::kernels {

// ==== reference: one query row at a time ===================================================

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The keys row q of head n sees are [0, end); end = 0: it sees none.
int64_t row_end(const AttentionSizes& s, int64_t n, int64_t q) {
  int64_t end = s.K;
  if (s.lens != nullptr) end = std::min(end, std::max<int64_t>(s.lens[n * s.Q + q], 0));
  if (s.causal) end = std::min(end, q + 1);
  return end;
}

// Row q's K scores, scale · q·k, masked: -inf past end (weight exp(-inf) = 0).
// A row that sees no key gets all scores 0: uniform weights 1/K, as d2l's
// -1e6 everywhere gives, with lse = log K rather than -1e6 + log K, which
// would round log K away.
void row_scores(const AttentionSizes& s, const float* qr, const float* kn, int64_t end, float* scores) {
  for (int64_t j = 0; j < s.K; ++j) {
    if (end == 0 || j >= end) {
      scores[j] = end == 0 ? 0.0f : -kInf;
      continue;
    }
    float dot = 0.0f;
    for (int64_t c = 0; c < s.d; ++c) dot = madd(qr[c], kn[j * s.d + c], dot);
    scores[j] = dot * s.scale;
  }
}

// ---- dropout's mask: a hash, so that the backward can draw it again ----------------------

// A 32-bit mixing function (lowbias32, by Chris Wellons): every input bit
// moves about half the output bits.
uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x21f0aaadU;
  x ^= x >> 15;
  x *= 0x735a2d97U;
  x ^= x >> 15;
  return x;
}

// One row's part of the hash, computed once per row; a key adds its own.
uint32_t row_hash(uint64_t seed, int64_t row) {
  const auto r = static_cast<uint64_t>(row);
  const uint32_t high = mix32(static_cast<uint32_t>(seed >> 32) + static_cast<uint32_t>(r >> 32));
  return mix32(static_cast<uint32_t>(seed) ^ mix32(static_cast<uint32_t>(r) ^ high));
}

uint32_t key_hash(uint32_t row, int64_t key) { return mix32(row + static_cast<uint32_t>(key) * 0x9e3779b9U); }

// The hashes below which a weight is dropped: p·2³².
uint32_t drop_below(float p) { return static_cast<uint32_t>(std::min(static_cast<double>(p), 1.0) * 4294967295.0); }

// x[j·stride] for keys j0 … j0 + cols - 1 of `row`: kept and scaled by
// 1/(1 - p), or 0.
void apply_dropout(const AttentionSizes& s, int64_t row, int64_t j0, int64_t cols, float* x, int64_t stride = 1) {
  const uint32_t h = row_hash(s.seed, row), below = drop_below(s.dropout);
  const float keep_scale = 1.0f / (1.0f - s.dropout);
  for (int64_t j = 0; j < cols; ++j) x[j * stride] = key_hash(h, j0 + j) >= below ? x[j * stride] * keep_scale : 0.0f;
}

}  // namespace

bool dropout_keeps(uint64_t seed, int64_t row, int64_t key, float p) {
  return key_hash(row_hash(seed, row), key) >= drop_below(p);
}

// ---- reference: one query row at a time -------------------------------------------------

// Each row meets its keys a tile of FLASH_BC at a time (flash_attention.hpp's
// online softmax), as the SIMD kernel does.
void flash_attention_reference(const AttentionSizes& s, const float* q, const float* k, const float* v, float* out,
                               float* lse) {
  std::vector<float> p(static_cast<size_t>(s.K));  // (K): one row's scores, then its weights
  for (int64_t n = 0; n < s.N; ++n) {
    const float* kn = k + n * s.K * s.d;   // (K, d)
    const float* vn = v + n * s.K * s.dv;  // (K, dv)
    for (int64_t i = 0; i < s.Q; ++i) {
      const int64_t row = n * s.Q + i;
      row_scores(s, q + row * s.d, kn, row_end(s, n, i), p.data());
      float* o = out + row * s.dv;  // (dv): Σ exp(s - m) · v, then the output
      for (int64_t c = 0; c < s.dv; ++c) o[c] = 0.0f;
      float m = -kInf, l = 0.0f;
      for (int64_t j0 = 0; j0 < s.K; j0 += FLASH_BC) {
        const int64_t cols = std::min(FLASH_BC, s.K - j0);
        float* pt = p.data() + j0;  // the tile's scores, then exp(s - m')
        float m_new = m;
        for (int64_t j = 0; j < cols; ++j) m_new = std::max(m_new, pt[j]);
        const float rescale = math::exp(m - m_new);  // exp(-inf) = 0 on the first tile
        const float tile_sum = ordered_sum<float>(cols, [&](float sum, int64_t j) {
          pt[j] = math::exp(pt[j] - m_new);  // every term ≤ 1
          return sum + pt[j];
        });
        l = l * rescale + tile_sum;  // the undropped sum
        m = m_new;
        if (s.dropout > 0.0f) apply_dropout(s, row, j0, cols, pt);
        if (rescale != 1.0f)
          for (int64_t c = 0; c < s.dv; ++c) o[c] *= rescale;
        for (int64_t j = 0; j < cols; ++j)
          for (int64_t c = 0; c < s.dv; ++c) o[c] = madd(pt[j], vn[(j0 + j) * s.dv + c], o[c]);
      }
      for (int64_t c = 0; c < s.dv; ++c) o[c] /= l;
      lse[row] = m + math::log(l);
    }
  }
}

void flash_attention_backward_reference(const AttentionSizes& s, const float* q, const float* k, const float* v,
                                        const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                        float* dv) {
  std::fill(dq, dq + s.N * s.Q * s.d, 0.0f);
  std::fill(dk, dk + s.N * s.K * s.d, 0.0f);
  std::fill(dv, dv + s.N * s.K * s.dv, 0.0f);
  std::vector<float> p(static_cast<size_t>(s.K));  // (K): one row's scores, then its weights
  for (int64_t n = 0; n < s.N; ++n) {
    const float* kn = k + n * s.K * s.d;
    const float* vn = v + n * s.K * s.dv;
    for (int64_t i = 0; i < s.Q; ++i) {
      const int64_t row = n * s.Q + i, end = row_end(s, n, i);
      const float* qr = q + row * s.d;
      const float* o = out + row * s.dv;
      const float* dor = dout + row * s.dv;
      row_scores(s, qr, kn, end, p.data());
      // Σ dout ⊙ out = Σₖ p·dp
      const float D = ordered_sum<float>(s.dv, [&](float sum, int64_t c) { return madd(dor[c], o[c], sum); });
      // Dropout's factor of each key: 1/(1 - p) or 0 (1 without dropout).
      std::vector<float> kept(static_cast<size_t>(s.K), 1.0f);
      if (s.dropout > 0.0f) apply_dropout(s, row, 0, s.K, kept.data());
      for (int64_t j = 0; j < s.K; ++j) {
        const float pj = math::exp(p[static_cast<size_t>(j)] - lse[row]), keep = kept[static_cast<size_t>(j)];
        float* dvj = dv + (n * s.K + j) * s.dv;
        for (int64_t c = 0; c < s.dv; ++c) dvj[c] = madd(pj * keep, dor[c], dvj[c]);
        if (j >= end) continue;  // a masked key: its score was replaced, so it passes no gradient on
        float dp = 0.0f;
        for (int64_t c = 0; c < s.dv; ++c) dp = madd(dor[c], vn[j * s.dv + c], dp);
        const float ds = s.scale * pj * (dp * keep - D);
        float* dqr = dq + row * s.d;
        float* dkj = dk + (n * s.K + j) * s.d;
        for (int64_t c = 0; c < s.d; ++c) {
          dqr[c] = madd(ds, kn[j * s.d + c], dqr[c]);
          dkj[c] = madd(ds, qr[c], dkj[c]);
        }
      }
    }
  }
}

// ==== SIMD: tiles of BR queries × BC keys ===================================================
#if QKV_SIMD

namespace {

constexpr int64_t BR = FLASH_BR, BC = FLASH_BC;

// C (rows × cols, row stride ldc) = or += A · B over `depth`, with
// A(r, t) = a[r·ars + t·aks] (so Aᵀ is read by swapping the strides) and B
// row-major (depth × cols, row stride ldb). R rows of C at a time, NB
// registers of a row: R·NB accumulators, each step loading NB of B's row and
// broadcasting R values of A.
template <int R, int NB>
void product_block(int64_t depth, const float* a, int64_t ars, int64_t aks, const float* b, int64_t ldb, float* c,
                   int64_t ldc, bool accumulate) {
  batch acc[R][NB];
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < NB; ++x) acc[r][x] = accumulate ? batch::load_unaligned(c + r * ldc + x * W) : batch(0.0f);
  for (int64_t t = 0; t < depth; ++t) {
    batch bt[NB];
    for (int x = 0; x < NB; ++x) bt[x] = batch::load_unaligned(b + t * ldb + x * W);
    for (int r = 0; r < R; ++r) {
      const batch ar(a[r * ars + t * aks]);
      for (int x = 0; x < NB; ++x) acc[r][x] = fmadd(ar, bt[x], acc[r][x]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int x = 0; x < NB; ++x) acc[r][x].store_unaligned(c + r * ldc + x * W);
}

// The register block: 6 rows × NV registers. With AVX-512's 32 registers,
// 6 × 4 (24 accumulators, 4 of B, 1 broadcast: d = 64 in one block); with
// AVX2's 16, 6 × 2, as GEMM's tile (gemm_tile.hpp).
//
// NOTE: not kernels::gemm, whose micro-kernel this resembles (and which
// reads products this small in place too): called through gemm, the
// attention at T = 1024 ran 3–8 % slower, and in the default build gemm
// sums a few edge columns in an order of its own, where this keeps the
// reference's (each sum k in order) in every build (docs/kernel_notes.md).
constexpr int ROWS = 6, NV = W >= 16 ? 4 : 2;

// R rows of C across all its columns: NV registers at a time, then 1, then
// the last cols mod W one by one.
template <int R>
void product_rows(int64_t cols, int64_t depth, const float* a, int64_t ars, int64_t aks, const float* b, int64_t ldb,
                  float* c, int64_t ldc, bool accumulate) {
  int64_t j = 0;
  for (; j + NV * W <= cols; j += NV * W) product_block<R, NV>(depth, a, ars, aks, b + j, ldb, c + j, ldc, accumulate);
  for (; j + W <= cols; j += W) product_block<R, 1>(depth, a, ars, aks, b + j, ldb, c + j, ldc, accumulate);
  for (; j < cols; ++j)
    for (int r = 0; r < R; ++r) {
      float sum = accumulate ? c[r * ldc + j] : 0.0f;
      for (int64_t t = 0; t < depth; ++t) sum = madd(a[r * ars + t * aks], b[t * ldb + j], sum);
      c[r * ldc + j] = sum;
    }
}

void tile_product(int64_t rows, int64_t cols, int64_t depth, const float* a, int64_t ars, int64_t aks, const float* b,
                  int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  int64_t r = 0;
  for (; r + ROWS <= rows; r += ROWS)
    product_rows<ROWS>(cols, depth, a + r * ars, ars, aks, b, ldb, c + r * ldc, ldc, accumulate);
  switch (rows - r) {
    case 5:
      product_rows<5>(cols, depth, a + r * ars, ars, aks, b, ldb, c + r * ldc, ldc, accumulate);
      break;
    case 4:
      product_rows<4>(cols, depth, a + r * ars, ars, aks, b, ldb, c + r * ldc, ldc, accumulate);
      break;
    case 3:
      product_rows<3>(cols, depth, a + r * ars, ars, aks, b, ldb, c + r * ldc, ldc, accumulate);
      break;
    case 2:
      product_rows<2>(cols, depth, a + r * ars, ars, aks, b, ldb, c + r * ldc, ldc, accumulate);
      break;
    case 1:
      product_rows<1>(cols, depth, a + r * ars, ars, aks, b, ldb, c + r * ldc, ldc, accumulate);
      break;
    default:
      break;
  }
}

// xt (cols × ldt) = x (rows × cols, row stride ldx)ᵀ, its columns past
// `rows` zero: a tile of queries, keys or values turned so that a product
// can read it along rows.
void transpose_tile(int64_t rows, int64_t cols, const float* x, int64_t ldx, float* xt, int64_t ldt) {
  std::fill(xt, xt + cols * ldt, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) xt[c * ldt + r] = x[r * ldx + c];
}

// The farthest key any row of queries [i0, i1) sees: the tiles of keys at or
// past it are skipped. A row that sees none sees all K (uniform weights).
int64_t tile_key_end(const AttentionSizes& s, int64_t n, int64_t i0, int64_t i1) {
  int64_t end = 0;
  for (int64_t i = i0; i < i1; ++i) {
    const int64_t e = row_end(s, n, i);
    end = std::max(end, e == 0 ? s.K : e);
  }
  return end;
}

// One tile of queries of head n: the online softmax over the key tiles.
//
// The tile's scores are held turned, st (BC keys × BR queries), so that a
// register holds W queries' scores for one key: each query's maximum and
// sum over the keys are then taken register by register, lane by lane,
// with no step across a register's lanes, and the 16 running sums of the
// row's ordered_sum (term j into sum j mod 16, then fold_sums) are 16
// registers, folded alike. The floats are the reference's.
void forward_tile(const AttentionSizes& s, int64_t n, int64_t i0, const float* q, const float* k, const float* v,
                  float* out, float* lse) {
  static_assert(BR % W == 0 && BC % SUM_LANES == 0);
  const int64_t rows = std::min(BR, s.Q - i0), d = s.d, dv = s.dv;
  const float* kn = k + n * s.K * d;                      // (K, d)
  const float* vn = v + n * s.K * dv;                     // (K, dv)
  aligned_floats qt(static_cast<size_t>(d * BR));         // (d, BR): the query tile turned
  aligned_floats st(static_cast<size_t>(BC * BR));        // (BC, BR): scores, then exp(s - m)
  aligned_floats ot(static_cast<size_t>(dv * BR), 0.0f);  // (dv, BR): Σ exp(s - m) · v, turned
  // Each query's running maximum and sum, the last tile's rescaling, and
  // the mask: key j of the tile is masked for query r when j ≥ seen[r]
  // (a float, to compare in registers), its score then `fill` (-inf; 0
  // for a query that sees no key). The lanes past `rows` see every key.
  alignas(64) float m[BR], l[BR], rescale[BR], seen[BR], fill[BR];
  int64_t end[BR];
  bool masked = false;  // whether any query of the tile sees fewer than K keys
  for (int64_t r = 0; r < BR; ++r) {
    m[r] = -kInf;
    l[r] = 0.0f;
    seen[r] = static_cast<float>(BC);
    end[r] = r < rows ? row_end(s, n, i0 + r) : s.K;
    fill[r] = end[r] == 0 ? 0.0f : -kInf;
    masked = masked || end[r] < s.K;
  }
  transpose_tile(rows, d, q + (n * s.Q + i0) * d, d, qt.data(), BR);
  const int64_t key_end = tile_key_end(s, n, i0, i0 + rows);
  for (int64_t j0 = 0; j0 < key_end; j0 += BC) {
    const int64_t cols = std::min(BC, s.K - j0);
    tile_product(cols, BR, d, kn + j0 * d, d, 1, qt.data(), BR, st.data(), BR, false);  // (cols, d) x (d, BR)
    for (int64_t j = cols; j < BC; ++j) std::fill_n(st.data() + j * BR, BR, -kInf);     // keys past K: weight 0
    if (masked)
      for (int64_t r = 0; r < BR; ++r) seen[r] = static_cast<float>(std::clamp<int64_t>(end[r] - j0, 0, BC));
    // Scale and mask, and each query's maximum: m' = max(m, the tile's), a
    // key's row of st at a time, so that the BR / W registers of maxima are
    // independent chains of max.
    batch m_tile[BR / W];
    for (int64_t g = 0; g < BR; g += W) m_tile[g / W] = batch::load_aligned(m + g);
    const batch vscale(s.scale);
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t g = 0; g < BR; g += W) {
        float* x = st.data() + j * BR + g;
        batch sj = batch::load_aligned(x) * vscale;
        if (masked)
          sj = xsimd::select(batch(static_cast<float>(j)) >= batch::load_aligned(seen + g),
                             batch::load_aligned(fill + g), sj);
        sj.store_aligned(x);
        m_tile[g / W] = xsimd::max(m_tile[g / W], sj);
      }
    for (int64_t g = 0; g < BR; g += W) {  // W queries at a time
      const batch m_new = m_tile[g / W];
      // What was summed so far is rescaled by exp(m - m') (exp(-inf) = 0 on
      // the first tile); the scores become exp(s - m'), summed in order.
      // Both are exps of at most 0, which cannot overflow.
      const batch vrescale = math::exp_below_overflow(batch::load_aligned(m + g) - m_new);
      batch sums[SUM_LANES];
      for (batch& sum : sums) sum = batch(0.0f);
      for (int64_t j = 0; j < BC; j += SUM_LANES)
        for (int64_t t = 0; t < SUM_LANES; ++t) {
          float* x = st.data() + (j + t) * BR + g;
          const batch e = math::exp_below_overflow(batch::load_aligned(x) - m_new);
          e.store_aligned(x);
          sums[t] = sums[t] + e;
        }
      for (int64_t half = SUM_LANES / 2; half >= 1; half /= 2)  // fold_sums, register by register
        for (int64_t t = 0; t < half; ++t) sums[t] = sums[t] + sums[t + half];
      (batch::load_aligned(l + g) * vrescale + sums[0]).store_aligned(l + g);  // the undropped sum
      m_new.store_aligned(m + g);
      vrescale.store_aligned(rescale + g);
    }
    if (s.dropout > 0.0f)
      for (int64_t r = 0; r < rows; ++r) apply_dropout(s, n * s.Q + i0 + r, j0, cols, st.data() + r, BR);
    // oᵀ ← oᵀ · exp(m - m') column by column (× 1 where the maximum stayed), then
    // oᵀ += vᵀ · st: (dv, cols) x (cols, BR), each sum over the keys in order.
    for (int64_t c = 0; c < dv; ++c)
      for (int64_t g = 0; g < BR; g += W) {
        float* x = ot.data() + c * BR + g;
        (batch::load_aligned(x) * batch::load_aligned(rescale + g)).store_aligned(x);
      }
    tile_product(dv, BR, cols, vn + j0 * dv, 1, dv, st.data(), BR, ot.data(), BR, true);
  }
  // o = oᵀ / l, W queries at a time, turned back into out's rows.
  for (int64_t c = 0; c < dv; ++c)
    for (int64_t g = 0; g < BR; g += W) {
      float* x = ot.data() + c * BR + g;
      divide(batch::load_aligned(x), batch::load_aligned(l + g)).store_aligned(x);
    }
  transpose_tile(dv, rows, ot.data(), BR, out + (n * s.Q + i0) * dv, dv);
  for (int64_t r = 0; r < rows; ++r) lse[n * s.Q + i0 + r] = m[r] + math::log(l[r]);
}

// One key tile [j0, j0 + cols) of head n meets every query tile that sees
// it: dk and dv of the tile in full, dq of every query row added to.
void backward_key_tile(const AttentionSizes& s, int64_t n, int64_t j0, const float* q, const float* k, const float* v,
                       const float* lse, const float* dout, const float* D,  // D: (Q), head n's
                       const int64_t* query_tile_end, float* dq, float* dk, float* dv, float* work) {
  const int64_t cols = std::min(BC, s.K - j0), d = s.d, dvs = s.dv;
  const float* kj = k + (n * s.K + j0) * d;    // (cols, d)
  const float* vj = v + (n * s.K + j0) * dvs;  // (cols, dv)
  float* kt = work;                            // (d, BC): the key tile, transposed
  float* vt = kt + d * BC;                     // (dv, BC): the value tile, transposed
  float* p = vt + dvs * BC;                    // (BR, BC): scores, then weights
  float* ds = p + BR * BC;                     // (BR, BC): dp, then ds
  float* pd = ds + BR * BC;                    // (BR, BC): the weights after dropout
  float* dkj = pd + BR * BC;                   // (BC, d)
  float* dvj = dkj + BC * d;                   // (BC, dv)
  transpose_tile(cols, d, kj, d, kt, BC);
  transpose_tile(cols, dvs, vj, dvs, vt, BC);
  std::fill(dkj, dkj + BC * d, 0.0f);
  std::fill(dvj, dvj + BC * dvs, 0.0f);
  for (int64_t i0 = 0, t = 0; i0 < s.Q; i0 += BR, ++t) {
    if (query_tile_end[t] <= j0) continue;  // no row of this tile sees these keys
    const int64_t rows = std::min(BR, s.Q - i0), row0 = n * s.Q + i0;
    const float* qi = q + row0 * d;        // (rows, d)
    const float* doi = dout + row0 * dvs;  // (rows, dv)
    // The scores, recomputed: (rows, d) x (d, cols)
    tile_product(rows, cols, d, qi, d, 1, kt, BC, p, BC, false);
    // p = exp(scale·s - lse), an exp of at most 0: lse = m + log l ≥ m, the
    // row's largest scale·s, since l ≥ 1. A masked key, and each column past
    // cols, gets weight 0 (exp(-inf)); a row that sees no key has scores 0
    // (row_scores), so weights exp(-lse).
    // Row r's keys from the tile's column first_masked[r] on pass no
    // gradient (a row that sees none: all of them).
    int64_t first_masked[BR];
    const batch vscale(s.scale);
    for (int64_t r = 0; r < rows; ++r) {
      float* pr = p + r * BC;
      const int64_t end = row_end(s, n, i0 + r);
      const batch vl(lse[row0 + r]);
      for (int64_t j = 0; j < BC; j += W)
        math::exp_below_overflow(batch::load_unaligned(pr + j) * vscale - vl).store_unaligned(pr + j);
      first_masked[r] = end == 0 ? 0 : std::clamp<int64_t>(end - j0, 0, cols);
      const float fill = end == 0 ? math::exp_below_overflow(0.0f - lse[row0 + r]) : 0.0f;
      std::fill(pr + first_masked[r], pr + cols, fill);
      std::fill(pr + cols, pr + BC, 0.0f);
    }
    // The weights as the forward used them: dropped(p) (p itself without dropout).
    const float* pdrop = p;
    if (s.dropout > 0.0f) {
      std::copy(p, p + rows * BC, pd);
      for (int64_t r = 0; r < rows; ++r) apply_dropout(s, row0 + r, j0, cols, pd + r * BC);
      pdrop = pd;
    }
    // dv_j += dropped(p)ᵀ · dout_i: (cols, rows) x (rows, dv)
    tile_product(cols, dvs, rows, pdrop, 1, BC, doi, dvs, dvj, dvs, true);
    // dp = dout_i · v_jᵀ: (rows, dv) x (dv, cols)
    tile_product(rows, cols, dvs, doi, dvs, 1, vt, BC, ds, BC, false);
    // ds = scale · p ⊙ (dropped(dp) - D), 0 on the masked keys
    for (int64_t r = 0; r < rows; ++r) {
      float* dsr = ds + r * BC;
      const float* pr = p + r * BC;
      if (s.dropout > 0.0f) apply_dropout(s, row0 + r, j0, cols, dsr);
      const batch vD(D[i0 + r]);
      for (int64_t j = 0; j < BC; j += W)
        (vscale * batch::load_unaligned(pr + j) * (batch::load_unaligned(dsr + j) - vD)).store_unaligned(dsr + j);
      std::fill(dsr + first_masked[r], dsr + cols, 0.0f);
    }
    // dk_j += dsᵀ · q_i: (cols, rows) x (rows, d);  dq_i += ds · k_j: (rows, cols) x (cols, d)
    tile_product(cols, d, rows, ds, 1, BC, qi, d, dkj, d, true);
    tile_product(rows, d, cols, ds, BC, 1, kj, d, dq + row0 * d, d, true);
  }
  std::copy(dkj, dkj + cols * d, dk + (n * s.K + j0) * d);
  std::copy(dvj, dvj + cols * dvs, dv + (n * s.K + j0) * dvs);
}

}  // namespace

void flash_attention(const AttentionSizes& s, const float* q, const float* k, const float* v, float* out, float* lse) {
  const int64_t tiles = (s.Q + BR - 1) / BR;
  parallel_for(s.N * tiles, [&](int64_t t) { forward_tile(s, t / tiles, t % tiles * BR, q, k, v, out, lse); });
}

void flash_attention_backward(const AttentionSizes& s, const float* q, const float* k, const float* v, const float* out,
                              const float* lse, const float* dout, float* dq, float* dk, float* dv) {
  const int64_t query_tiles = (s.Q + BR - 1) / BR;
  parallel_for(s.N, [&](int64_t n) {
    // D[i] = Σ dout[i] ⊙ out[i], and the farthest key each query tile sees.
    std::vector<float> D(static_cast<size_t>(s.Q));
    std::vector<int64_t> query_tile_end(static_cast<size_t>(query_tiles));
    for (int64_t i = 0; i < s.Q; ++i) {
      const float* o = out + (n * s.Q + i) * s.dv;
      const float* dor = dout + (n * s.Q + i) * s.dv;
      D[static_cast<size_t>(i)] = ordered_sum_simd<batch>(
          s.dv,
          [&](batch acc, int64_t c) {
            return fmadd(batch::load_unaligned(dor + c), batch::load_unaligned(o + c), acc);
          },
          [&](float sum, int64_t c) { return madd(dor[c], o[c], sum); });
    }
    for (int64_t t = 0; t < query_tiles; ++t)
      query_tile_end[static_cast<size_t>(t)] = tile_key_end(s, n, t * BR, std::min(s.Q, (t + 1) * BR));
    std::fill(dq + n * s.Q * s.d, dq + (n + 1) * s.Q * s.d, 0.0f);
    aligned_floats work(static_cast<size_t>((s.d + s.dv) * BC + 3 * BR * BC + BC * (s.d + s.dv)));
    for (int64_t j0 = 0; j0 < s.K; j0 += BC)
      backward_key_tile(s, n, j0, q, k, v, lse, dout, D.data(), query_tile_end.data(), dq, dk, dv, work.data());
  });
}

#else  // the scalar build: each public kernel is its reference

void flash_attention(const AttentionSizes& s, const float* q, const float* k, const float* v, float* out, float* lse) {
  flash_attention_reference(s, q, k, v, out, lse);
}

void flash_attention_backward(const AttentionSizes& s, const float* q, const float* k, const float* v, const float* out,
                              const float* lse, const float* dout, float* dq, float* dk, float* dv) {
  flash_attention_backward_reference(s, q, k, v, out, lse, dout, dq, dk, dv);
}
#endif

}  // namespace qkv::kernels
