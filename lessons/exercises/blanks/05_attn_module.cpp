// Exercise 05 · the Attn module of document 000, completed
//
// Lesson 06 (lessons/06_attn_module.cpp); the notes: 000 3.3.注意力机制的实现步骤,
// 4.注意力机制的代码分析.
//
// The notes' Attn class stops at `def forward(self, Q, K, V):`. Complete it
// as §3.3 describes, with rule 1 of §2 (join Q and K, a Linear, a softmax):
//   step 1  weights = softmax(attn(cat(Q[0], K[0])), over dim 1)   (1, Dq+Dk) -> (1, V1)
//           applied = weights (as (1, 1, V1)) bmm V                (1, 1, V1) x (1, V1, Dv) -> (1, 1, Dv)
//   step 2  rule 1 joined Q and K, so join Q[0] with applied[0]     (1, Dq) ++ (1, Dv) -> (1, Dq+Dv), Q first
//   step 3  output = attn_combine(step 2), unsqueezed              (1, Dq+Dv) -> (1, 1, output_size)
// Q[0] is PyTorch's first batch element: the (1, D) matrix of Q (1, 1, D).
// The module (its two Linear layers, attn and attn_combine) is in
// 05_attn_module.hpp; you write its forward.
//
// Write Attn::forward below:
//   Q (1, 1, Dq), K (1, 1, Dk), V (1, V1, Dv) -> weights (1, V1), applied (1, 1, Dv), output (1, 1, output_size)
//
// Not allowed: nn::DotProductAttention, nn::AdditiveAttention (the grader checks
// what your file calls).
//
// Grade it: ./qkv.sh exercise 5        a hint: ./qkv.sh exercise 5 --hint
#include "05_attn_module.hpp"

namespace qkv::exercises {

AttnSteps Attn::forward(const Tensor& Q, const Tensor& K, const Tensor& V) const {
  not_written_yet("Attn::forward", Q, K, V);
}

}  // namespace qkv::exercises
