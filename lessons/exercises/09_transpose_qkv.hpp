// Exercise 09 · transpose_qkv and transpose_output of multi-head attention:
// the declarations the learner's file, its solution and the grader share.
#pragma once
#include "exercise.hpp"

namespace qkv::exercises {

// X (B, T, H), h heads -> (B·h, T, H/h): row b·h + i holds head i of example b,
// head i being features i·H/h … (i+1)·H/h - 1 of every position.
Tensor transpose_qkv(const Tensor& X, int64_t num_heads);
// The inverse: (B·h, T, H/h) -> (B, T, H), the heads side by side again.
Tensor transpose_output(const Tensor& X, int64_t num_heads);

}  // namespace qkv::exercises
