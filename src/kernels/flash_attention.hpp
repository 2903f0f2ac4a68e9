// Fused scaled dot-product attention with an online softmax: the output of
// attention without ever holding the (Q, K) weights of a head, forward or
// backward, so memory grows with T, not T².
//
// For N independent heads (B·h), queries q (N, Q, d), keys k (N, K, d) and
// values v (N, K, dv):
//   s[q, k]   = scale · q·k                              (the scores)
//   p[q, ·]   = softmax(s[q, ·])                         (the weights, never stored)
//   out[q]    = Σₖ p[q, k] · v[k]                        (N, Q, dv)
//   lse[q]    = log Σₖ exp(s[q, k])                      (N, Q): all the backward needs
//
// The online softmax (FlashAttention): a query row meets its keys a tile at a
// time, keeping its running maximum m, its running sum l = Σ exp(s - m) and
// its unnormalised output o = Σ exp(s - m) · v. When a tile raises the
// maximum to m', what was summed is rescaled by exp(m - m'):
//   l ← l · exp(m - m') + Σ_tile exp(s - m'),   o ← o · exp(m - m') + Σ_tile exp(s - m') · v
// and at the end out = o / l, lse = m + log l.
//
// The backward recomputes each tile's weights from lse, p = exp(s - lse), and
// with D[q] = Σ dout[q] ⊙ out[q] (= Σₖ p·dp, the softmax backward's dot):
//   dv[k] += p · dout[q]          dp = dout[q]·v[k]
//   ds    = p · (dp - D[q])       dq[q] += scale · ds · k[k]     dk[k] += scale · ds · q[q]
//
// Masks, as d2l's masked_softmax and PyTorch's is_causal give them: row q of
// head n sees the keys k < end, with
//   end = min(lens[n·Q + q] (when lens is given), q + 1 (when causal), K).
// Masked keys get weight 0 and no gradient. A row that sees no key (end = 0)
// gets uniform weights 1/K over all keys, as d2l's -1e6 gives it (and no
// gradient to q or k). NOTE: the plain path's weight for a masked key is
// exp(-1e6 - max), which is 0 in floats for any score above -1e6 + 104;
// here it is exactly 0, and the tiles of keys no row of a query tile sees are
// skipped, which is where the causal mask halves the work.
//
// Loop order (FlashAttention-2): the forward walks, for each tile of BR
// queries, the tiles of BC keys; the backward walks, for each tile of keys
// (its dk and dv kept in a tile-sized buffer), the tiles of queries,
// adding into dq. Threads: the forward's tasks are (head, query tile), the
// backward's whole heads; every output is computed by one task in one
// order, so the numbers do not depend on the thread count.
//
// Dropout on the weights (p > 0): weight (row, k) of row = n·Q + q is kept
// and scaled by 1/(1 - p), or dropped, by a hash of (seed, row, k)
// (dropout_keeps below), so the backward regenerates the forward's mask
// without storing it, and the mask does not depend on the tiles or threads.
// The sum l and lse are the undropped softmax's: out = Σ dropped(p)·v, and
// with D = Σ dout ⊙ out the backward is the one above with
//   dv[k] += dropped(p) · dout[q],   ds = p · (dropped(dp) - D).
//
// Left out on purpose: additive float masks, and masks other than a prefix
// of the keys per row.
#pragma once
#include <cstdint>

namespace qkv::kernels {

// The sizes and the mask of one call.
struct AttentionSizes {
  int64_t N = 0, Q = 0, K = 0, d = 0, dv = 0;  // heads, queries, keys, query/key size, value size
  float scale = 1.0f;                          // usually 1/√d
  const int64_t* lens = nullptr;               // N·Q valid lengths (row n·Q + q), or null: every key
  bool causal = false;                         // key k > query q masked
  float dropout = 0.0f;                        // p in [0, 1): the probability that a weight is dropped
  uint64_t seed = 0;                           // the dropout mask's
};

// Whether dropout with probability p keeps weight (row, key) under `seed`:
// a 32-bit hash of the three, uniform on [0, 2³²), at least p·2³².
bool dropout_keeps(uint64_t seed, int64_t row, int64_t key, float p);

// The tiles: BR queries meet BC keys at a time (docs/speed.md).
constexpr int64_t FLASH_BR = 64, FLASH_BC = 64;

// out (N, Q, dv) and lse (N, Q).
void flash_attention(const AttentionSizes& s, const float* q, const float* k, const float* v, float* out, float* lse);
// dq (N, Q, d), dk (N, K, d), dv (N, K, dv), written (not added to), from the
// forward's inputs, out, lse and dout (N, Q, dv).
void flash_attention_backward(const AttentionSizes& s, const float* q, const float* k, const float* v, const float* out,
                              const float* lse, const float* dout, float* dq, float* dk, float* dv);

// The plain loops that define them: one query row at a time, all its K
// scores in a row buffer, the softmax of that row, the output. (Memory O(K)
// per row, so linear in T too; the scalar build runs these.)
void flash_attention_reference(const AttentionSizes& s, const float* q, const float* k, const float* v, float* out,
                               float* lse);
void flash_attention_backward_reference(const AttentionSizes& s, const float* q, const float* k, const float* v,
                                        const float* out, const float* lse, const float* dout, float* dq, float* dk,
                                        float* dv);

}  // namespace qkv::kernels
