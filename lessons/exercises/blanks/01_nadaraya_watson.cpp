// Exercise 01 · Nadaraya–Watson weights and prediction
//
// Lesson 02 (lessons/02_nadaraya_watson.cpp); the notes: 001 注意力汇聚,
// 2、非参数注意力汇聚.
//
// Nadaraya–Watson kernel regression predicts f at a query x by averaging the
// training values yᵢ, each weighted by how close its key xᵢ is to x:
//   α(x, xᵢ) = K(x - xᵢ) / Σⱼ K(x - xⱼ),   K(u) = exp(-u²/2)   (a Gaussian kernel)
//            = softmax over the keys of -(x - xᵢ)²/2
//   f(x)     = Σᵢ α(x, xᵢ) yᵢ
//
// Write nadaraya_watson below with qkv's ops (the grader checks its gradients too):
//   queries (Q), keys (K), values (K) -> weights (Q, K), prediction (Q)
//
// Not allowed: qkv::nn's layers (the grader checks what your file calls).
//
// Grade it: ./qkv.sh exercise 1        a hint: ./qkv.sh exercise 1 --hint
#include "01_nadaraya_watson.hpp"

namespace qkv::exercises {

NadarayaWatson nadaraya_watson(const Tensor& queries, const Tensor& keys, const Tensor& values) {
  not_written_yet("nadaraya_watson", queries, keys, values);
}

}  // namespace qkv::exercises
