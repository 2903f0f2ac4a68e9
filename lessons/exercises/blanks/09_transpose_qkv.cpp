// Exercise 09 · transpose_qkv and transpose_output of multi-head attention
//
// Lesson 09 (lessons/09_multi_head_attention.cpp); the notes: 004 2.1 引言
// (多头注意力机制).
//
// Multi-head attention gives each of h heads its own H/h features of every
// position, and runs all heads at once as one batched attention: the heads
// move into the batch dim.
//   transpose_qkv:    (B, T, H) -> (B, T, h, H/h)      split each position's features into h blocks
//                               -> (B, h, T, H/h)      heads before positions
//                               -> (B·h, T, H/h)       row b·h + i is head i of example b
//   transpose_output: (B·h, T, H/h) -> (B, h, T, H/h) -> (B, T, h, H/h) -> (B, T, H)   the inverse
// Head i owns the consecutive features i·H/h … (i+1)·H/h - 1, as d2l's
// functions and qkv's nn::transpose_qkv split them.
//
// Write both below:
//   transpose_qkv(X (B, T, H), h) -> (B·h, T, H/h);  transpose_output(X (B·h, T, H/h), h) -> (B, T, H)
//
// Not allowed: nn::transpose_qkv, nn::transpose_output (the grader checks what your
// file calls).
//
// Grade it: ./qkv.sh exercise 9        a hint: ./qkv.sh exercise 9 --hint
#include "09_transpose_qkv.hpp"

namespace qkv::exercises {

Tensor transpose_qkv(const Tensor& X, int64_t num_heads) { not_written_yet("transpose_qkv", X, num_heads); }

Tensor transpose_output(const Tensor& X, int64_t num_heads) { not_written_yet("transpose_output", X, num_heads); }

}  // namespace qkv::exercises
